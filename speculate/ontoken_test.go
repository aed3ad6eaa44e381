package speculate

import (
	"math"
	"os"
	"slices"
	"testing"

	"shade/internal/testutil"
	"shade/model"
	"shade/sample"
)

// seen is what OnToken reported of a generation.
type seen struct {
	tokens []int32
	logits [][]float32
}

func generateSeen(t *testing.T, target, draft *model.Model, cfg Config, p sample.Params, prompt []int32, n int) ([]int32, seen) {
	t.Helper()
	st, err := target.NewState(256)
	if err != nil {
		t.Fatal(err)
	}
	sm, _ := sample.New(p)
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
	var s seen
	d.OnToken(func(l []float32, tok int32) {
		s.tokens = append(s.tokens, tok)
		s.logits = append(s.logits, slices.Clone(l))
	})
	return testutil.Decode(t, d, prompt, n), s
}

// maxDiff is the largest absolute difference of two rows.
func maxDiff(a, b []float32) float64 {
	m := 0.0
	for i := range a {
		m = math.Max(m, math.Abs(float64(a[i]-b[i])))
	}
	return m
}

// TestOnTokenIsTheTargetsRow: OnToken reports every produced token, in
// order, with the logits a direct forward pass over the text so far
// computes, whichever strategy drafted, pruned or chose the head rows.
func TestOnTokenIsTheTargetsRow(t *testing.T) {
	target := testutil.ConformanceModel(t, "stories260K.gguf")
	f16 := testutil.ConformanceModel(t, "stories260K-f16.gguf")
	greedy := sample.Params{Temp: 0}
	prompt := prompts[0]
	const n = 40
	plain, ref := generateSeen(t, target, nil, Config{}, greedy, prompt, n)
	// The direct forward pass of each prefix.
	vocab := target.Config.Vocab
	direct := make([][]float32, len(plain))
	for i := range plain {
		st, _ := target.NewState(256)
		text := append(slices.Clone(prompt), plain[:i]...)
		if err := st.Forward(model.Chain(text)); err != nil {
			t.Fatal(err)
		}
		direct[i] = make([]float32, vocab)
		if err := st.Logits([]int{len(text) - 1}, direct[i]); err != nil {
			t.Fatal(err)
		}
	}
	configs := []struct {
		name  string
		draft *model.Model
		cfg   Config
	}{
		{"off", nil, Config{}},
		{"chain", f16, Config{Mode: ModeChain, DraftMax: 5}},
		{"tree", f16, Config{Mode: ModeTree, DraftMax: 8, TreeWidth: 3, TreeDepth: 3}},
		{"ngram", nil, Config{Mode: ModeNgram, DraftMax: 6}},
		{"pruned, random head rows", f16, Config{Mode: ModeFlash, Deps: Deps{Flash: &meddlerMaker{}}}},
	}
	for _, c := range configs {
		out, s := generateSeen(t, target, c.draft, c.cfg, greedy, prompt, n)
		if !slices.Equal(out, plain) {
			t.Fatalf("%s: output differs from plain greedy", c.name)
		}
		if len(s.tokens) < len(out) || !slices.Equal(s.tokens[:len(out)], out) {
			t.Fatalf("%s: OnToken saw %v, the decoder produced %v", c.name, s.tokens, out)
		}
		worst, worstRef := 0.0, 0.0
		for i := range out {
			worst = math.Max(worst, maxDiff(s.logits[i], direct[i]))
			worstRef = math.Max(worstRef, maxDiff(s.logits[i], ref.logits[i]))
		}
		// A verify pass computes a row with the other rows of its batch;
		// the kernels may round differently than over one row, never more.
		if worst > 1e-3 || worstRef > 1e-3 {
			t.Errorf("%s: logits differ from a direct forward pass by %g, from plain decoding by %g", c.name, worst, worstRef)
		}
		t.Logf("%s: largest difference %g from the direct pass, %g from plain decoding", c.name, worst, worstRef)
	}
}

