package engine

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"shade/gguf"
	"shade/internal/testutil"
	"shade/quant"
	"shade/sample"
	"shade/speculate"
	"shade/synth"
)

func TestSpeculativeGenerateEqualsPlain(t *testing.T) {
	e := load(t, "stories260K.gguf")
	if err := e.LoadDraft(filepath.Join(conformanceDir, "stories260K-f16.gguf")); err != nil {
		t.Fatal(err)
	}
	noop := func(string) error { return nil }
	req := Request{Prompt: "Once upon a time", MaxTokens: 70, Sampling: sample.Params{Temp: 0}}
	plain, err := e.Generate(context.Background(), req, noop)
	if err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []speculate.Config{
		{Mode: speculate.ModeChain, DraftMax: 5},
		{Mode: speculate.ModeTree, DraftMax: 8, TreeWidth: 2, TreeDepth: 4},
		{Mode: speculate.ModeNgram},
		{Mode: speculate.ModeAuto},
	} {
		r := req
		r.Spec = cfg
		var text strings.Builder
		st, err := e.Generate(context.Background(), r, func(s string) error { text.WriteString(s); return nil })
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(st.Tokens, plain.Tokens) {
			t.Errorf("%v: tokens differ from plain decoding\n got %v\nwant %v", cfg.Mode, st.Tokens, plain.Tokens)
		}
		// Chain and tree always draft; auto may rightly decide that a draft
		// as costly as the target (as here) never pays.
		if st.GenTokens != 70 || st.Spec == nil || ((cfg.Mode == speculate.ModeChain || cfg.Mode == speculate.ModeTree) && st.Spec.Drafted == 0) {
			t.Errorf("%v: stats %+v / %+v", cfg.Mode, st, st.Spec)
		}
		if text.String() != e.Tok.Decode(plain.Tokens) {
			t.Errorf("%v: streamed text differs", cfg.Mode)
		}
	}
	r := req
	r.Spec = speculate.Config{Mode: speculate.ModeChain}
	e.Draft.File.Close()
	e.Draft = nil
	if _, err := e.Generate(context.Background(), r, noop); err == nil || !strings.Contains(err.Error(), "draft") {
		t.Errorf("chain without a draft: %v", err)
	}
}

// vocabWith writes a vocabulary GGUF: stories260K's, with edit applied.
func vocabWith(t *testing.T, edit func(w *gguf.Writer, tokens []string)) *gguf.File {
	t.Helper()
	v, err := synth.DemoVocab()
	if err != nil {
		t.Fatal(err)
	}
	return testutil.GGUF(t, func(w *gguf.Writer) error {
		if err := w.CopyMeta(&v.Meta, "tokenizer."); err != nil {
			return err
		}
		tokens, _ := v.Meta.Strings("tokenizer.ggml.tokens")
		edit(w, slices.Clone(tokens))
		return nil
	})
}

func TestDraftVocabularyMismatch(t *testing.T) {
	e := load(t, "stories260K.gguf")
	dir := t.TempDir()
	tiny, _ := synth.LookupShape("tiny")
	write := func(name string, vocab *gguf.File) string {
		path := filepath.Join(dir, name)
		if err := synth.WriteFile(path, synth.Options{Shape: tiny, Type: quant.Q8_0, Vocab: vocab, Seed: 3}); err != nil {
			t.Fatal(err)
		}
		return path
	}
	cases := []struct {
		name string
		path string
		want string
	}{
		{"size", filepath.Join(conformanceDir, "llama-tiny-q8_0.gguf"), "32000 tokens in the draft, 512 in the target"},
		{"tokens", write("tokens.gguf", vocabWith(t, func(w *gguf.Writer, tok []string) {
			tok[300], tok[301] = "▁zebra", "▁quux"
			w.Set("tokenizer.ggml.tokens", tok)
		})), `token 300 is`},
		{"special ids", write("bos.gguf", vocabWith(t, func(w *gguf.Writer, tok []string) {
			w.Set("tokenizer.ggml.bos_token_id", uint32(2))
		})), "BOS is 1 in the target, 2 in the draft"},
	}
	for _, tc := range cases {
		err := e.LoadDraft(tc.path)
		if !errors.Is(err, ErrVocabMismatch) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want mention of %q", tc.name, err, tc.want)
		}
	}
	if e.Draft != nil {
		t.Error("a mismatched draft was kept")
	}
	// The demo model shares the vocabulary: accepted.
	if err := e.LoadDraft(write("ok.gguf", vocabWith(t, func(*gguf.Writer, []string) {}))); err != nil {
		t.Errorf("same vocabulary refused: %v", err)
	}
}
