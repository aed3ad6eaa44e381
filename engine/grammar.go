package engine

import (
	"fmt"

	"shade/grammar"
)

// startGrammar gives the session's sampler the request's grammar (after
// the prompt's tokens went into its history), with a budget of the tokens
// the session may still generate so the output always ends complete.
func (s *Session) startGrammar() error {
	g := s.r.Grammar
	if g == nil {
		return nil
	}
	m := g.NewMatcher(grammar.TokenizerVocab(s.e.Tok))
	if err := m.Err(); err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	budget := s.n - len(s.prompt) - 1
	if s.r.MaxTokens > 0 {
		budget = min(budget, s.r.MaxTokens)
	}
	m.SetBudget(budget)
	s.matcher = m
	s.sampler.SetConstraint(m)
	// The text is what the grammar matched, byte for byte.
	s.detok.Exact = true
	return nil
}

// grammarErr is why the grammar could not be followed (nil normally).
func (s *Session) grammarErr() error {
	if s.matcher == nil || s.matcher.Err() == nil {
		return nil
	}
	return fmt.Errorf("engine: %w", s.matcher.Err())
}

// lengthReason is the stop reason at the token limit: "eos" when the
// grammar has matched completely there (the budget made the output end
// complete: a finished document, as clients expect from finish_reason
// "stop"), "length" otherwise.
func (s *Session) lengthReason() string {
	if s.matcher != nil && s.matcher.Accepting() {
		return "eos"
	}
	return "length"
}
