package flash

import (
	"path/filepath"
	"slices"
	"testing"

	"shade/internal/testutil"
	"shade/model"
	"shade/sample"
	"shade/speculate"
	"shade/synth"
)

var toyCost = testutil.ToyCost

var prompts = [][]int32{
	{1, 403, 407, 261, 378},           // "Once upon a time"
	{1, 403, 407, 261, 378, 432, 383}, // … longer
	{1, 297, 285, 400},
}

// randomDraft is a tiny random-weight model with stories260K's vocabulary:
// a draft that is almost always wrong.
func randomDraft(t testing.TB) *model.Model {
	t.Helper()
	path := filepath.Join(t.TempDir(), "demo.gguf")
	if err := synth.WriteDemo(path); err != nil {
		t.Fatal(err)
	}
	return testutil.OpenModel(t, path)
}

// aggressivePruner prunes every node whose lens share among its siblings
// and shadows is under about 0.6, as far as the safeguards allow.
func aggressivePruner(layer int) *Pruner {
	return &Pruner{Layer: layer, Version: pruneVersion, Mean: make([]float64, PruneFeatures), Std: []float64{1, 1, 1, 1, 1, 1},
		Weights: []float64{10, 0, 0, 0, 0, 0}, Bias: -5, Threshold: 0.7, MaxFrac: 0.9, MinKeep: 1}
}

