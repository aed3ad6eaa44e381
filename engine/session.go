package engine

import (
	"context"
	"fmt"
	"time"

	"shade/model"
	"shade/sample"
	"shade/speculate"
	"shade/tokenizer"
	"shade/weights"
)

// Session is one generation run step by step, for callers that interleave
// several generations on one engine (the server's scheduler preempts a
// background session between two steps and resumes it later, its KV cache
// kept). Generate is the one-call form; a Session gives the same tokens for
// the same Request. A Session is not safe for concurrent use, and no two
// sessions of one Engine may Step at the same time (they share the worker
// pool); sessions may be paused for any time between steps.
type Session struct {
	e       *Engine
	r       Request
	prompt  []int32
	n       int // context capacity
	state   *model.State
	sampler *sample.Sampler
	dec     *speculate.Decoder
	detok   *tokenizer.Decoder
	out     []int32
	st      Stats
	started bool
	done    bool
	genTime time.Duration // decode time spent in Step, excluding pauses
	// stepStart is when the Step in progress began (zero between steps):
	// a Step that finishes the session counts its own time in before the
	// final stats are taken.
	stepStart time.Time
	stream0   *weights.Stats // the streamer's counters when the session began
	// The prefix cache (prefix.go): the prefix the session started from,
	// how many prompt tokens it took from it, whether to keep the KV when
	// done, and what was kept.
	from    *Prefix
	cached  int
	keep    bool
	kept    *Prefix
	drafter *speculate.ModelDrafter
}

// NewSession tokenizes and checks a request and allocates its state (the
// KV cache); nothing runs until the first Step. If prompt is non-nil it is
// used as the prompt's tokens and r.Prompt is ignored (chat templates
// tokenize their own text). Errors wrapping ErrPromptTooLong mean the prompt
// does not fit the context.
func (e *Engine) NewSession(r Request, prompt []int32) (*Session, error) {
	return e.newSession(r, prompt, nil, false)
}

func (e *Engine) newSession(r Request, prompt []int32, from *Prefix, keep bool) (*Session, error) {
	sampler, err := sample.New(r.Sampling)
	if err != nil {
		return nil, err
	}
	if prompt == nil {
		if prompt, err = e.Tok.Encode(r.Prompt, true, true); err != nil {
			return nil, fmt.Errorf("engine: prompt: %w", err)
		}
	}
	if len(prompt) == 0 {
		return nil, fmt.Errorf("engine: empty prompt (the tokenizer adds no BOS for this model)")
	}
	for _, t := range prompt {
		if t < 0 || int(t) >= e.Tok.VocabSize() {
			return nil, fmt.Errorf("engine: prompt token %d out of range [0, %d)", t, e.Tok.VocabSize())
		}
	}
	n := e.ContextSize(r.Ctx)
	if len(prompt) >= n {
		return nil, fmt.Errorf("engine: %w: %d tokens, context is %d", ErrPromptTooLong, len(prompt), n)
	}
	if r.Spec.Mode != speculate.ModeOff && e.Draft == nil && (r.Spec.Mode == speculate.ModeChain || r.Spec.Mode == speculate.ModeTree || r.Spec.Mode == speculate.ModeFlash) {
		return nil, fmt.Errorf("engine: speculative mode %v needs a draft model (--draft)", r.Spec.Mode)
	}
	spare := spareSlots(r, keep)
	if err := e.checkContext(n, spare); err != nil {
		return nil, err
	}
	s, cached, err := e.prefixState(from, prompt, n+spare)
	if err != nil {
		return nil, err
	}
	var drafter *speculate.ModelDrafter
	if e.Draft != nil && r.Spec.Mode != speculate.ModeOff && r.Spec.Mode != speculate.ModeNgram {
		if drafter, err = e.prefixDrafter(from, n+spare, r.Sampling); err != nil {
			return nil, err
		}
		drafter.ShareRankStats(e.DraftRanks)
	}
	cfg := r.Spec
	if cfg.Deps.Estimates == nil {
		cfg.Deps.Estimates = e.estimates()
	}
	if err := e.applyFlash(&cfg); err != nil {
		return nil, err
	}
	dec, err := speculate.NewDecoder(s, sampler, drafter, cfg)
	if err != nil {
		return nil, err
	}
	if r.PrefillSize > 0 {
		dec.Prefill = r.PrefillSize
	}
	ss := &Session{e: e, r: r, prompt: prompt, n: n, state: s, sampler: sampler, dec: dec,
		detok: tokenizer.NewDecoder(e.Tok), stream0: e.streamStats(), from: from, cached: cached, keep: keep, drafter: drafter}
	ss.st = Stats{LoadDuration: e.LoadTime, ContextCapacity: n, PromptTokens: len(prompt), PromptTokenIDs: prompt, CachedTokens: cached}
	return ss, nil
}

