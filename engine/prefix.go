package engine

import (
	"fmt"
	"slices"

	"shade/model"
	"shade/sample"
	"shade/speculate"
)

// Prefix is the KV state a finished session leaves behind: the target's
// cache holding a run of tokens (its prompt and what it generated), and the
// draft model's cache when it drafted with one. A later session of the same
// engine that starts from it prefills only what its prompt does not share
// with those tokens (NewSessionFrom): a conversation's next turn does not
// start over. A Prefix is owned by one session or one holder at a time: it
// is mutable state, never shared.
type Prefix struct {
	tokens    []int32
	target    *model.State
	draft     *model.State // nil: no draft KV kept
	draftSeen []int32      // tokens whose KV draft holds
}

// Tokens are the tokens whose KV the prefix holds, in order; the caller
// must not change them.
func (p *Prefix) Tokens() []int32 { return p.tokens }

// Bytes is the memory the prefix's caches reserve (the target's and the
// draft's), what holding it costs whatever its length.
func (p *Prefix) Bytes() int64 {
	n := p.target.Cache.Bytes()
	if p.draft != nil {
		n += p.draft.Cache.Bytes()
	}
	return n
}

// CommonPrefix is the length of the longest common prefix of a and b.
func CommonPrefix(a, b []int32) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// NewSessionFrom is NewSession starting from the KV of p (nil: none), which
// the session takes over: the prompt tokens it shares with p's, but the
// last prompt token (whose logits the first step needs), are not run
// again. A p made for another engine or too small a context is not used.
// The output is the same as NewSession's. Once the session is done,
// TakePrefix gives its KV back for the next turn.
func (e *Engine) NewSessionFrom(r Request, prompt []int32, p *Prefix) (*Session, error) {
	return e.newSession(r, prompt, p, true)
}

// spareSlots is how many slots beyond the context a request's caches
// need: room for the batch in flight. Sessions that keep their KV get at
// least a governed session's room, so that a cached prefix serves
// foreground and background requests alike.
func spareSlots(r Request, keep bool) int {
	spare := 0
	if r.Spec.Mode != speculate.ModeOff {
		spare = max(r.Spec.DraftMax, 8) + 1
	}
	if r.Spec.Deps.Governor != nil {
		spare = 64 + 1 // room for verify batches widened by n-gram filling
	}
	if keep {
		spare = max(spare, 64+1)
	}
	if r.Spec.Mode == speculate.ModeFlash {
		spare = max(spare, r.Spec.MaxNodes, 64, r.Spec.DraftMax) + 1 // a gain-cost tree's safety cap
	}
	return spare
}

// SessionSlots is the capacity of the KV caches a session from
// NewSessionFrom of r needs: a prefix with fewer Slots is not used.
func (e *Engine) SessionSlots(r Request) int { return e.ContextSize(r.Ctx) + spareSlots(r, true) }

// Slots is the capacity of the prefix's caches.
func (p *Prefix) Slots() int { return p.target.Cache.Cap() }

// prefixState returns the target state a session of capacity slots runs
// on: p's if it fits, with how many of the prompt's tokens it holds, or a
// new one.
func (e *Engine) prefixState(p *Prefix, prompt []int32, capacity int) (*model.State, int, error) {
	if p != nil && p.target != nil && p.target.Model() == e.Model && p.target.Cache.Cap() >= capacity {
		cached := min(CommonPrefix(p.tokens, prompt), len(prompt)-1, p.target.Len())
		return p.target, cached, nil
	}
	s, err := e.Model.NewState(capacity)
	return s, 0, err
}

// prefixDrafter returns the drafter of a session of capacity slots: on p's
// draft state if it fits (the drafter catches up from the prefix it
// shares), or a new one.
func (e *Engine) prefixDrafter(p *Prefix, capacity int, params sample.Params) (*speculate.ModelDrafter, error) {
	if p != nil && p.draft != nil && p.draft.Model() == e.Draft && p.draft.Cache.Cap() >= capacity {
		return speculate.NewModelDrafterOn(p.draft, p.draftSeen, params)
	}
	return speculate.NewModelDrafter(e.Draft, capacity, params)
}

// TakePrefix returns, once the session is done, its KV for a later
// NewSessionFrom, and forgets it; nil if the session was not made by
// NewSessionFrom, was not done or ended in a state its KV cannot be
// trusted in (an error in the middle of a step).
func (s *Session) TakePrefix() *Prefix {
	p := s.kept
	s.kept = nil
	return p
}

// CachedTokens is how many prompt tokens the session took from its prefix
// instead of running them.
func (s *Session) CachedTokens() int { return s.cached }

// keptPrefix is the KV a finishing session leaves for TakePrefix; the
// session's state and drafter are still set.
func (s *Session) keptPrefix() *Prefix {
	if !s.keep || s.state == nil {
		return nil
	}
	var tokens []int32
	switch {
	case !s.started:
		// Nothing ran: the state holds what it held when the session began.
		if s.from == nil || s.from.target != s.state {
			return nil
		}
		tokens = s.from.tokens
	default:
		ctx := s.dec.Context()
		// The cache holds the accepted text but the pending token; a step
		// cut short by an error between its commits leaves it holding
		// something else.
		if len(ctx) == 0 || s.state.Len() != len(ctx)-1 {
			return nil
		}
		tokens = slices.Clone(ctx[:len(ctx)-1])
	}
	if s.state.Truncate(len(tokens)) != nil {
		return nil
	}
	p := &Prefix{tokens: tokens, target: s.state}
	if s.drafter != nil {
		p.draft, p.draftSeen = s.drafter.Detach()
		p.draftSeen = slices.Clone(p.draftSeen)
	}
	return p
}

// Fork returns a new prefix holding a copy of the KV of p's first n
// tokens (and of the draft's, as far as it saw them), leaving p as it is:
// a request that shares only the beginning of a cached conversation (a
// system prompt, a regenerated reply) starts from it without taking the
// conversation's KV away.
func (p *Prefix) Fork(n int) (*Prefix, error) {
	if n < 0 || n > len(p.tokens) {
		return nil, fmt.Errorf("engine: fork of %d tokens of a prefix of %d", n, len(p.tokens))
	}
	t, err := p.target.Model().NewState(p.target.Cache.Cap())
	if err != nil {
		return nil, err
	}
	if err := t.Cache.CopyFrom(p.target.Cache, n); err != nil {
		return nil, err
	}
	q := &Prefix{tokens: slices.Clone(p.tokens[:n]), target: t}
	if p.draft != nil {
		k := min(n, len(p.draftSeen))
		d, err := p.draft.Model().NewState(p.draft.Cache.Cap())
		if err != nil {
			return nil, err
		}
		if err := d.Cache.CopyFrom(p.draft.Cache, k); err != nil {
			return nil, err
		}
		q.draft, q.draftSeen = d, slices.Clone(p.draftSeen[:k])
	}
	return q, nil
}
