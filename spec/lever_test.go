package spec

import (
	"math"
	"slices"
	"testing"

	"shade/cost"
	"shade/internal/testutil"
	"shade/model"
	"shade/sample"
)

// toyCost is a cost model where a verify pass costs compute per row on
// every layer plus, for streamed layers, a read of io seconds paid once.
func toyCost(layers, streamed int, io, perRow, draft float64) *cost.Model {
	m := &cost.Model{
		Batches: []int{1, 64}, Layers: layers, LayerBytes: 1 << 20, DiskBps: float64(1<<20) / max(io, 1e-12),
		DraftPass:   []float64{draft, 4 * draft},
		TargetLayer: []float64{perRow, 64 * perRow},
		TargetHead:  []float64{perRow, 8 * perRow},
		Direct:      true, StreamedLayers: streamed,
	}
	if io == 0 {
		m.DiskBps = 0
	}
	return m
}

// aggressivePruner prunes every node whose lens share among its siblings
// and shadows is under about 0.6, as far as the safeguards allow.
func aggressivePruner(layer int) *Pruner {
	return &Pruner{Layer: layer, Version: pruneVersion, Mean: make([]float64, PruneFeatures), Std: []float64{1, 1, 1, 1, 1, 1},
		Weights: []float64{10, 0, 0, 0, 0, 0}, Bias: -5, Threshold: 0.7, MaxFrac: 0.9, MinKeep: 1}
}

func TestGainCostTreeSize(t *testing.T) {
	target := testutil.ConformanceModel(t, "stories260K.gguf")
	f16 := testutil.ConformanceModel(t, "stories260K-f16.gguf")
	L := target.Config.Layers
	cases := []struct {
		name       string
		cm         *cost.Model
		cap        int
		unbatched  bool
		minN, maxN int // bounds on the mean tree size
	}{
		// Verify rows are dear and reads free: only near-certain nodes pay.
		{"compute-bound", toyCost(L, 0, 0, 1e-3, 1e-3), 64, false, 0, 6},
		// Every layer streamed at 50 ms: rows are nearly free, trees grow.
		{"io-bound", toyCost(L, L, 50e-3, 1e-5, 1e-4), 64, false, 12, 64},
		{"io-bound, capped", toyCost(L, L, 50e-3, 1e-5, 1e-4), 10, false, 5, 10},
		{"io-bound, unbatched", toyCost(L, L, 50e-3, 1e-5, 1e-4), 64, true, 8, 64},
	}
	p := sample.Params{Temp: 0}
	for _, tc := range cases {
		dr, err := NewModelDrafter(f16, 256, p)
		if err != nil {
			t.Fatal(err)
		}
		ctx := slices.Clone(prompts[0])
		var sizes, passes []int
		for range 5 {
			var tr Tree
			if err := dr.DraftGainCost(ctx, GainCost{Cost: tc.cm, MaxNodes: tc.cap, Unbatched: tc.unbatched}, &tr); err != nil {
				t.Fatal(err)
			}
			if tr.Len() > tc.cap {
				t.Errorf("%s: tree of %d nodes over the cap %d", tc.name, tr.Len(), tc.cap)
			}
			for i, par := range tr.Parent {
				if par >= int32(i) {
					t.Fatalf("%s: node %d has parent %d (parents must come first)", tc.name, i, par)
				}
			}
			// Siblings come in rank order: the draft's probabilities fall.
			for par := int32(-1); par < int32(tr.Len()); par++ {
				kids := tr.Children(par, nil)
				for j := 1; j < len(kids); j++ {
					if dr.NodeProb(kids[j]) > dr.NodeProb(kids[j-1]) {
						t.Errorf("%s: siblings out of rank order", tc.name)
					}
				}
			}
			sizes = append(sizes, tr.Len())
			passes = append(passes, dr.DraftPasses())
			if err := dr.Accepted(ctx, &tr, nil); err != nil {
				t.Fatal(err)
			}
			ctx = append(ctx, 300)
		}
		mean := 0
		for _, s := range sizes {
			mean += s
		}
		mean /= len(sizes)
		if mean < tc.minN || mean > tc.maxN {
			t.Errorf("%s: mean tree size %d (sizes %v), want in [%d, %d]", tc.name, mean, sizes, tc.minN, tc.maxN)
		}
		t.Logf("%s: sizes %v, draft passes %v", tc.name, sizes, passes)
	}
}

