package engine

import (
	"context"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"shade/model"
	"shade/sample"
	"shade/speculate"
)

// TestOutputStops feeds token texts through the stop logic: the text
// returned, the tokens counted and where it stopped.
func TestOutputStops(t *testing.T) {
	cases := []struct {
		name   string
		stops  []string
		pieces []string
		text   string
		tokens int
		stop   bool
	}{
		{"no stops", nil, []string{"a", "b", "", "c"}, "abc", 4, false},
		{"stop token", []string{"."}, []string{"Hi", " there", ".", " More"}, "Hi there", 2, true},
		{"stop inside a token", []string{"."}, []string{"Hi", " there. More", "x"}, "Hi there", 2, true},
		{"stop across tokens", []string{"END"}, []string{"ab", "E", "N", "D", "z"}, "ab", 1, true},
		{"false start released", []string{"END"}, []string{"ab", "E", "N", "x"}, "abENx", 4, false},
		{"stop first", []string{"."}, []string{".", "a"}, "", 0, true},
		{"empty tokens before the stop", []string{"."}, []string{"a", "", ""}, "a", 3, false},
		{"empty token at the cut", []string{"."}, []string{"a", "", "."}, "a", 1, true},
		{"earliest of two", []string{"cd", "b"}, []string{"abcd"}, "a", 1, true},
		{"longest held prefix", []string{"aab"}, []string{"x", "a", "a", "a", "b"}, "xa", 2, true},
	}
	for _, tc := range cases {
		o := output{stops: tc.stops}
		var text strings.Builder
		var toks []Token
		stopped := false
		for i, p := range tc.pieces {
			piece, st := o.add(p, &Token{ID: int32(i)})
			text.WriteString(piece.Text)
			toks = append(toks, piece.Tokens...)
			if st {
				stopped = true
				break
			}
		}
		if !stopped {
			p := o.flush()
			text.WriteString(p.Text)
			toks = append(toks, p.Tokens...)
		}
		if text.String() != tc.text || len(toks) != tc.tokens || o.released != tc.tokens || stopped != tc.stop {
			t.Errorf("%s: text %q, %d tokens (%d counted), stopped %v; want %q, %d, %v", tc.name, text.String(), len(toks), o.released, stopped, tc.text, tc.tokens, tc.stop)
		}
		for i, tk := range toks {
			if tk.ID != int32(i) {
				t.Errorf("%s: token %d released as %d", tc.name, tk.ID, i)
			}
		}
	}
}