// decoder is a decoder over target, with draft (nil: none) and, in flash
// mode, the strategy su makes.
func decoder(t testing.TB, target, draft *model.Model, cfg speculate.Config, su *Setup, p sample.Params, ctx int) *speculate.Decoder {
	t.Helper()
	st, err := target.NewState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sm, err := sample.New(p)
	if err != nil {
		t.Fatal(err)
	}
	var dr *speculate.ModelDrafter
	if draft != nil {
		if dr, err = speculate.NewModelDrafter(draft, ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if su != nil {
		cfg.Mode, cfg.Deps.Flash = speculate.ModeFlash, su
	}
	d, err := speculate.NewDecoder(st, sm, dr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func generate(t testing.TB, target, draft *model.Model, cfg speculate.Config, su *Setup, p sample.Params, prompt []int32, n int) ([]int32, speculate.Stats) {
	t.Helper()
	d := decoder(t, target, draft, cfg, su, p, 256)
	return testutil.Decode(t, d, prompt, n), d.Stats()
}

// flashCase is a flash-mode configuration under test.
type flashCase struct {
	cfg speculate.Config
	su  Setup
}

func TestFlashGreedyLossless(t *testing.T) {
	target := testutil.ConformanceModel(t, "stories260K.gguf")
	drafts := map[string]*model.Model{
		"self":   target,
		"f16":    testutil.ConformanceModel(t, "stories260K-f16.gguf"),
		"random": randomDraft(t),
	}
	L := target.Config.Layers
	io := toyCost(L, L, 20e-3, 1e-5, 1e-4)
	full := flashCase{su: Setup{Cost: io, Pruner: aggressivePruner(DefaultPruneLayer(L))}}
	configs := map[string]flashCase{"full": full}
	for _, off := range []string{"gain-cost", "prune", "lazy-head", "batch-draft"} {
		c := full
		switch off {
		case "gain-cost":
			c.cfg.Ablation.NoGainCost = true
		case "prune":
			c.cfg.Ablation.NoPrune = true
		case "lazy-head":
			c.cfg.Ablation.NoLazyHead = true
		case "batch-draft":
			c.cfg.Ablation.NoBatchDraft = true
		}
		configs["no "+off] = c
	}
	c := full
	c.cfg.RowByRowHead = true
	configs["row-by-row head"] = c
	c = full
	c.su.Cost = toyCost(L, 0, 0, 1e-3, 1e-4)
	configs["compute-bound"] = c
	greedy := sample.Params{Temp: 0}
	var pruned, lost int
	for pi, prompt := range prompts {
		want, _ := generate(t, target, nil, speculate.Config{}, nil, greedy, prompt, 60)
		for dname, draft := range drafts {
			for cname, fc := range configs {
				cfg := fc.cfg
				got, st := generate(t, target, draft, cfg, &fc.su, greedy, prompt, 60)
				if !slices.Equal(got, want) {
					t.Errorf("prompt %d, draft %s, %s: output differs from plain greedy\n got %v\nwant %v", pi, dname, cname, got, want)
				}
				pruned += st.Pruned
				lost += st.PrunedLost
				if cfg.Ablation.NoPrune && st.Pruned > 0 {
					t.Errorf("%s: %d rows pruned with pruning off", cname, st.Pruned)
				}
				// Streamed layers make big trees pay: a self-draft goes deep.
				if dname == "self" && !cfg.Ablation.NoGainCost && cname != "compute-bound" && st.MeanAccepted() < 2 {
					t.Errorf("%s, self-draft: %.2f accepted per step", cname, st.MeanAccepted())
				}
			}
		}
	}
	if pruned == 0 {
		t.Error("the aggressive predictor never pruned: pruning untested")
	}
	t.Logf("pruned %d rows, %d of which the target would have kept", pruned, lost)
}

// TestFlashStochasticLossless: the first token under speculative sampling
// with gain-cost trees and aggressive pruning is distributed as the
// target's own.
func TestFlashStochasticLossless(t *testing.T) {
	if testing.Short() {
		t.Skip("thousands of samples: skipped with -short")
	}
	target := testutil.ConformanceModel(t, "stories260K.gguf")
	f16 := testutil.ConformanceModel(t, "stories260K-f16.gguf")
	random := randomDraft(t)
	L := target.Config.Layers
	p := sample.Params{Temp: 1.5, Seed: 43}
	prompt := prompts[0]
	want := testutil.FirstTokenDistribution(t, target, p, prompt)
	const n = 1500
	// Fixed: tree shapes, and so which random numbers each sample takes,
	// do not follow the machine's timings, so the statistic is the same
	// on every run (speculate.TestDrawChoiceLossless holds the shapes
	// that draws choose to the same test).
	su := &Setup{Cost: toyCost(L, L, 20e-3, 1e-5, 1e-4), Pruner: aggressivePruner(DefaultPruneLayer(L)), Fixed: true}
	cases := []struct {
		name  string
		draft *model.Model
		fresh bool // a new decoder (a request, seeded apart) per sample
	}{{"random", random, false}, {"close", f16, false}, {"close, a request per sample,", f16, true}}
	for _, tc := range cases {
		var counts []float64
		var st speculate.Stats
		if tc.fresh {
			// Each request's drafter starts knowing nothing of its
			// acceptance, so its first tree is shaped by the draft's
			// probabilities of the tokens drawn: where a tree's shape
			// follows what was drawn, the first token shows it.
			counts = make([]float64, target.Config.Vocab)
			for i := range n {
				q := p
				q.Seed = 1000 + uint64(i)
				d := decoder(t, target, tc.draft, speculate.Config{MaxNodes: 12}, su, q, 64)
				c := testutil.FirstTokenCounts(t, d, prompt, 1, target.Config.Vocab)
				for j, x := range c {
					counts[j] += x
				}
				dst := d.Stats()
				st.Add(&dst)
			}
		} else {
			d := decoder(t, target, tc.draft, speculate.Config{MaxNodes: 12}, su, p, 64)
			counts = testutil.FirstTokenCounts(t, d, prompt, n, target.Config.Vocab)
			st = d.Stats()
		}
		chi2, df := testutil.ChiSquare(counts, want, n)
		if limit := testutil.ChiSquareCritical(df); chi2 > limit {
			t.Errorf("%s draft: chi-square %.1f over %d degrees of freedom exceeds %.1f (p = 0.001)", tc.name, chi2, df, limit)
		} else {
			t.Logf("%s draft: chi-square %.1f, df %d, limit %.1f; %d pruned", tc.name, chi2, df, limit, st.Pruned)
		}
		if st.Pruned == 0 {
			t.Errorf("%s draft: nothing pruned", tc.name)
		}
	}
}

func TestTrainPruner(t *testing.T) {
	target := testutil.ConformanceModel(t, "stories260K.gguf")
	f16 := testutil.ConformanceModel(t, "stories260K-f16.gguf")
	L := target.Config.Layers
	var samples []PruneSample
	step := 0
	su := &Setup{Cost: toyCost(L, L, 20e-3, 1e-5, 1e-4),
		Trace: func(s []PruneSample) {
			step++
			for _, x := range s {
				x.Step = step
				samples = append(samples, x)
			}
		}}
	for _, prompt := range prompts {
		generate(t, target, f16, speculate.Config{Ablation: speculate.Ablation{NoPrune: true}}, su, sample.Params{Temp: 0}, prompt, 80)
	}
	if len(samples) < 50 {
		t.Fatalf("only %d samples from the trace", len(samples))
	}
	p, rep, err := TrainPruner(samples, TrainOptions{Layer: DefaultPruneLayer(L), Layers: L})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d samples: %+v; weights %v", len(samples), rep, p.Weights)
	if rep.Train+rep.Test != len(samples) || rep.Test == 0 {
		t.Errorf("split %d + %d of %d samples", rep.Train, rep.Test, len(samples))
	}
	// The logit lens of a target that is its draft's near twin predicts
	// acceptance well: most held-out survivors are kept.
	if rep.Recall < 0.8 {
		t.Errorf("held-out recall %.2f", rep.Recall)
	}
	if rep.Precision <= rep.Positives {
		t.Errorf("precision %.2f no better than the base rate %.2f", rep.Precision, rep.Positives)
	}
	if _, _, err := TrainPruner(samples[:10], TrainOptions{Layer: 1, Layers: L}); err == nil {
		t.Error("10 samples accepted")
	}
	bad := *p
	bad.Weights = bad.Weights[:2]
	if bad.Validate(L) == nil {
		t.Error("a predictor with too few weights validated")
	}
	bad = *p
	bad.Layer = L
	if bad.Validate(L) == nil {
		t.Error("a prune layer past the last accepted")
	}
}
