package engine

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"shade/sample"
	"shade/spec"
)

// A Session stepped to the end gives Generate's tokens and text, with and
// without speculation, and pausing between steps changes nothing.
func TestSessionMatchesGenerate(t *testing.T) {
	e := load(t, "stories260K.gguf")
	for _, mode := range []spec.Mode{spec.Off, spec.NgramM} {
		req := Request{Prompt: "Once upon a time", MaxTokens: 40, Sampling: sample.Params{Temp: 0}, Spec: spec.Config{Mode: mode}}
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
