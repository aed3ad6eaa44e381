package engine

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"shade/internal/gguftest"
	"shade/sample"
	"shade/speculate"
)

// nanModel is stories260K with output.weight all NaN: every logit it
// computes is NaN.
func nanModel(t *testing.T) string {
	t.Helper()
	src := filepath.Join(conformanceDir, "stories260K.gguf")
	if _, err := os.Stat(src); err != nil {
		t.Skipf("%s not present: the shared conformance pack is needed", src)
	}
	return gguftest.Rewrite(t, src, "NAN.gguf", nil, gguftest.FillF32("output.weight", float32(math.NaN())))
}

var nanModes = []speculate.Config{
	{Mode: speculate.ModeChain, DraftMax: 5},
	{Mode: speculate.ModeTree, DraftMax: 8, TreeWidth: 2, TreeDepth: 4},
	{Mode: speculate.ModeFlash},
	{Mode: speculate.ModeAuto},
}

// TestNaNDraft: a draft whose logits are NaN drafts nothing (each step is
// a rejected draft), so every speculative mode still gives plain
// decoding's tokens, greedy or sampled, and nothing panics.
func TestNaNDraft(t *testing.T) {
	e, err := Load(copyModel(t, "stories260K.gguf"), 2)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := e.LoadDraft(nanModel(t)); err != nil {
		t.Fatal(err)
	}
	noop := func(string) error { return nil }
	for _, sp := range []sample.Params{{Temp: 0}, {Temp: 0.8, TopK: 40, TopP: 0.95, Seed: 7}} {
		req := Request{Prompt: "Once upon a time", MaxTokens: 24, IgnoreEOS: true, Sampling: sp}
		plain, err := e.Generate(context.Background(), req, noop)
		if err != nil {
			t.Fatal(err)
		}
		for _, cfg := range nanModes {
			r := req
			r.Spec = cfg
			st, err := e.Generate(context.Background(), r, noop)
			if err != nil {
				t.Fatalf("temp %v, %v: %v", sp.Temp, cfg.Mode, err)
			}
			if st.GenTokens != 24 {
				t.Errorf("temp %v, %v: %d tokens", sp.Temp, cfg.Mode, st.GenTokens)
			}
			if sp.Temp == 0 && !slices.Equal(st.Tokens, plain.Tokens) {
				t.Errorf("%v with a NaN draft: tokens differ from plain decoding", cfg.Mode)
			}
			if st.Spec != nil && st.Spec.Accepted != 0 {
				t.Errorf("%v: %d NaN-drafted tokens accepted", cfg.Mode, st.Spec.Accepted)
			}
		}
	}
}

// TestNaNTarget: a target whose logits are NaN ends the generation with an
// error saying so, in every mode, plain decoding and n-grams included.
func TestNaNTarget(t *testing.T) {
	e, err := Load(nanModel(t), 2)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := e.LoadDraft(filepath.Join(conformanceDir, "stories260K-f16.gguf")); err != nil {
		t.Fatal(err)
	}
	modes := append([]speculate.Config{{Mode: speculate.ModeOff}, {Mode: speculate.ModeNgram}}, nanModes...)
	for _, sp := range []sample.Params{{Temp: 0}, {Temp: 0.8, Seed: 3}} {
		for _, cfg := range modes {
			r := Request{Prompt: "Once upon a time", MaxTokens: 8, Sampling: sp, Spec: cfg}
			st, err := e.Generate(context.Background(), r, func(string) error { return nil })
			if !errors.Is(err, speculate.ErrNonFinite) {
				t.Errorf("temp %v, %v: err %v, want one wrapping speculate.ErrNonFinite", sp.Temp, cfg.Mode, err)
			}
			if st.GenTokens != 0 {
				t.Errorf("temp %v, %v: %d tokens emitted from NaN logits", sp.Temp, cfg.Mode, st.GenTokens)
			}
		}
	}
}

// TestNaNPerplexity: perplexity over NaN logits is an error, not a NaN
// result (which --json could not even print).
func TestNaNPerplexity(t *testing.T) {
	e, err := Load(nanModel(t), 2)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	_, err = e.Perplexity(context.Background(), strings.Repeat("Once upon a time there was a girl. ", 8), 16, nil)
	if !errors.Is(err, speculate.ErrNonFinite) {
		t.Fatalf("got %v, want an error wrapping speculate.ErrNonFinite", err)
	}
}
