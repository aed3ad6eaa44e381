package grammar

import (
	"fmt"

	"shade/sample"
)

// Matcher follows one generation through a grammar: Mask says which
// tokens may come next, Accept advances by the token chosen. Clones share
// the automaton and the mask cache, so exploring speculative paths costs a
// copy of a few words; a Matcher and its clones must stay on one goroutine.
//
// A budget (SetBudget) makes the output end valid however the tokens are
// chosen: once the tokens left get close to the shortest completion, only
// tokens that keep a completion within reach are allowed (counting one
// token per byte: every vocabulary of this family has a token per byte).
type Matcher struct {
	sh     *shared
	st     int32
	budget int // tokens that may still be generated; < 0: no limit
	done   bool
	err    error
}

type shared struct {
	g     *Grammar
	v     *Vocab
	d     *dfa
	masks map[int32]*cachedMask
	order []int32 // FIFO eviction of masks
	stk   []int32
	tmp   []uint64
}

type cachedMask struct {
	bits    []uint64
	maxDist int32 // the largest distance a token of bits leads to
}

// maxMasks bounds the mask cache (a 128k vocabulary's mask is 16 KiB).
const maxMasks = 256

// NewMatcher starts matching g against vocabulary v.
func (g *Grammar) NewMatcher(v *Vocab) *Matcher {
	sh := &shared{g: g, v: v, d: newDFA(g), masks: map[int32]*cachedMask{}, stk: make([]int32, maxTokenBytes+1)}
	m := &Matcher{sh: sh, budget: -1}
	m.st = sh.d.start()
	if m.st == dead {
		m.err = sh.d.err
		if m.err == nil {
			m.err = fmt.Errorf("grammar: the grammar matches nothing")
		}
	}
	return m
}

// Clone returns an independent copy of m's position (sharing its caches).
func (m *Matcher) Clone() *Matcher {
	c := *m
	return &c
}

// Err is why matching failed: a token the grammar refuses was accepted, no
// token of the vocabulary can continue the match, or the automaton grew
// too large. nil while all is well.
func (m *Matcher) Err() error { return m.err }

// Accepting reports whether the text so far is a complete match.
func (m *Matcher) Accepting() bool {
	return m.err == nil && m.st > 0 && m.sh.d.states[m.st].accepting
}

// Done reports whether an end-of-generation token was accepted.
func (m *Matcher) Done() bool { return m.done }

// Remaining is the fewest bytes that complete the match from here.
func (m *Matcher) Remaining() int {
	if m.err != nil || m.st <= 0 {
		return 0
	}
	return int(m.sh.d.states[m.st].dist)
}

// SetBudget sets how many tokens may still be generated (< 0: no limit).
// Each accepted token uses one.
func (m *Matcher) SetBudget(n int) { m.budget = n }

// Budget is the tokens left (< 0: no limit).
func (m *Matcher) Budget() int { return m.budget }

// Vocab is the vocabulary m masks.
func (m *Matcher) Vocab() *Vocab { return m.sh.v }

// AcceptBytes advances by text that is already part of the output (a
// forced prefix); it does not use the budget.
func (m *Matcher) AcceptBytes(text []byte) error {
	if m.err != nil {
		return m.err
	}
	d := m.sh.d
	for _, b := range text {
		t := d.next(m.st, b)
		if t == dead {
			if d.err != nil {
				m.err = d.err
			} else {
				m.err = fmt.Errorf("grammar: the text %q is not allowed here", text)
			}
			return m.err
		}
		m.st = t
	}
	return nil
}

// Accept advances by token tok. A token the grammar refuses makes Err
// non-nil (and the matcher stays where it was).
func (m *Matcher) Accept(tok int32) {
	if m.err != nil {
		return
	}
	v := m.sh.v
	if m.done {
		// Speculation may verify past the end; only more ends are allowed
		// there, and the generation stops at the first.
		if !v.isEOG(tok) {
			m.err = fmt.Errorf("grammar: token %d after the end of generation", tok)
		}
		return
	}
	if tok < 0 || int(tok) >= v.n {
		m.err = fmt.Errorf("grammar: token %d out of range [0, %d)", tok, v.n)
		return
	}
	if m.budget > 0 {
		m.budget--
	}
	if v.isEOG(tok) {
		if !m.Accepting() {
			m.err = fmt.Errorf("grammar: end of generation before the grammar matched completely")
			return
		}
		m.done = true
		return
	}
	text := v.text[tok]
	if text == nil {
		m.err = fmt.Errorf("grammar: special token %d is never allowed", tok)
		return
	}
	st := m.st
	d := m.sh.d
	for _, b := range text {
		if st = d.next(st, b); st == dead {
			if d.err != nil {
				m.err = d.err
			} else {
				m.err = fmt.Errorf("grammar: token %d (%q) is not allowed here", tok, text)
			}
			return
		}
	}
	m.st = st
}