func TestLeverGreedyLossless(t *testing.T) {
	target := testutil.ConformanceModel(t, "stories260K.gguf")
	drafts := map[string]*model.Model{
		"self":   target,
		"f16":    testutil.ConformanceModel(t, "stories260K-f16.gguf"),
		"random": randomDraft(t),
	}
	L := target.Config.Layers
	io := toyCost(L, L, 20e-3, 1e-5, 1e-4)
	full := Config{Mode: Lever, Cost: io, Pruner: aggressivePruner(DefaultPruneLayer(L)), PreDraft: true}
	configs := map[string]Config{"full": full}
	for _, off := range []string{"gain-cost", "prune", "lazy-head", "batch-draft", "pre-draft"} {
		c := full
		switch off {
		case "pre-draft":
			c.PreDraft = false
		case "gain-cost":
			c.NoGainCost = true
		case "prune":
			c.NoPrune = true
		case "lazy-head":
			c.NoLazyHead = true
		case "batch-draft":
			c.NoBatchDraft = true
		}
		configs["no "+off] = c
	}
	c := full
	c.RowByRowHead = true
	configs["row-by-row head"] = c
	c = full
	c.Cost = toyCost(L, 0, 0, 1e-3, 1e-4)
	configs["compute-bound"] = c
	greedy := sample.Params{Temp: 0}
	var pruned, lost, preHits int
	for pi, prompt := range prompts {
		want, _ := generate(t, target, nil, Config{Mode: Off}, greedy, prompt, 60)
		for dname, draft := range drafts {
			for cname, cfg := range configs {
				got, st := generate(t, target, draft, cfg, greedy, prompt, 60)
				if !slices.Equal(got, want) {
					t.Errorf("prompt %d, draft %s, %s: output differs from plain greedy\n got %v\nwant %v", pi, dname, cname, got, want)
				}
				pruned += st.Pruned
				lost += st.PrunedLost
				// Pre-drafting needs streamed layers and gain-cost trees.
				if st.PreDrafts > 0 && (!cfg.PreDraft || cfg.NoGainCost || cname == "compute-bound") {
					t.Errorf("%s: %d pre-drafts", cname, st.PreDrafts)
				}
				if st.PreDraftHits > st.PreDrafts {
					t.Errorf("%s: %d of %d pre-drafts used", cname, st.PreDraftHits, st.PreDrafts)
				}
				// A self-draft's guess is always right, and a confirmed
				// pre-draft runs out however the goroutines were scheduled:
				// every one is used, unless its tree came out empty (the
				// gain-cost tree follows costs learned from timings, so on
				// a loaded machine it may find no node worth a row).
				if dname == "self" && cname == "full" {
					preHits += st.PreDraftHits
					if st.PreDraftHits+st.PreDraftsEmpty != st.PreDrafts {
						t.Errorf("prompt %d, self-draft: %d of %d pre-drafted trees used, %d empty", pi, st.PreDraftHits, st.PreDrafts, st.PreDraftsEmpty)
					}
				}
				if cfg.NoPrune && st.Pruned > 0 {
					t.Errorf("%s: %d rows pruned with pruning off", cname, st.Pruned)
				}
				// Streamed layers make big trees pay: a self-draft goes deep.
				if dname == "self" && !cfg.NoGainCost && cname != "compute-bound" && st.MeanAccepted() < 2 {
					t.Errorf("%s, self-draft: %.2f accepted per step", cname, st.MeanAccepted())
				}
			}
		}
	}
	if pruned == 0 {
		t.Error("the aggressive predictor never pruned: pruning untested")
	}
	if preHits == 0 {
		t.Error("a self-draft never had its pre-drafted tree used: pre-drafting untested")
	}
	t.Logf("pruned %d rows, %d of which the target would have kept", pruned, lost)
}

