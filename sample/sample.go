// Package sample owns turning logits into tokens: greedy choice, and
// seeded stochastic sampling with llama.cpp's processor chain (repetition
// penalty, top-k, top-p, min-p, temperature) so that the same seed always
// gives the same tokens. Speculative verification uses Distribution to get
// the exact probabilities a Sampler draws from.
package sample

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// Params configure a Sampler. The zero value with Temp 0 is greedy.
type Params struct {
	Temp          float32 // 0: greedy; in [0, 100]
	TopK          int     // ≤ 0: off
	TopP          float32 // ≥ 1 or ≤ 0: off
	MinP          float32 // ≤ 0: off
	RepeatPenalty float32 // 1 or 0: off
	RepeatLastN   int     // tokens of history the penalty looks at (default 64)
	Seed          uint64
}

// Defaults are llama.cpp's sampling defaults.
func Defaults() Params {
	return Params{Temp: 0.8, TopK: 40, TopP: 0.95, MinP: 0.05, RepeatPenalty: 1, RepeatLastN: 64, Seed: 0}
}

// Validate reports parameters that make no sense.
func (p Params) Validate() error {
	switch {
	case !(p.Temp >= 0 && p.Temp <= 100): // NaN and -Inf too
		return fmt.Errorf("sample: temperature %v out of range [0, 100]", p.Temp)
	case p.TopP < 0 || p.TopP > 1 || math.IsNaN(float64(p.TopP)):
		return fmt.Errorf("sample: top-p %v out of range [0, 1]", p.TopP)
	case p.MinP < 0 || p.MinP > 1 || math.IsNaN(float64(p.MinP)):
		return fmt.Errorf("sample: min-p %v out of range [0, 1]", p.MinP)
	case p.RepeatPenalty < 0 || p.RepeatPenalty > 10 || math.IsNaN(float64(p.RepeatPenalty)):
		return fmt.Errorf("sample: repeat penalty %v out of range [0, 10]", p.RepeatPenalty)
	case math.IsInf(float64(p.TopP), 0) || math.IsInf(float64(p.MinP), 0):
		return fmt.Errorf("sample: top-p and min-p must be finite")
	case p.TopK < 0:
		return fmt.Errorf("sample: top-k %d is negative", p.TopK)
	case p.RepeatLastN < 0:
		return fmt.Errorf("sample: repeat-last-n %d is negative", p.RepeatLastN)
	}
	return nil
}

// Greedy reports whether p always picks the most likely token.
func (p Params) Greedy() bool { return p.Temp <= 0 }

// Candidate is a token with its (processed) logit, then its probability.
type Candidate struct {
	ID    int32
	Logit float32
	P     float32
}

// Sampler draws tokens. It remembers the tokens it is told of (Accept) for
// the repetition penalty. Not safe for concurrent use.
type Sampler struct {
	p       Params
	rng     *rand.Rand
	history []int32
	cand    []Candidate
	con     Constraint // nil: every token may come next
}

// New returns a Sampler; invalid parameters are an error.
func New(p Params) (*Sampler, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if p.RepeatLastN == 0 {
		p.RepeatLastN = 64
	}
	return &Sampler{p: p, rng: rand.New(rand.NewPCG(p.Seed, p.Seed^0x9e3779b97f4a7c15))}, nil
}

// Params returns the sampler's parameters.
func (s *Sampler) Params() Params { return s.p }

// Accept records a token that became part of the sequence (prompt or output).
func (s *Sampler) Accept(tok int32) {
	if s.con != nil {
		s.con.Accept(tok)
	}
	s.history = append(s.history, tok)
	if n := s.p.RepeatLastN; len(s.history) > 4*n && n > 0 {
		s.history = append(s.history[:0], s.history[len(s.history)-n:]...)
	}
}

// Reset forgets the history.
func (s *Sampler) Reset() { s.history = s.history[:0] }

// Argmax returns the index of the largest logit (the lowest index on ties).
// NaNs are never the largest; a row of nothing but NaN and -Inf gives 0.
func Argmax(logits []float32) int32 {
	best := 0
	bestV := float32(math.Inf(-1))
	for i, v := range logits {
		if v > bestV {
			best, bestV = i, v
		}
	}
	return int32(best)
}

