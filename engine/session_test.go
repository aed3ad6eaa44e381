package engine

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"shade/sample"
	"shade/speculate"
)

// A Session stepped to the end gives Generate's tokens and text, with and
// without speculation, and pausing between steps changes nothing.
func TestSessionMatchesGenerate(t *testing.T) {
	e := load(t, "stories260K.gguf")
	for _, mode := range []speculate.Mode{speculate.ModeOff, speculate.ModeNgram} {
		req := Request{Prompt: "Once upon a time", MaxTokens: 40, Sampling: sample.Params{Temp: 0}, Spec: speculate.Config{Mode: mode}}
		var want strings.Builder
		wst, err := e.Generate(context.Background(), req, func(s string) error { want.WriteString(s); return nil })
		if err != nil {
			t.Fatal(err)
		}
		s, err := e.NewSession(req, nil)
		if err != nil {
			t.Fatal(err)
		}
		// Interleave a second session to show sessions are independent.
		other, err := e.NewSession(Request{Prompt: "The dog", MaxTokens: 5}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var got strings.Builder
		for steps := 0; ; steps++ {
			done, err := s.Step(context.Background(), func(x string) error { got.WriteString(x); return nil })
			if err != nil {
				t.Fatal(err)
			}
			if done {
				break
			}
			if steps%3 == 0 && !other.Done() {
				if _, err := other.Step(context.Background(), func(string) error { return nil }); err != nil {
					t.Fatal(err)
				}
			}
		}
		gst := s.Stats()
		if got.String() != want.String() || !slices.Equal(gst.Tokens, wst.Tokens) || gst.StopReason != wst.StopReason {
			t.Fatalf("mode %v: session %q (%s), Generate %q (%s)", mode, got.String(), gst.StopReason, want.String(), wst.StopReason)
		}
	}
}

func TestSessionCancelAndLimits(t *testing.T) {
	e := load(t, "stories260K.gguf")
	ctx, cancel := context.WithCancel(context.Background())
	s, err := e.NewSession(Request{Prompt: "Once upon a time", MaxTokens: 100}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Step(ctx, func(string) error { return nil }); err != nil {
		t.Fatal(err)
	}
	cancel()
	done, err := s.Step(ctx, func(string) error { return nil })
	if !done || !errors.Is(err, context.Canceled) || s.Stats().StopReason != "canceled" {
		t.Fatalf("after cancel: done %v err %v stop %q", done, err, s.Stats().StopReason)
	}
	if _, err := e.NewSession(Request{Prompt: strings.Repeat("a b c ", 100), Ctx: 32}, nil); !errors.Is(err, ErrPromptTooLong) {
		t.Fatalf("long prompt: %v", err)
	}
	if _, err := e.NewSession(Request{}, []int32{1, 99999}); err == nil {
		t.Fatal("out-of-range prompt token accepted")
	}
	// A context of 8 tokens stops with "context".
	s, err = e.NewSession(Request{Prompt: "Once", Ctx: 8, IgnoreEOS: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for {
		done, err := s.Step(context.Background(), func(string) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		if done {
			break
		}
	}
	if st := s.Stats(); st.StopReason != "context" {
		t.Fatalf("stop %q, want context", st.StopReason)
	}
}

// TestContextTooLarge: a context beyond the model's trained length, or
// whose KV cache would not fit memory, is an error before anything is
// allocated, saying what fits.
func TestContextTooLarge(t *testing.T) {
	e := load(t, "stories260K.gguf") // trained for 2048 tokens
	for _, tc := range []struct {
		ctx  int
		want string
	}{
		{1_000_000_000, "at most 2048"},
		{2049, "trained for 2048"},
		{-1, "negative"},
	} {
		err := e.CheckContext(tc.ctx)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CheckContext(%d) = %v, want mention of %q", tc.ctx, err, tc.want)
		}
		if tc.ctx > 0 {
			_, err := e.NewSession(Request{Prompt: "Once", Ctx: tc.ctx}, nil)
			if !errors.Is(err, ErrContextTooLarge) {
				t.Errorf("NewSession with Ctx %d: %v", tc.ctx, err)
			}
			_, err = e.Perplexity(context.Background(), "Once upon a time", tc.ctx, nil)
			if !errors.Is(err, ErrContextTooLarge) {
				t.Errorf("Perplexity with ctx %d: %v", tc.ctx, err)
			}
		}
	}
	if err := e.CheckContext(2048); err != nil {
		t.Errorf("the trained context refused: %v", err)
	}
	// A model that claims a huge trained context is still bounded by memory.
	cfg := *e.Model.Config
	cfg.ContextLen = 1 << 40
	m := *e.Model
	m.Config = &cfg
	big := &Engine{Model: &m}
	if avail := AvailableMemory(); avail > 0 {
		err := big.CheckContext(1 << 40)
		if !errors.Is(err, ErrContextTooLarge) || !strings.Contains(err.Error(), "fits") {
			t.Errorf("a context of 2^40 tokens with %d bytes available: %v", avail, err)
		}
	}
}