// TestLeverStochasticLossless: the first token under speculative sampling
// with gain-cost trees and aggressive pruning is distributed as the
// target's own.
func TestLeverStochasticLossless(t *testing.T) {
	if testing.Short() {
		t.Skip("thousands of samples: skipped with -short")
	}
	target := testutil.ConformanceModel(t, "stories260K.gguf")
	f16 := testutil.ConformanceModel(t, "stories260K-f16.gguf")
	random := randomDraft(t)
	L := target.Config.Layers
	p := sample.Params{Temp: 1.5, Seed: 43}
	prompt := prompts[0]
	want := firstTokenDistribution(t, target, p, prompt)
	const n = 1500
	cfg := Config{Mode: Lever, Cost: toyCost(L, L, 20e-3, 1e-5, 1e-4), Pruner: aggressivePruner(DefaultPruneLayer(L)), MaxNodes: 12}
	for name, draft := range map[string]*model.Model{"random": random, "close": f16} {
		counts, st := firstTokenCounts(t, target, draft, cfg, p, prompt, n)
		chi2, df := chiSquare(counts, want, n)
		if limit := chiSquareCritical(df); chi2 > limit {
			t.Errorf("%s draft: chi-square %.1f over %d degrees of freedom exceeds %.1f (p = 0.001)", name, chi2, df, limit)
		}
		if st.Pruned == 0 {
			t.Errorf("%s draft: nothing pruned", name)
		}
	}
}

func TestTrainPruner(t *testing.T) {
	target := testutil.ConformanceModel(t, "stories260K.gguf")
	f16 := testutil.ConformanceModel(t, "stories260K-f16.gguf")
	L := target.Config.Layers
	var samples []PruneSample
	step := 0
	cfg := Config{Mode: Lever, Cost: toyCost(L, L, 20e-3, 1e-5, 1e-4), NoPrune: true,
		PruneTrace: func(s []PruneSample) {
			step++
			for _, x := range s {
				x.Step = step
				samples = append(samples, x)
			}
		}}
	for _, prompt := range prompts {
		generate(t, target, f16, cfg, sample.Params{Temp: 0}, prompt, 80)
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

// TestDepthFactorCarriesDown: depths no tree has reached yet take the
// correction of the deepest depth that has evidence, not a neutral 1 that
// would stop trees where they are.
func TestDepthFactorCarriesDown(t *testing.T) {
	var st RankStats
	if f := st.depthFactor(5); f != 1 {
		t.Fatalf("no evidence: factor %v, want 1", f)
	}
	// Depths 1–6 drafted: the per-node estimates said 0.5 at depth 6, and
	// twice as many were accepted as estimated.
	for d := 1; d <= 6; d++ {
		st.depthPred[d] = 10 * math.Pow(0.8, float64(d))
		st.depthAcc[d] = 2 * st.depthPred[d]
	}
	want := (st.depthAcc[6] + 2) / (st.depthPred[6] + 2)
	for _, d := range []int{6, 7, 12, maxDepthStats + 5} {
		if f := st.depthFactor(d); math.Abs(f-want) > 1e-12 {
			t.Errorf("depth %d: factor %v, want depth 6's %v", d, f, want)
		}
	}
	// Evidence of its own wins once a depth has it.
	st.depthPred[9], st.depthAcc[9] = 4, 4
	if f := st.depthFactor(9); f != 1 {
		t.Errorf("depth 9 with evidence: factor %v, want 1", f)
	}
	if f := st.depthFactor(8); math.Abs(f-want) > 1e-12 {
		t.Errorf("depth 8 between: factor %v, want depth 6's %v", f, want)
	}
}

// TestTileSteps: verify passes timed by how many kernel tiles their rows
// took give what one more tile costs, once both sizes were seen.
func TestTileSteps(t *testing.T) {
	var lv leverState
	if steps := lv.tileSteps(); steps[0] != 0 {
		t.Fatalf("nothing seen: steps %v", steps)
	}
	for range 3 {
		lv.noteTiles(9, 0.7)  // one tile
		lv.noteTiles(16, 0.7) // one tile, full
		lv.noteTiles(17, 1.0) // two tiles
	}
	steps := lv.tileSteps()
	if math.Abs(steps[0]-0.3) > 1e-9 || steps[1] != 0 {
		t.Fatalf("steps %v, want [0.3 0 …]", steps)
	}
	// A pass of more tiles than are kept is not counted.
	lv.noteTiles(1000, 5)
	if got := lv.tileSteps(); math.Abs(got[0]-0.3) > 1e-9 {
		t.Fatalf("an oversized pass moved the steps: %v", got)
	}
}
