package sample

import (
	"math"
	"math/bits"
)

// Constraint restricts which tokens may come next (a grammar: package
// grammar's Matcher is one). A Sampler with a constraint samples from the
// distribution its processors give, renormalized over the allowed tokens,
// and Accept advances the constraint along with the history; so plain
// decoding and speculative verification, which both go through Sample,
// Distribution and Accept, produce the same constrained distribution.
type Constraint interface {
	// Mask returns the tokens allowed next as a bit set: token i is bit
	// i%64 of word i/64. The sampler does not keep or modify it.
	Mask() []uint64
	// Accept advances past tok.
	Accept(tok int32)
}

// SetConstraint makes the sampler draw only tokens c allows, and Accept
// advance c; nil removes it. Set it after the prompt's tokens are
// accepted: they are not the constraint's business.
func (s *Sampler) SetConstraint(c Constraint) { s.con = c }

// Constraint returns the constraint set by SetConstraint (or nil).
func (s *Sampler) Constraint() Constraint { return s.con }

func allowed(mask []uint64, id int32) bool {
	w := int(id >> 6)
	return w < len(mask) && mask[w]&(1<<(id&63)) != 0
}

// constrain is the processor step that drops the candidates the
// constraint refuses. If it refuses everything (a constraint that failed:
// it reports why itself) the candidates are left as they are, so that a
// token can still be drawn.
func (s *Sampler) constrain(cand []Candidate) []Candidate {
	mask := s.con.Mask()
	n := 0
	for _, c := range cand {
		if allowed(mask, c.ID) {
			n++
		}
	}
	if n == 0 {
		return cand
	}
	out := cand[:0]
	for _, c := range cand {
		if allowed(mask, c.ID) {
			out = append(out, c)
		}
	}
	return out
}

// maskedArgmax is Argmax over the allowed tokens (Argmax of all when none is).
func maskedArgmax(logits []float32, mask []uint64) int32 {
	best := -1
	bestV := float32(math.Inf(-1))
	for w, word := range mask {
		for word != 0 {
			b := bits.TrailingZeros64(word)
			word &^= 1 << b
			i := w*64 + b
			if i >= len(logits) {
				break
			}
			if v := logits[i]; v > bestV || best < 0 && v == v {
				best, bestV = i, v
			}
		}
	}
	if best < 0 {
		return Argmax(logits)
	}
	return int32(best)
}
