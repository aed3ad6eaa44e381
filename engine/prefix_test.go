package engine

import (
	"context"

	"path/filepath"
	"shade/elastic"
	"slices"
	"testing"

	"shade/sample"
	"shade/speculate"
)

// run steps a session to its end and returns its stats.
func runSession(t *testing.T, s *Session) Stats {
	t.Helper()
	for {
		done, err := s.Step(context.Background(), func(string) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		if done {
			return s.Stats()
		}
	}
}

// A conversation's turns started from the previous turn's KV generate
// exactly what fresh sessions do, greedy, plain and speculative, and the
// later turns run only what their prompts add.
func TestPrefixSessionsEqualFresh(t *testing.T) {
	e := load(t, "stories260K.gguf")
	if err := e.LoadDraft(filepath.Join(conformanceDir, "stories260K-f16.gguf")); err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []speculate.Config{
		{},
		{Mode: speculate.ModeChain, DraftMax: 4},
		{Mode: speculate.ModeTree, DraftMax: 8, TreeWidth: 2, TreeDepth: 4},
		{Mode: speculate.ModeNgram},
		{Mode: speculate.ModeAuto},
	} {
		t.Run(cfg.Mode.String(), func(t *testing.T) { checkConversation(t, e, cfg) })
	}
}

// The same with every layer streamed (a DRAM budget of 0%), Lever's
// speculation and the elastic governor pacing it.
func TestPrefixSessionsStreamedAndGoverned(t *testing.T) {
	path := copyModel(t, "stories260K.gguf")
	e, err := Open(context.Background(), path, Options{Threads: 2, Draft: filepath.Join(conformanceDir, "stories260K-f16.gguf"),
		Spec: speculate.ModeFlash, DRAMBudget: "0%", Policy: elastic.Balanced})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e.Stream == nil || e.Governor == nil {
		t.Fatalf("streamer %v, governor %v", e.Stream, e.Governor)
	}
	checkConversation(t, e, e.Governed(speculate.Config{Mode: speculate.ModeFlash}))
}

// checkConversation runs four turns of a conversation from the previous
// turn's KV and from scratch, and compares them.
func checkConversation(t *testing.T, e *Engine, cfg speculate.Config) {
	t.Helper()
	req := Request{MaxTokens: 24, Sampling: sample.Params{Temp: 0}, Spec: cfg}
	prompt, err := e.Tok.Encode("Once upon a time, there was a little girl", true, true)
	if err != nil {
		t.Fatal(err)
	}
	var p *Prefix
	for turn := range 4 {
		fresh, err := e.NewSession(req, prompt)
		if err != nil {
			t.Fatal(err)
		}
		want := runSession(t, fresh)
		s, err := e.NewSessionFrom(req, prompt, p)
		if err != nil {
			t.Fatal(err)
		}
		got := runSession(t, s)
		if !slices.Equal(got.Tokens, want.Tokens) {
			t.Fatalf("turn %d: from the prefix\n got %v\nwant %v", turn, got.Tokens, want.Tokens)
		}
		shared := 0
		if p != nil {
			shared = min(CommonPrefix(p.Tokens(), prompt), len(prompt)-1)
		}
		if got.CachedTokens != shared || s.CachedTokens() != shared || (turn > 0 && shared == 0) {
			t.Errorf("turn %d: %d cached tokens, %d shared", turn, got.CachedTokens, shared)
		}
		if p = s.TakePrefix(); p == nil {
			t.Fatalf("turn %d: no prefix kept", turn)
		}
		if s.TakePrefix() != nil {
			t.Error("TakePrefix gave the prefix twice")
		}
		if cfg.Mode == speculate.ModeChain && p.draft == nil {
			t.Error("the draft's KV was not kept")
		}
		// A fork of the prompt's beginning regenerates the reply.
		f, err := p.Fork(len(prompt) / 2)
		if err != nil {
			t.Fatal(err)
		}
		fs, err := e.NewSessionFrom(req, prompt, f)
		if err != nil {
			t.Fatal(err)
		}
		if st := runSession(t, fs); !slices.Equal(st.Tokens, want.Tokens) || st.CachedTokens != len(prompt)/2 {
			t.Fatalf("turn %d: from a fork of %d tokens (%d cached)\n got %v\nwant %v", turn, len(prompt)/2, st.CachedTokens, st.Tokens, want.Tokens)
		}
		// The next prompt: this one, the reply, and a new user turn;
		// every other turn the reply's tail is cut, as a client that
		// trims the reply would send it.
		reply := got.Tokens
		if turn%2 == 1 {
			reply = reply[:len(reply)/2]
		}
		next, err := e.Tok.Encode(" The end. Then", false, false)
		if err != nil {
			t.Fatal(err)
		}
		prompt = append(append(slices.Clone(prompt), reply...), next...)
	}
}

// A prefix from a session with a smaller context, or kept by a session
// that was not asked to keep one, is not used.
func TestPrefixNotUsable(t *testing.T) {
	e := load(t, "stories260K.gguf")
	prompt, _ := e.Tok.Encode("Once upon a time", true, true)
	req := Request{MaxTokens: 4, Ctx: 64, Sampling: sample.Params{Temp: 0}}
	s, err := e.NewSessionFrom(req, prompt, nil)
	if err != nil {
		t.Fatal(err)
	}
	runSession(t, s)
	p := s.TakePrefix()
	if p == nil || len(p.Tokens()) < len(prompt) || p.Bytes() <= 0 {
		t.Fatalf("prefix %+v", p)
	}
	// A session closed before it ran gives back the prefix it was given.
	want := slices.Clone(p.Tokens())
	s, err = e.NewSessionFrom(req, prompt, p)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if p = s.TakePrefix(); p == nil || !slices.Equal(p.Tokens(), want) {
		t.Fatalf("unstarted session gave back %+v, want the tokens %v", p, want)
	}
	req.Ctx = 128
	s, err = e.NewSessionFrom(req, prompt, p)
	if err != nil {
		t.Fatal(err)
	}
	if s.CachedTokens() != 0 {
		t.Errorf("a 64-token prefix used by a 128-token session: %d cached", s.CachedTokens())
	}
	plain, err := e.NewSession(req, prompt)
	if err != nil {
		t.Fatal(err)
	}
	runSession(t, plain)
	if plain.TakePrefix() != nil {
		t.Error("NewSession kept its KV")
	}
}