// TestStopInTheLoop: a stop sequence ends the generation at once, with
// the text before it and the tokens up to it, the same five runs out of
// five, with and without speculation.
func TestStopInTheLoop(t *testing.T) {
	e := load(t, "stories260K.gguf")
	if err := e.LoadDraft(filepath.Join(conformanceDir, "stories260K-f16.gguf")); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	base := Request{Prompt: "Once upon a time", MaxTokens: 80, Sampling: sample.Params{Temp: 0}}
	full, err := e.Generate(ctx, base, func(string) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	text := e.Tok.Decode(full.Tokens)
	tested := 0
	for _, stop := range []string{".", " the", "\n"} {
		cut := strings.Index(text, stop)
		if cut < 0 {
			continue
		}
		tested++
		// The tokens whose text begins before the cut, by the plain
		// run's own offsets.
		want := 0
		for i := range full.Tokens {
			if len(e.Tok.Decode(full.Tokens[:i])) < cut {
				want = i + 1
			}
		}
		for _, spec := range []speculate.Config{{}, {Mode: speculate.ModeChain, DraftMax: 6}, {Mode: speculate.ModeTree, DraftMax: 8, TreeWidth: 2}} {
			for run := range 5 {
				r := base
				r.Stop, r.Spec = []string{stop, "never appears"}, spec
				var got strings.Builder
				st, err := e.Generate(ctx, r, func(s string) error { got.WriteString(s); return nil })
				if err != nil {
					t.Fatal(err)
				}
				if got.String() != text[:cut] || st.StopReason != "stop" || st.GenTokens != want || len(st.Tokens) != want {
					t.Fatalf("stop %q, %v, run %d: %q, %d tokens (%d ids), %s; want %q, %d tokens, stop", stop, spec.Mode, run, got.String(), st.GenTokens, len(st.Tokens), st.StopReason, text[:cut], want)
				}
				if !strings.HasPrefix(text[:cut], e.Tok.Decode(st.Tokens[:max(want-1, 0)])) {
					t.Fatalf("stop %q: the counted tokens are not the text's", stop)
				}
			}
		}
	}
	if tested < 2 {
		t.Fatalf("only %d of the stop sequences occur in %q", tested, text)
	}
	for _, stops := range [][]string{{""}, {strings.Repeat("x", MaxStopLen+1)}, make([]string, MaxStops+1)} {
		if _, err := e.Generate(ctx, Request{Prompt: "a", Stop: stops}, func(string) error { return nil }); err == nil {
			t.Errorf("%d stop sequences of %d bytes accepted", len(stops), len(stops[0]))
		}
	}
}

// collect runs a request and returns its pieces' tokens.
func collect(t *testing.T, e *Engine, r Request) ([]Token, string) {
	t.Helper()
	s, err := e.NewSession(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var toks []Token
	var text strings.Builder
	for !s.Done() {
		if _, err := s.StepPieces(context.Background(), func(p Piece) error {
			toks = append(toks, p.Tokens...)
			text.WriteString(p.Text)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	return toks, text.String()
}

// TestLogprobs: the reported log-probabilities are the log-softmax of a
// direct forward pass over the text so far, the same with and without
// speculation, whatever the sampler's processors do.
func TestLogprobs(t *testing.T) {
	e := load(t, "stories260K.gguf")
	if err := e.LoadDraft(filepath.Join(conformanceDir, "stories260K-f16.gguf")); err != nil {
		t.Fatal(err)
	}
	r := Request{Prompt: "Once upon a time", MaxTokens: 30, Logprobs: true, TopLogprobs: 3,
		Sampling: sample.Params{Temp: 0, PresencePenalty: 0.5, LogitBias: map[int32]float32{261: -3}}}
	plain, _ := collect(t, e, r)
	if len(plain) != 30 {
		t.Fatalf("%d tokens with logprobs, want 30", len(plain))
	}
	prompt, _ := e.Tok.Encode(r.Prompt, true, true)
	vocab := e.Model.Config.Vocab
	logits := make([]float32, vocab)
	for i, tk := range plain {
		st, _ := e.Model.NewState(128)
		seq := append(slices.Clone(prompt), tokenIDs(plain[:i])...)
		if err := st.Forward(model.Chain(seq)); err != nil {
			t.Fatal(err)
		}
		st.Logits([]int{len(seq) - 1}, logits)
		lp, top := sample.Logprobs(logits, tk.ID, 3, nil)
		if math.Abs(float64(lp-tk.Logprob)) > 1e-4 || len(tk.Top) != 3 || !slices.Equal(top, tk.Top) && math.Abs(float64(top[0].Logprob-tk.Top[0].Logprob)) > 1e-4 {
			t.Fatalf("token %d: logprob %v top %v, a direct pass gives %v %v", i, tk.Logprob, tk.Top, lp, top)
		}
		if tk.Logprob > 0 || tk.Top[0].Logprob < tk.Top[2].Logprob {
			t.Fatalf("token %d: logprob %v, top %v", i, tk.Logprob, tk.Top)
		}
		if want := len(e.Tok.Decode(tokenIDs(plain[:i]))); tk.Offset != want {
			t.Fatalf("token %d at offset %d, the text before it is %d bytes", i, tk.Offset, want)
		}
	}
	for _, spec := range []speculate.Config{{Mode: speculate.ModeChain, DraftMax: 5}, {Mode: speculate.ModeTree, DraftMax: 8, TreeWidth: 3}} {
		rs := r
		rs.Spec = spec
		got, _ := collect(t, e, rs)
		if len(got) != len(plain) {
			t.Fatalf("%v: %d tokens, plain %d", spec.Mode, len(got), len(plain))
		}
		for i := range got {
			if got[i].ID != plain[i].ID || math.Abs(float64(got[i].Logprob-plain[i].Logprob)) > 1e-4 || got[i].Offset != plain[i].Offset {
				t.Fatalf("%v: token %d is %+v, plain %+v", spec.Mode, i, got[i], plain[i])
			}
		}
	}
	bad := r
	bad.TopLogprobs = 21
	if _, err := e.NewSession(bad, nil); err == nil {
		t.Error("21 top logprobs accepted")
	}
	bad = r
	bad.Sampling.LogitBias = map[int32]float32{int32(vocab): 1}
	if _, err := e.NewSession(bad, nil); err == nil {
		t.Error("a logit bias for a token outside the vocabulary accepted")
	}
}

func tokenIDs(ts []Token) []int32 {
	ids := make([]int32, len(ts))
	for i, t := range ts {
		ids[i] = t.ID
	}
	return ids
}

// TestLogprobsFlash: flash mode's lazy LM head computes logits only for
// the rows the walk reaches, and those are whole rows: its logprobs are
// plain decoding's, row by row or in one head pass.
func TestLogprobsFlash(t *testing.T) {
	e, err := Load(copyModel(t, "stories260K.gguf"), 2)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := e.LoadDraft(filepath.Join(conformanceDir, "stories260K-f16.gguf")); err != nil {
		t.Fatal(err)
	}
	r := Request{Prompt: "Once upon a time", MaxTokens: 30, Logprobs: true, TopLogprobs: 2, Sampling: sample.Params{Temp: 0}}
	plain, _ := collect(t, e, r)
	for _, cfg := range []speculate.Config{{Mode: speculate.ModeFlash}, {Mode: speculate.ModeFlash, RowByRowHead: true}} {
		rs := r
		rs.Spec = cfg
		got, _ := collect(t, e, rs)
		if len(got) != len(plain) {
			t.Fatalf("%+v: %d tokens, plain %d", cfg, len(got), len(plain))
		}
		for i := range got {
			if got[i].ID != plain[i].ID || math.Abs(float64(got[i].Logprob-plain[i].Logprob)) > 1e-4 || got[i].Top[1].ID != plain[i].Top[1].ID {
				t.Fatalf("%+v: token %d is %+v, plain %+v", cfg, i, got[i], plain[i])
			}
		}
	}
}
