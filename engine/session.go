package engine

import (
	"context"
	"fmt"
	"time"

	"shade/grammar"
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
	lps     []Token // the step's log-probabilities, by token of out (Request.Logprobs)
	text    output  // stop sequences and the tokens released with the text
	st      Stats
	started bool
	done    bool
	genTime time.Duration // decode time spent in Step, excluding pauses
	// stepStart is when the Step in progress began (zero between steps):
	// a Step that finishes the session counts its own time in before the
	// final stats are taken.
	stepStart time.Time
	stream0   *weights.Stats   // the streamer's counters when the session began
	matcher   *grammar.Matcher // the request's grammar, followed (nil: none)
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
	if err := r.Sampling.CheckBias(e.Tok.VocabSize()); err != nil {
		return nil, err
	}
	if err := checkOutput(&r); err != nil {
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
		detok: tokenizer.NewDecoder(e.Tok), stream0: e.streamStats(), text: output{stops: r.Stop},
		from: from, cached: cached, keep: keep, drafter: drafter}
	ss.detok.Continuation = r.Continuation
	if r.Logprobs {
		dec.OnToken(ss.onToken)
	}
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
	return s.StepPieces(ctx, func(p Piece) error {
		if p.Text == "" {
			return nil
		}
		return emit(p.Text)
	})
}

// StepPieces is Step passing each piece of text with the tokens it
// releases (and their log-probabilities if the Request asks for them);
// a piece may have tokens and no text.
func (s *Session) StepPieces(ctx context.Context, emit func(Piece) error) (done bool, err error) {
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
		if err := s.startGrammar(); err != nil {
			s.finish()
			return true, err
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
	s.lps = s.lps[:0]
	if s.out, err = s.dec.Step(s.out[:0]); err != nil {
		s.finish()
		return true, err
	}
	if err := s.grammarErr(); err != nil {
		s.finish()
		return true, err
	}
	r := &s.r
	for i, next := range s.out {
		if (!r.IgnoreEOS || s.matcher != nil) && s.e.Tok.IsEOG(next) {
			s.st.StopReason = "eos"
			return true, s.end(emit)
		}
		s.st.Tokens = append(s.st.Tokens, next)
		tok := Token{ID: next}
		if i < len(s.lps) {
			tok = s.lps[i]
		}
		p, stopped := s.text.add(s.detok.Add(next), &tok)
		if err := s.release(p, emit); err != nil {
			s.finish()
			return true, err
		}
		if stopped {
			return true, s.stopOnSequence()
		}
		if r.MaxTokens > 0 && len(s.st.Tokens) >= r.MaxTokens {
			s.st.StopReason = s.lengthReason()
			return true, s.end(emit)
		}
	}
	if s.stopped() {
		return true, s.end(emit)
	}
	return false, nil
}

// release passes a piece on and counts its tokens as generated.
func (s *Session) release(p Piece, emit func(Piece) error) error {
	s.st.GenTokens = s.text.released
	if p.Text == "" && len(p.Tokens) == 0 {
		return nil
	}
	return emit(p)
}

// stopOnSequence ends a session whose text reached a stop sequence: the
// tokens past the returned text are not generated tokens.
func (s *Session) stopOnSequence() error {
	s.st.StopReason = "stop"
	s.st.Tokens = s.st.Tokens[:s.text.released]
	s.finish()
	return nil
}

// stopped checks the limits that hold before a step: max tokens and a full context.
func (s *Session) stopped() bool {
	if s.r.MaxTokens > 0 && len(s.st.Tokens) >= s.r.MaxTokens {
		s.st.StopReason = s.lengthReason()
		return true
	}
	if s.state.Len()+1 >= s.n {
		s.st.StopReason = "context"
		return true
	}
	return false
}

// end flushes the detokenizer and the held-back text, and finishes. The
// flushed bytes may still complete a stop sequence.
func (s *Session) end(emit func(Piece) error) error {
	p, stopped := s.text.add(s.detok.Flush(), nil)
	err := s.release(p, emit)
	if stopped {
		s.stopOnSequence()
		return err
	}
	if err == nil {
		err = s.release(s.text.flush(), emit)
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
