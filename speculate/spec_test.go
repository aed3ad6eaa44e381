package speculate

import (
	"path/filepath"
	"slices"
	"testing"

	"shade/internal/testutil"
	"shade/model"
	"shade/sample"
	"shade/synth"
)

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

var prompts = [][]int32{
	{1, 403, 407, 261, 378},           // "Once upon a time"
	{1, 403, 407, 261, 378, 432, 383}, // … longer
	{1, 297, 285, 400},
}

func generate(t testing.TB, target *model.Model, draft *model.Model, cfg Config, p sample.Params, prompt []int32, n int) ([]int32, Stats) {
	t.Helper()
	st, err := target.NewState(256)
	if err != nil {
		t.Fatal(err)
	}
	sm, err := sample.New(p)
	if err != nil {
		t.Fatal(err)
	}
	var dr *ModelDrafter
	if draft != nil {
		if dr, err = NewModelDrafter(draft, 256, p); err != nil {
			t.Fatal(err)
		}
	}
	d, err := NewDecoder(st, sm, dr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return testutil.Decode(t, d, prompt, n), d.Stats()
}

func TestGreedyLossless(t *testing.T) {
	target := testutil.ConformanceModel(t, "stories260K.gguf")
	drafts := map[string]*model.Model{
		"self":   target,
		"f16":    testutil.ConformanceModel(t, "stories260K-f16.gguf"),
		"random": randomDraft(t),
	}
	configs := []Config{
		{Mode: ModeChain, DraftMax: 4},
		{Mode: ModeChain, DraftMax: 9},
		{Mode: ModeTree, DraftMax: 8, TreeWidth: 3, TreeDepth: 4},
		{Mode: ModeTree, DraftMax: 12, TreeWidth: 4, TreeDepth: 3},
		{Mode: ModeTree, DraftMax: 8, TreeWidth: 2, RowByRowHead: true},
		{Mode: ModeNgram, DraftMax: 6},
		{Mode: ModeAuto, DraftMax: 6},
	}
	greedy := sample.Params{Temp: 0}
	for pi, prompt := range prompts {
		want, _ := generate(t, target, nil, Config{Mode: ModeOff}, greedy, prompt, 60)
		for name, draft := range drafts {
			for _, cfg := range configs {
				if cfg.Mode == ModeNgram && name != "self" {
					continue
				}
				got, st := generate(t, target, draft, cfg, greedy, prompt, 60)
				if !slices.Equal(got, want) {
					t.Errorf("prompt %d, draft %s, %+v: output differs from plain greedy\n got %v\nwant %v", pi, name, cfg, got, want)
				}
				// A draft identical to the target is always right: a chain is
				// accepted whole, a tree along one full branch.
				if name == "self" && cfg.Mode == ModeChain && st.AcceptanceRate() < 0.95 {
					t.Errorf("self-draft chain acceptance %.2f", st.AcceptanceRate())
				}
				if name == "self" && cfg.Mode == ModeTree && st.MeanAccepted() < 2 {
					t.Errorf("self-draft tree: %.2f accepted per step", st.MeanAccepted())
				}
			}
		}
	}
}

// TestGreedyLosslessWithPenalty: the repetition penalty depends on the
// history along the accepted path; speculation must track it exactly.
func TestGreedyLosslessWithPenalty(t *testing.T) {
	target := testutil.ConformanceModel(t, "stories260K.gguf")
	p := sample.Params{Temp: 0, RepeatPenalty: 1.3, RepeatLastN: 16}
	want, _ := generate(t, target, nil, Config{Mode: ModeOff}, p, prompts[0], 50)
	for _, cfg := range []Config{{Mode: ModeChain, DraftMax: 5}, {Mode: ModeTree, DraftMax: 8, TreeWidth: 2}} {
		got, _ := generate(t, target, target, cfg, p, prompts[0], 50)
		if !slices.Equal(got, want) {
			t.Errorf("%v: penalized output differs\n got %v\nwant %v", cfg.Mode, got, want)
		}
	}
}

// TestStochasticLossless compares the distribution of the first generated
// token under speculative sampling with the target's own distribution, by a
// chi-square test over thousands of fixed-seed samples.
func TestStochasticLossless(t *testing.T) {
	if testing.Short() {
		t.Skip("thousands of samples: skipped with -short")
	}
	target := testutil.ConformanceModel(t, "stories260K.gguf")
	random := randomDraft(t)
	f16 := testutil.ConformanceModel(t, "stories260K-f16.gguf")
	p := sample.Params{Temp: 1.5, Seed: 42}
	prompt := prompts[0]

	want := testutil.FirstTokenDistribution(t, target, p, prompt)

	const n = 4000
	cases := []struct {
		name  string
		draft *model.Model
		cfg   Config
	}{
		{"chain/random draft", random, Config{Mode: ModeChain, DraftMax: 3}},
		{"tree/random draft", random, Config{Mode: ModeTree, DraftMax: 6, TreeWidth: 3, TreeDepth: 2}},
		{"tree/close draft", f16, Config{Mode: ModeTree, DraftMax: 6, TreeWidth: 3, TreeDepth: 2}},
	}
	for _, tc := range cases {
		counts, _ := firstTokenCounts(t, target, tc.draft, tc.cfg, p, prompt, n)
		chi2, df := testutil.ChiSquare(counts, want, n)
		if limit := testutil.ChiSquareCritical(df); chi2 > limit {
			t.Errorf("%s: chi-square %.1f over %d degrees of freedom exceeds %.1f (p = 0.001)", tc.name, chi2, df, limit)
		} else {
			t.Logf("%s: chi-square %.1f, df %d, limit %.1f", tc.name, chi2, df, limit)
		}
	}
}

func firstTokenCounts(t *testing.T, target, draft *model.Model, cfg Config, p sample.Params, prompt []int32, n int) ([]float64, Stats) {
	t.Helper()
	smp, _ := sample.New(p)
	dr, err := NewModelDrafter(draft, 64, p)
	if err != nil {
		t.Fatal(err)
	}
	tst, _ := target.NewState(64)
	d, err := NewDecoder(tst, smp, dr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return testutil.FirstTokenCounts(t, d, prompt, n, target.Config.Vocab), d.Stats()
}

// TestRollbackMatchesFreshRun: after speculative steps with random
// accept/reject patterns, the target's KV cache equals that of a fresh run
// over the same tokens.
func TestRollbackMatchesFreshRun(t *testing.T) {
	target := testutil.ConformanceModel(t, "stories260K.gguf")
	f16 := testutil.ConformanceModel(t, "stories260K-f16.gguf")
	p := sample.Params{Temp: 1, Seed: 7}
	st, _ := target.NewState(256)
	sm, _ := sample.New(p)
	dr, _ := NewModelDrafter(f16, 256, p)
	d, _ := NewDecoder(st, sm, dr, Config{Mode: ModeTree, DraftMax: 8, TreeWidth: 3, TreeDepth: 3})
	d.Start(prompts[0])
	var out []int32
	for len(out) < 80 {
		out, _ = d.Step(out)
	}
	if s := d.Stats(); s.Accepted == 0 || s.Accepted == s.Drafted {
		t.Fatalf("want a mix of accepts and rejects, got %d of %d", s.Accepted, s.Drafted)
	}
	fresh, _ := target.NewState(256)
	all := append(slices.Clone(prompts[0]), out[:len(out)-1]...) // the last token is pending
	fresh.Forward(model.Chain(all))
	fresh.CommitAll()
	if st.Len() != fresh.Len() {
		t.Fatalf("cache holds %d tokens, fresh run %d", st.Len(), fresh.Len())
	}
	for l := 0; l < target.Config.Layers; l++ {
		for slot := 0; slot < st.Len(); slot++ {
			if !slices.Equal(st.Cache.K(l, slot), fresh.Cache.K(l, slot)) || !slices.Equal(st.Cache.V(l, slot), fresh.Cache.V(l, slot)) {
				t.Fatalf("layer %d slot %d differs from a fresh run", l, slot)
			}
		}
	}
}

func TestNgram(t *testing.T) {
	g := NewNgram(2, 3)
	var tr Tree
	ctx := []int32{1, 2, 3, 4, 5, 9, 2, 3}
	if n := g.Propose(ctx, 3, &tr); n != 3 || !slices.Equal(tr.Tokens, []int32{4, 5, 9}) || !slices.Equal(tr.Parent, []int32{-1, 0, 1}) {
		t.Fatalf("proposal %v (parents %v), want [4 5 9] as a chain", tr.Tokens, tr.Parent)
	}
	// The longest match wins: "9 2 3" occurred before → what followed it.
	tr.Reset()
	ctx = append(ctx, 7, 9, 2, 3)
	if n := g.Propose(ctx, 2, &tr); n != 2 || !slices.Equal(tr.Tokens, []int32{7, 9}) {
		t.Fatalf("proposal %v, want [7 9]", tr.Tokens)
	}
	tr.Reset()
	if n := g.Propose([]int32{5, 6, 7, 8}, 4, &tr); n != 0 {
		t.Fatalf("a context with no repeat proposed %v", tr.Tokens)
	}
	// A context that is not a continuation re-indexes.
	tr.Reset()
	if n := g.Propose([]int32{8, 8, 1, 8, 8}, 4, &tr); n == 0 || tr.Tokens[0] != 1 {
		t.Fatalf("after a new context: %v", tr.Tokens)
	}
}

func TestParseMode(t *testing.T) {
	for _, s := range []string{"off", "chain", "tree", "ngram", "auto"} {
		m, err := ParseMode(s)
		if err != nil || m.String() != s {
			t.Errorf("%s: %v %v", s, m, err)
		}
	}
	if _, err := ParseMode("fast"); err == nil {
		t.Error("unknown mode accepted")
	}
}
