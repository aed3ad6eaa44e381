package grammar

import (
	"errors"
	"fmt"
	"slices"
	"unsafe"
)

// The pushdown automaton is llama.cpp's: a stack is a list of positions in
// the grammar (the top is the next element to match, always a byte set
// once expanded; below it, where each enclosing rule continues), and the
// automaton's configuration is a set of stacks. Here stack frames are
// hash-consed (a frame is its position plus its parent frame, so equal
// stacks are equal ids), and so are stack sets: a set of stacks is a state
// of a DFA over bytes whose transitions are computed the first time they
// are taken and then looked up. Grammar text that loops (string contents,
// whitespace, digits) reaches the same few states again and again.

// Limits of one DFA: past them matching fails with ErrTooComplex.
const (
	maxFrames      = 1 << 20
	maxStates      = 1 << 15
	maxStackSet    = 1 << 12 // stacks in one state (an ambiguous grammar grows these)
	maxStackHeight = 1 << 12
)

// ErrTooComplex is returned when a grammar's automaton outgrows its limits
// (a very ambiguous grammar, or nesting deeper than 4096).
var ErrTooComplex = errors.New("grammar: the grammar's automaton outgrew its limits (too ambiguous or too deeply nested)")

const (
	stEmpty = -1 // the empty stack: the grammar has matched completely
	dead    = -1 // no state: the byte is refused
	unknown = 0  // transition not computed yet
)

type frame struct {
	pos    int32
	parent int32 // frame id, or stEmpty
}

type dstate struct {
	stacks    []int32 // sorted frame ids (stEmpty first when present)
	accepting bool
	dist      int32 // fewest bytes to a complete match
}

// dfa is the lazily built automaton of one grammar, shared by a Matcher and
// its clones (not safe for concurrent use).
type dfa struct {
	g        *Grammar
	frames   []frame
	height   []int32
	fdist    []int32 // per frame: the fewest bytes to empty the stack it tops
	frameIdx map[frame]int32
	states   []dstate // state ids start at 1
	tr       []int32  // transitions: tr[s<<8|b], unknown until taken
	dist     []int32  // per state: its dstate's dist, apart for the mask walk's locality
	stateIdx map[string]int32
	err      error
	// scratch
	seen map[int32]struct{}
	vis  map[frame]struct{}
	buf  []int32
}

func newDFA(g *Grammar) *dfa {
	d := &dfa{g: g, frameIdx: map[frame]int32{}, stateIdx: map[string]int32{}, states: make([]dstate, 1), tr: make([]int32, 256), dist: make([]int32, 1), seen: map[int32]struct{}{}, vis: map[frame]struct{}{}}
	return d
}

func (d *dfa) frame(pos, parent int32) int32 {
	f := frame{pos, parent}
	if id, ok := d.frameIdx[f]; ok {
		return id
	}
	if len(d.frames) >= maxFrames {
		d.err = ErrTooComplex
		return stEmpty
	}
	h, fd := int32(1), d.g.minLen[pos]
	if parent != stEmpty {
		h += d.height[parent]
		fd = min(fd+d.fdist[parent], inf)
	}
	id := int32(len(d.frames))
	d.frames = append(d.frames, f)
	d.height = append(d.height, h)
	d.fdist = append(d.fdist, fd)
	d.frameIdx[f] = id
	return id
}

// expand adds to d.buf every stack that matching from position pos with
// the continuation parent can be in, with a byte set on top (or the empty
// stack).
func (d *dfa) expand(pos, parent int32) {
	g := d.g
	for {
		// Nullable rules reach one position by many routes: follow each once.
		if _, ok := d.vis[frame{pos, parent}]; ok {
			return
		}
		d.vis[frame{pos, parent}] = struct{}{}
		e := g.elems[pos]
		switch e.kind {
		case eEnd:
			if parent == stEmpty {
				d.add(stEmpty)
				return
			}
			f := d.frames[parent]
			pos, parent = f.pos, f.parent
			continue
		case eRef:
			cont := parent
			if g.elems[pos+1].kind != eEnd {
				// A reference in tail position needs no frame of its own:
				// right recursion then keeps the stack flat.
				cont = d.frame(pos+1, parent)
				if d.err != nil {
					return
				}
				if d.height[cont] > maxStackHeight {
					return // deeper than we follow: this path is refused
				}
			}
			for _, a := range g.alts[e.arg] {
				d.expand(a, cont)
				if d.err != nil {
					return
				}
			}
			return
		case eSet:
			f := d.frame(pos, parent)
			if d.err == nil {
				d.add(f)
			}
			return
		}
	}
}

func (d *dfa) add(f int32) {
	if _, ok := d.seen[f]; ok {
		return
	}
	d.seen[f] = struct{}{}
	d.buf = append(d.buf, f)
	if len(d.buf) > maxStackSet {
		d.err = ErrTooComplex
	}
}

// intern returns the state of the stack set in d.buf (dead when empty).
func (d *dfa) intern() int32 {
	clear(d.seen)
	clear(d.vis)
	if d.err != nil || len(d.buf) == 0 {
		d.buf = d.buf[:0]
		return dead
	}
	slices.Sort(d.buf)
	key := unsafe.String((*byte)(unsafe.Pointer(&d.buf[0])), len(d.buf)*4)
	if id, ok := d.stateIdx[key]; ok {
		d.buf = d.buf[:0]
		return id
	}
	if len(d.states) > maxStates {
		d.err = ErrTooComplex
		d.buf = d.buf[:0]
		return dead
	}
	st := dstate{stacks: slices.Clone(d.buf), dist: inf}
	for _, f := range st.stacks {
		if f == stEmpty {
			st.accepting = true
			st.dist = 0
		} else {
			st.dist = min(st.dist, d.fdist[f])
		}
	}
	id := int32(len(d.states))
	d.states = append(d.states, st)
	d.tr = append(d.tr, make([]int32, 256)...)
	d.dist = append(d.dist, st.dist)
	d.stateIdx[string(unsafe.Slice((*byte)(unsafe.Pointer(&st.stacks[0])), len(st.stacks)*4))] = id
	d.buf = d.buf[:0]
	return id
}

// start is the state before any byte.
func (d *dfa) start() int32 {
	for _, a := range d.g.alts[d.g.root] {
		d.expand(a, stEmpty)
	}
	return d.intern()
}

// next is the state after byte b from state s (dead if b is refused).
func (d *dfa) next(s int32, b byte) int32 {
	if t := d.tr[int(s)<<8|int(b)]; t != unknown {
		return t
	}
	g := d.g
	for _, f := range d.states[s].stacks {
		if f == stEmpty {
			continue
		}
		fr := d.frames[f]
		if !g.sets[g.elems[fr.pos].arg].has(b) {
			continue
		}
		d.expand(fr.pos+1, fr.parent)
		if d.err != nil {
			break
		}
	}
	t := d.intern()
	if d.err != nil {
		return dead // not cached: the error stays
	}
	d.tr[int(s)<<8|int(b)] = t
	return t
}

// firstByte returns a byte that leads from s to a state closer to a
// complete match, or -1.
func (d *dfa) firstByte(s int32) int {
	st := &d.states[s]
	g := d.g
	for _, f := range st.stacks {
		if f == stEmpty || d.fdist[f] != st.dist {
			continue
		}
		return g.sets[g.elems[d.frames[f].pos].arg].first()
	}
	return -1
}

func (d *dfa) describe(s int32) string {
	return fmt.Sprintf("state %d (%d stacks, %d bytes from complete)", s, len(d.states[s].stacks), d.states[s].dist)
}