// TestStochasticLosslessPenalized is TestStochasticLossless with the
// processors that depend on the history (repetition, frequency and
// presence penalties) and a logit bias: verification samples from the
// same processed distribution the plain sampler draws from.
func TestStochasticLosslessPenalized(t *testing.T) {
	if testing.Short() {
		t.Skip("thousands of samples: skipped with -short")
	}
	target := testutil.ConformanceModel(t, "stories260K.gguf")
	random := randomDraft(t)
	prompt := []int32{1, 403, 407, 261, 378, 403, 407, 261} // repeats, so the penalties bite
	p := sample.Params{Temp: 1.2, Seed: 9, RepeatPenalty: 1.3, FrequencyPenalty: 0.8, PresencePenalty: 1.5,
		LogitBias: map[int32]float32{432: 3, 383: -2}, TopK: 60}
	// The plain distribution, after the same history.
	ref, _ := sample.New(p)
	for _, tok := range prompt {
		ref.Accept(tok)
	}
	st, _ := target.NewState(64)
	st.Forward(model.Chain(prompt))
	logits := make([]float32, target.Config.Vocab)
	st.Logits([]int{len(prompt) - 1}, logits)
	want := make([]float64, target.Config.Vocab)
	for _, c := range ref.Distribution(logits) {
		want[c.ID] = float64(c.P)
	}
	// 1000 draws by default (a few seconds); SHADE_LOSSLESS_LONG=1 takes
	// 4000, for a test that sees smaller deviations.
	n := 1000
	if os.Getenv("SHADE_LOSSLESS_LONG") != "" {
		n = 4000
	}
	for _, cfg := range []Config{{Mode: ModeTree, DraftMax: 6, TreeWidth: 3, TreeDepth: 2}} {
		smp, _ := sample.New(p)
		dr, _ := NewModelDrafter(random, 64, p)
		tst, _ := target.NewState(64)
		d, err := NewDecoder(tst, smp, dr, cfg)
		if err != nil {
			t.Fatal(err)
		}
		counts := make([]float64, target.Config.Vocab)
		for range n {
			smp.Reset()
			for _, tok := range prompt {
				smp.Accept(tok)
			}
			if err := d.Start(prompt); err != nil {
				t.Fatal(err)
			}
			out, err := d.Step(nil)
			if err != nil {
				t.Fatal(err)
			}
			counts[out[0]]++
		}
		chi2, df := testutil.ChiSquare(counts, want, n)
		if limit := testutil.ChiSquareCritical(df); chi2 > limit {
			t.Errorf("%v: chi-square %.1f over %d degrees of freedom exceeds %.1f (p = 0.001)", cfg.Mode, chi2, df, limit)
		} else {
			t.Logf("%v: chi-square %.1f, df %d, limit %.1f", cfg.Mode, chi2, df, limit)
		}
	}
}

// TestGreedyLosslessWithAllPenalties: the frequency and presence
// penalties count tokens along the accepted path, as the repetition
// penalty does.
func TestGreedyLosslessWithAllPenalties(t *testing.T) {
	target := testutil.ConformanceModel(t, "stories260K.gguf")
	p := sample.Params{Temp: 0, FrequencyPenalty: 0.7, PresencePenalty: 0.5, RepeatLastN: 24, LogitBias: map[int32]float32{261: -5}}
	want, _ := generate(t, target, nil, Config{Mode: ModeOff}, p, prompts[0], 50)
	plain, _ := generate(t, target, nil, Config{Mode: ModeOff}, sample.Params{}, prompts[0], 50)
	if slices.Equal(want, plain) {
		t.Fatal("the penalties changed nothing: the test would not see them ignored")
	}
	for _, cfg := range []Config{{Mode: ModeChain, DraftMax: 5}, {Mode: ModeTree, DraftMax: 8, TreeWidth: 2}, {Mode: ModeNgram, DraftMax: 4}} {
		got, _ := generate(t, target, target, cfg, p, prompts[0], 50)
		if !slices.Equal(got, want) {
			t.Errorf("%v: penalized output differs\n got %v\nwant %v", cfg.Mode, got, want)
		}
	}
}