// Allows reports whether tok may come next (ignoring the budget).
func (m *Matcher) Allows(tok int32) bool {
	if m.err != nil || m.done || tok < 0 || int(tok) >= m.sh.v.n {
		return false
	}
	v := m.sh.v
	if v.isEOG(tok) {
		return m.Accepting()
	}
	if v.text[tok] == nil {
		return false
	}
	st := m.st
	for _, b := range v.text[tok] {
		if st = m.sh.d.next(st, b); st == dead {
			return false
		}
	}
	return true
}

func (v *Vocab) isEOG(tok int32) bool {
	for _, e := range v.eog {
		if e == tok {
			return true
		}
	}
	return false
}

// Mask returns the tokens allowed next as a bit set (token i is bit i%64
// of word i/64), within the budget. The slice is shared: it must not be
// modified and is valid until the next call on m or a clone. When nothing
// at all can follow (a grammar the vocabulary cannot spell, or a failed
// match) Err says why and the end-of-generation tokens are allowed, so a
// generation always has a way to stop.
func (m *Matcher) Mask() []uint64 {
	sh := m.sh
	words := maskWords(sh.v.n)
	if m.err != nil || m.done || m.st <= 0 {
		if m.err == nil && !m.done {
			m.err = fmt.Errorf("grammar: no state")
		}
		return m.eogOnly()
	}
	limit := int32(inf)
	if m.budget >= 0 {
		// Too small a budget to finish still moves toward completion.
		limit = int32(max(m.budget-1, int(sh.d.states[m.st].dist)-1, 0))
	}
	c := sh.masks[m.st]
	if c == nil {
		bits := make([]uint64, words)
		maxDist := sh.v.walk(sh.d, m.st, bits, inf, sh.stk)
		if sh.d.err != nil {
			m.err = sh.d.err
			return m.eogOnly()
		}
		if m.Accepting() {
			for _, e := range sh.v.eog {
				bits[e>>6] |= 1 << (e & 63)
			}
		}
		c = &cachedMask{bits: bits, maxDist: maxDist}
		if len(sh.order) >= maxMasks {
			delete(sh.masks, sh.order[0])
			sh.order = sh.order[1:]
		}
		sh.masks[m.st] = c
		sh.order = append(sh.order, m.st)
	}
	bits := c.bits
	if c.maxDist > limit {
		// Close to the end of the budget: only tokens that keep a
		// completion within reach.
		if len(sh.tmp) != words {
			sh.tmp = make([]uint64, words)
		}
		clear(sh.tmp)
		sh.v.walk(sh.d, m.st, sh.tmp, limit, sh.stk)
		if m.Accepting() {
			for _, e := range sh.v.eog {
				sh.tmp[e>>6] |= 1 << (e & 63)
			}
		}
		bits = sh.tmp
	}
	if empty(bits) {
		if m.Accepting() {
			// Complete, with no end-of-generation token to say so: the
			// generation stops on its budget.
			m.err = fmt.Errorf("grammar: the match is complete but the vocabulary has no end-of-generation token")
		} else {
			m.err = fmt.Errorf("grammar: no token of the vocabulary can continue the match (%s)", sh.d.describe(m.st))
		}
		return m.eogOnly()
	}
	return bits
}

func (m *Matcher) eogOnly() []uint64 {
	sh := m.sh
	words := maskWords(sh.v.n)
	if len(sh.tmp) != words {
		sh.tmp = make([]uint64, words)
	}
	clear(sh.tmp)
	for _, e := range sh.v.eog {
		sh.tmp[e>>6] |= 1 << (e & 63)
	}
	return sh.tmp
}

func empty(bits []uint64) bool {
	for _, w := range bits {
		if w != 0 {
			return false
		}
	}
	return true
}

// Shortest returns bytes that complete the match from here by a shortest
// route (empty when complete).
func (m *Matcher) Shortest() []byte {
	var out []byte
	if m.err != nil || m.st <= 0 {
		return nil
	}
	d := m.sh.d
	st := m.st
	for !d.states[st].accepting {
		b := d.firstByte(st)
		if b < 0 {
			return out
		}
		st = d.next(st, byte(b))
		if st == dead {
			return out
		}
		out = append(out, byte(b))
	}
	return out
}

// CloneConstraint is Clone as a sample.Constraint: speculative drafting
// follows the grammar down every path of a draft tree with it.
func (m *Matcher) CloneConstraint() sample.Constraint { return m.Clone() }