// Sample picks the next token from one row of logits.
func (s *Sampler) Sample(logits []float32) int32 {
	if len(logits) == 0 {
		return 0
	}
	if s.p.Greedy() && !s.penalized() {
		if s.con != nil {
			return maskedArgmax(logits, s.con.Mask())
		}
		return Argmax(logits)
	}
	cand := s.Distribution(logits)
	if s.p.Greedy() {
		return cand[0].ID
	}
	r := s.rng.Float32()
	var acc float32
	for _, c := range cand {
		acc += c.P
		if r < acc {
			return c.ID
		}
	}
	return cand[len(cand)-1].ID
}

func (s *Sampler) penalized() bool {
	return s.p.RepeatPenalty != 0 && s.p.RepeatPenalty != 1 && len(s.history) > 0
}

// Distribution applies the processor chain to logits and returns the
// surviving candidates, most likely first, with probabilities that sum to 1.
// The slice is reused by the next call. Logits need not be finite: a NaN
// counts as -Inf, tokens at +Inf share all the probability, and a row with
// no finite logit at all gives every token the same. (A decoder should
// still refuse such a row from a model: it says the model is broken.)
func (s *Sampler) Distribution(logits []float32) []Candidate {
	cand := s.cand[:0]
	for i, l := range logits {
		if l != l {
			l = float32(math.Inf(-1))
		}
		cand = append(cand, Candidate{ID: int32(i), Logit: l})
	}
	if len(cand) == 0 {
		return cand
	}
	if s.penalized() {
		hist := s.history[max(0, len(s.history)-s.p.RepeatLastN):]
		seen := make(map[int32]bool, len(hist))
		for _, t := range hist {
			if t < 0 || int(t) >= len(cand) || seen[t] {
				continue
			}
			seen[t] = true
			if l := cand[t].Logit; l > 0 {
				cand[t].Logit = l / s.p.RepeatPenalty
			} else {
				cand[t].Logit = l * s.p.RepeatPenalty
			}
		}
	}
	if s.con != nil {
		cand = s.constrain(cand)
	}
	byLogit := func(a, b Candidate) int {
		if a.Logit != b.Logit {
			if a.Logit > b.Logit {
				return -1
			}
			return 1
		}
		return int(a.ID - b.ID)
	}
	if k := s.p.TopK; k > 0 && k < len(cand) {
		cand = topK(cand, k, byLogit)
	} else {
		slices.SortFunc(cand, byLogit)
	}
	if s.p.Greedy() {
		cand = cand[:1]
		cand[0].P = 1
		s.cand = cand
		return cand
	}
	softmax(cand, 1)
	if p := s.p.TopP; p > 0 && p < 1 {
		var acc float32
		for i := range cand {
			acc += cand[i].P
			if acc >= p {
				cand = cand[:i+1]
				break
			}
		}
	}
	if m := s.p.MinP; m > 0 {
		floor := cand[0].P * m
		for i := range cand {
			if cand[i].P < floor {
				cand = cand[:max(i, 1)]
				break
			}
		}
	}
	softmax(cand, s.p.Temp)
	s.cand = cand
	return cand
}

// topK keeps the k best candidates, sorted, by partial selection.
func topK(cand []Candidate, k int, cmp func(a, b Candidate) int) []Candidate {
	// A k-element min-heap of the best seen so far.
	h := cand[:k]
	slices.SortFunc(h, cmp)
	worst := h[k-1]
	for _, c := range cand[k:] {
		if cmp(c, worst) < 0 {
			i, _ := slices.BinarySearchFunc(h, c, cmp)
			copy(h[i+1:], h[i:k-1])
			h[i] = c
			worst = h[k-1]
		}
	}
	return h
}

// softmax sets P from Logit/temp over the (sorted) candidates.
func softmax(cand []Candidate, temp float32) {
	if temp <= 0 {
		temp = 1
	}
	maxL := cand[0].Logit
	var sum float64
	for i := range cand {
		var e float64
		switch d := cand[i].Logit - maxL; {
		case d == d:
			e = math.Exp(float64(d / temp))
		case math.IsInf(float64(maxL), 0) && cand[i].Logit == maxL:
			e = 1 // ±Inf - ±Inf: as likely as the best
		}
		cand[i].P = float32(e)
		sum += e
	}
	for i := range cand {
		cand[i].P = float32(float64(cand[i].P) / sum)
	}
}

// Uniform draws a number in [0, 1) from the sampler's seeded stream;
// speculative sampling uses it for its accept/reject tests so that a seed
// fixes the whole output.
func (s *Sampler) Uniform() float32 { return s.rng.Float32() }
