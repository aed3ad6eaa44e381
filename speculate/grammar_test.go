package speculate

import (
	"testing"

	"shade/gguf"
	"shade/grammar"
	"shade/internal/testutil"
	"shade/model"
	"shade/sample"
	"shade/tokenizer"
)

// TestGrammarStochasticLossless: under a grammar, the first token of
// speculative sampling (drafts masked by the grammar, verification from
// the masked target distribution) is distributed as the constrained
// target's own, by a chi-square test over thousands of fixed-seed samples.
func TestGrammarStochasticLossless(t *testing.T) {
	if testing.Short() {
		t.Skip("thousands of samples: skipped with -short")
	}
	path := testutil.Conformance(t, "stories260K.gguf")
	target := testutil.OpenModel(t, path)
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	tk, err := tokenizer.FromGGUF(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	vocab := grammar.TokenizerVocab(tk)
	// Words of lower-case letters, or a digit: a mask that keeps part of
	// the distribution's mass and refuses the rest.
	g := grammar.MustParse(`root ::= (" " [a-z]+){1,4} "." | " " [0-9]`)
	random := randomDraft(t)
	f16 := testutil.ConformanceModel(t, "stories260K-f16.gguf")
	p := sample.Params{Temp: 1.5, Seed: 42}
	prompt := prompts[0]

	// The constrained target distribution at the first position.
	st, _ := target.NewState(64)
	if err := st.Forward(model.Chain(prompt)); err != nil {
		t.Fatal(err)
	}
	logits := make([]float32, target.Config.Vocab)
	if err := st.Logits([]int{len(prompt) - 1}, logits); err != nil {
		t.Fatal(err)
	}
	ref, _ := sample.New(p)
	ref.SetConstraint(g.NewMatcher(vocab))
	want := make([]float64, target.Config.Vocab)
	for _, c := range ref.Distribution(logits) {
		want[c.ID] = float64(c.P)
	}

	const n = 2500
	for _, tc := range []struct {
		name  string
		draft *model.Model
		cfg   Config
	}{
		{"chain/random draft", random, Config{Mode: ModeChain, DraftMax: 3}},
		{"tree/random draft", random, Config{Mode: ModeTree, DraftMax: 6, TreeWidth: 3, TreeDepth: 2}},
		{"tree/close draft", f16, Config{Mode: ModeTree, DraftMax: 6, TreeWidth: 3, TreeDepth: 2}},
	} {
		smp, _ := sample.New(p)
		dr, err := NewModelDrafter(tc.draft, 64, p)
		if err != nil {
			t.Fatal(err)
		}
		tst, _ := target.NewState(64)
		d, err := NewDecoder(tst, smp, dr, tc.cfg)
		if err != nil {
			t.Fatal(err)
		}
		counts := make([]float64, target.Config.Vocab)
		for range n {
			m := g.NewMatcher(vocab)
			smp.SetConstraint(m)
			if err := d.Start(prompt); err != nil {
				t.Fatal(err)
			}
			out, err := d.Step(nil)
			if err != nil {
				t.Fatal(err)
			}
			if m.Err() != nil {
				t.Fatal(m.Err())
			}
			counts[out[0]]++
		}
		chi2, df := testutil.ChiSquare(counts, want, n)
		if limit := testutil.ChiSquareCritical(df); chi2 > limit {
			t.Errorf("%s: chi-square %.1f over %d degrees of freedom exceeds %.1f (p = 0.001)", tc.name, chi2, df, limit)
		} else {
			t.Logf("%s: chi-square %.1f, df %d, limit %.1f; acceptance %.2f", tc.name, chi2, df, limit, func() float64 { s := d.Stats(); return s.AcceptanceRate() }())
		}
	}
}