// PromptTokens is the prompt's length in tokens.
func (s *Session) PromptTokens() int { return len(s.prompt) }

// Done reports whether the session has finished (Step returned done or an error).
func (s *Session) Done() bool { return s.done }

// Step runs the prefill on its first call and one decoding step (one or
// more tokens, speculative or not) on each later call, passing each piece
// of complete text to emit. It returns done once a stop condition holds
// (StopReason in Stats says which); after that Step does nothing. A
// canceled ctx stops the session with StopReason "canceled" and ctx's error.
func (s *Session) Step(ctx context.Context, emit func(text string) error) (done bool, err error) {
	if s.done {
		return true, nil
	}
	if err := ctx.Err(); err != nil {
		s.st.StopReason = "canceled"
		s.finish()
		return true, err
	}
	if !s.started {
		s.started = true
		for _, t := range s.prompt {
			s.sampler.Accept(t)
		}
		t0 := time.Now()
		if err := s.dec.StartCached(s.prompt, s.cached); err != nil {
			s.finish()
			return true, err
		}
		s.st.PromptDuration = time.Since(t0)
		s.st.PromptTPS = rate(len(s.prompt)-s.cached, s.st.PromptDuration) // the tokens run
		s.st.StopReason = "length"
		return s.stopped(), nil
	}
	t0 := time.Now()
	s.stepStart = t0
	defer s.countStep()
	if s.out, err = s.dec.Step(s.out[:0]); err != nil {
		s.finish()
		return true, err
	}
	r := &s.r
	for _, next := range s.out {
		if !r.IgnoreEOS && s.e.Tok.IsEOG(next) {
			s.st.StopReason = "eos"
			return true, s.end(emit)
		}
		s.st.Tokens = append(s.st.Tokens, next)
		s.st.GenTokens++
		if text := s.detok.Add(next); text != "" {
			if err := emit(text); err != nil {
				s.finish()
				return true, err
			}
		}
		if r.MaxTokens > 0 && s.st.GenTokens >= r.MaxTokens {
			s.st.StopReason = "length"
			return true, s.end(emit)
		}
	}
	if s.stopped() {
		return true, s.end(emit)
	}
	return false, nil
}

// stopped checks the limits that hold before a step: max tokens and a full context.
func (s *Session) stopped() bool {
	if s.r.MaxTokens > 0 && s.st.GenTokens >= s.r.MaxTokens {
		s.st.StopReason = "length"
		return true
	}
	if s.state.Len()+1 >= s.n {
		s.st.StopReason = "context"
		return true
	}
	return false
}

// end flushes the detokenizer and finishes.
func (s *Session) end(emit func(string) error) error {
	var err error
	if text := s.detok.Flush(); text != "" {
		err = emit(text)
	}
	s.finish()
	return err
}

// finish records the final stats and drops the state so that its KV cache
// can be freed while the Session value is still referenced.
func (s *Session) finish() {
	if s.done {
		return
	}
	s.done = true
	s.countStep()
	s.st.GenDuration = s.genTime
	s.st.GenTPS = rate(s.st.GenTokens, s.st.GenDuration)
	s.st.ResidentBytes = ResidentBytes()
	ss := s.dec.Stats()
	s.st.Spec = &ss
	s.st.Stream = s.streamSince()
	s.kept = s.keptPrefix()
	s.state, s.dec, s.sampler, s.drafter, s.from = nil, nil, nil, nil, nil
}

// Close ends the session early (StopReason "canceled" if it had not
// finished) and frees its KV cache.
func (s *Session) Close() {
	if !s.done {
		s.st.StopReason = "canceled"
		s.finish()
	}
}

// Stats returns the statistics so far (final once Done). GenDuration counts
// only the time spent in Step, not pauses between steps.
func (s *Session) Stats() Stats {
	st := s.st
	if !s.done {
		st.GenDuration = s.genTime
		st.GenTPS = rate(st.GenTokens, st.GenDuration)
		st.Stream = s.streamSince()
	}
	return st
}

// streamSince is what the streamer did since the session began.
func (s *Session) streamSince() *weights.Stats {
	now := s.e.streamStats()
	if now == nil || s.stream0 == nil {
		return now
	}
	d := now.Since(*s.stream0)
	return &d
}

// countStep adds the time of the Step in progress (if any) to genTime.
func (s *Session) countStep() {
	if !s.stepStart.IsZero() {
		s.genTime += time.Since(s.stepStart)
		s.stepStart = time.Time{}
	}
}
