package speculate

import (
	"math"

	"shade/sample"
)

// A constraint that can be cloned lets the draft model follow it down
// every path of a tree (package grammar's Matcher is one).
type constraintCloner interface {
	CloneConstraint() sample.Constraint
}

// SetConstraint makes the drafts follow c, the target's constraint where
// the next draft starts; nil (or a constraint that cannot be cloned)
// drafts unconstrained, and verification still refuses what c refuses.
func (d *ModelDrafter) SetConstraint(c sample.Constraint) {
	if _, ok := c.(constraintCloner); !ok {
		c = nil
	}
	d.con = c
}

// nodeConstraint is the constraint at node p (-1: the pending token).
func (d *ModelDrafter) nodeConstraint(p int32) sample.Constraint {
	if p < 0 {
		return d.con
	}
	return d.nodeCon[p]
}

func (d *ModelDrafter) childConstraint(parent, tok int32) sample.Constraint {
	c := d.nodeConstraint(parent).(constraintCloner).CloneConstraint()
	c.Accept(tok)
	return c
}

// mask returns node p's draft logits with the tokens its constraint
// refuses at -Inf (a copy), or nil when it refuses them all.
func (d *ModelDrafter) mask(p int32, logits []float32) []float32 {
	m := d.nodeConstraint(p).Mask()
	if cap(d.masked) < len(logits) {
		d.masked = make([]float32, len(logits))
	}
	out := d.masked[:len(logits)]
	any := false
	ninf := float32(math.Inf(-1))
	for i, l := range logits {
		if m[i>>6]&(1<<(i&63)) != 0 {
			out[i] = l
			any = true
		} else {
			out[i] = ninf
		}
	}
	if !any {
		return nil
	}
	return out
}

// allower is a constraint that answers for one token cheaply.
type allower interface {
	Allows(tok int32) bool
}

// proposeNgram is g.Propose with the chain cut at the first token the
// target's constraint refuses: the target would reject it (and everything
// after it) anyway, so the cut saves verify rows and changes no output.
func (s *Step) proposeNgram(g *Ngram, k int) int {
	n := g.Propose(s.Context, k, s.Tree)
	c, ok := s.Sampler.Constraint().(constraintCloner)
	if n == 0 || !ok {
		return n
	}
	t := s.Tree
	start := t.Len() - n
	m := c.CloneConstraint()
	a, ok := m.(allower)
	if !ok {
		return n
	}
	for i := start; i < t.Len(); i++ {
		if !a.Allows(t.Tokens[i]) {
			t.Tokens, t.Parent, t.Q = t.Tokens[:i], t.Parent[:i], t.Q[:i]
			return i - start
		}
		m.Accept(t.Tokens[i])
	}
	return n
}
