package speculate

import "shade/sample"

// verifier walks a drafted tree against the target's logits and decides,
// node by node, which draft tokens the target keeps. Greedy: a child is
// kept when it is the token the target itself would pick. Stochastic:
// speculative sampling — a child x drawn from the draft distribution q is
// kept with probability min(1, p(x)/q(x)); after a rejection the target
// distribution becomes the normalized residual max(p − q, 0) and x is taken
// out of q (siblings are drawn from q without replacement), so the token
// finally produced is distributed exactly as p (Leviathan et al. and Chen
// et al. for chains; SpecInfer and Sequoia for trees). A deterministic
// proposal (q = nil) is a point mass: kept with probability p(x).
type verifier struct {
	sampler *sample.Sampler
	p, q    []float32 // dense, vocab-sized
	kids    []int32
	// skip, when set, marks nodes pruned from verification: their rows
	// were not computed to the end. A pruned node is still a candidate,
	// verified against its parent's row like any other (dropping it would
	// make the candidates depend on which tokens were drawn, since pruning
	// looks at them, and speculative sampling is exact only over the draws
	// as drawn); accepted, its token ends the step as the one produced
	// after the path, since its own row's logits are not there to go on.
	skip []bool
	// onToken, if set, sees every token the walk produces with the
	// target's logits of the row it was chosen from (Decoder.OnToken).
	onToken func(logits []float32, token int32)
}

func newVerifier(s *sample.Sampler, vocab int) *verifier {
	return &verifier{sampler: s, p: make([]float32, vocab), q: make([]float32, vocab)}
}

// walk verifies tree t. logits(row) returns the target's logits for batch
// row 0 (the pending token) or node i (row i+1); it is called only for the
// rows on the path being accepted. walk returns the accepted nodes, in
// order, and the token the target produces after them. Accepted tokens are
// recorded in the sampler's history (for its repetition penalty); the
// returned token is not.
func (v *verifier) walk(t *Tree, logits func(row int) ([]float32, error), path []int32) ([]int32, int32, error) {
	cur := int32(-1)
	for {
		l, err := logits(int(cur) + 1)
		if err != nil {
			return path, 0, err
		}
		v.kids = t.Children(cur, v.kids[:0])
		var next int32
		var bonus int32
		if v.sampler.Params().Greedy() {
			next, bonus = v.greedy(t, l)
		} else {
			next, bonus = v.stochastic(t, l)
		}
		if next >= 0 && v.skip != nil && v.skip[next] {
			next, bonus = -1, t.Tokens[next] // pruned: the step ends with it
		}
		if v.onToken != nil {
			tok := bonus
			if next >= 0 {
				tok = t.Tokens[next]
			}
			v.onToken(l, tok)
		}
		if next < 0 {
			return path, bonus, nil
		}
		path = append(path, next)
		v.sampler.Accept(t.Tokens[next])
		cur = next
	}
}

func (v *verifier) greedy(t *Tree, logits []float32) (int32, int32) {
	x := v.sampler.Sample(logits)
	for _, k := range v.kids {
		if t.Tokens[k] == x {
			return k, 0
		}
	}
	return -1, x
}

func (v *verifier) stochastic(t *Tree, logits []float32) (int32, int32) {
	p := v.p
	clear(p)
	dist := v.sampler.Distribution(logits)
	for _, c := range dist {
		p[c.ID] = c.P
	}
	if len(v.kids) == 0 {
		return -1, v.draw(p, dist)
	}
	var group []sample.Candidate // the q the current siblings were drawn from
	q := v.q
	for _, k := range v.kids {
		x := t.Tokens[k]
		qk := t.Q[k]
		var accept float32
		if qk == nil {
			accept = p[x]
		} else {
			if group == nil || &group[0] != &qk[0] {
				group = qk
				clear(q)
				for _, c := range qk {
					q[c.ID] = c.P
				}
			}
			if q[x] > 0 {
				accept = min(1, p[x]/q[x])
			}
		}
		if v.sampler.Uniform() < accept {
			return k, 0
		}
		// Rejected: move to the residual distribution.
		if qk == nil {
			p[x] = 0
		} else {
			for i, qi := range q {
				if qi > 0 {
					p[i] = max(p[i]-qi, 0)
				}
			}
			q[x] = 0
			normalize(q)
		}
		if !normalize(p) {
			// p ≤ q everywhere means p = q up to rounding, where every
			// proposal is accepted; rounding can still land here. Fall
			// back to the target's own distribution.
			clear(p)
			for _, c := range dist {
				p[c.ID] = c.P
			}
		}
	}
	return -1, v.draw(p, dist)
}

// draw samples a token from the dense distribution p; dist lists the
// candidates p can be non-zero on.
func (v *verifier) draw(p []float32, dist []sample.Candidate) int32 {
	r := v.sampler.Uniform()
	var acc float32
	last := dist[0].ID
	for _, c := range dist {
		if p[c.ID] <= 0 {
			continue
		}
		acc += p[c.ID]
		last = c.ID
		if r < acc {
			return c.ID
		}
	}
	return last
}

// normalize scales p to sum to 1; false when it sums to zero.
func normalize(p []float32) bool {
	var sum float64
	for _, x := range p {
		sum += float64(x)
	}
	if sum <= 0 {
		return false
	}
	inv := float32(1 / sum)
	for i := range p {
		p[i] *= inv
	}
	return true
}
