package grammar

import (
	"fmt"
	"math"
	"unicode/utf8"
)

// Grammar is a compiled grammar: rules whose alternatives are sequences of
// byte sets and rule references, laid out flat. It is immutable and safe for
// concurrent use; Matchers follow generations against it.
type Grammar struct {
	elems  []elem
	sets   []byteSet
	alts   [][]int32 // per rule: where each alternative starts in elems
	names  []string  // per rule ("" for the ones the compiler made)
	minLen []int32   // per element: the fewest bytes that finish its alternative from it
	root   int32
	src    string // the GBNF text it was parsed from
}

type elemKind uint8

const (
	eEnd elemKind = iota // end of an alternative
	eRef                 // a rule reference: arg is the rule
	eSet                 // one byte from a set: arg is the set
)

type elem struct {
	kind elemKind
	arg  int32
}

type byteSet [4]uint64

func (s *byteSet) has(b byte) bool { return s[b>>6]&(1<<(b&63)) != 0 }
func (s *byteSet) add(lo, hi byte) {
	for c := int(lo); c <= int(hi); c++ {
		s[c>>6] |= 1 << (c & 63)
	}
}
func (s *byteSet) first() int {
	for c := 0; c < 256; c++ {
		if s.has(byte(c)) {
			return c
		}
	}
	return -1
}

// Source returns the GBNF text of the grammar.
func (g *Grammar) Source() string { return g.src }

// Parse compiles a GBNF grammar (llama.cpp's format) whose start rule is
// "root".
func Parse(src string) (*Grammar, error) {
	p, err := parseGBNF(src)
	if err != nil {
		return nil, err
	}
	g, err := compile(p, "root")
	if err != nil {
		return nil, err
	}
	g.src = src
	return g, nil
}

// MustParse is Parse for grammars known to be valid; it panics otherwise.
func MustParse(src string) *Grammar {
	g, err := Parse(src)
	if err != nil {
		panic(err)
	}
	return g
}

// item is an element before layout.
type item struct {
	kind elemKind
	arg  int32
}

type compiler struct {
	p       *parser
	index   map[string]int32
	rules   [][][]item // per rule, per alternative
	names   []string
	sets    []byteSet
	setIdx  map[byteSet]int32
	nitems  int
	exprIdx map[*node]int32 // subexpressions already made rules
}

func (c *compiler) grow(n int) error {
	c.nitems += n
	if c.nitems > maxElems {
		return fmt.Errorf("grammar: more than %d elements once repetitions are expanded: make the repetition counts smaller", maxElems)
	}
	return nil
}

func (c *compiler) set(s byteSet) item {
	i, ok := c.setIdx[s]
	if !ok {
		i = int32(len(c.sets))
		c.sets = append(c.sets, s)
		c.setIdx[s] = i
	}
	return item{eSet, i}
}

func (c *compiler) newRule(name string) int32 {
	c.rules = append(c.rules, nil)
	c.names = append(c.names, name)
	return int32(len(c.rules) - 1)
}

func compile(p *parser, root string) (*Grammar, error) {
	c := &compiler{p: p, index: map[string]int32{}, setIdx: map[byteSet]int32{}, exprIdx: map[*node]int32{}}
	for _, name := range p.order {
		c.index[name] = c.newRule(name)
	}
	r, ok := c.index[root]
	if !ok {
		return nil, fmt.Errorf("grammar: no %q rule", root)
	}
	for _, name := range p.order {
		alts, err := c.alternatives(p.rules[name])
		if err != nil {
			return nil, err
		}
		c.rules[c.index[name]] = alts
	}
	g := &Grammar{sets: c.sets, names: c.names, root: r}
	g.alts = make([][]int32, len(c.rules))
	for ri, alts := range c.rules {
		for _, a := range alts {
			g.alts[ri] = append(g.alts[ri], int32(len(g.elems)))
			for _, it := range a {
				g.elems = append(g.elems, elem(it))
			}
			g.elems = append(g.elems, elem{kind: eEnd})
		}
	}
	if err := g.analyse(); err != nil {
		return nil, err
	}
	return g, nil
}

// alternatives compiles an expression into a rule body.
func (c *compiler) alternatives(n *node) ([][]item, error) {
	if n.kind == nAlt {
		var out [][]item
		for _, k := range n.kids {
			seq, err := c.sequence(k, nil)
			if err != nil {
				return nil, err
			}
			out = append(out, seq)
		}
		return out, nil
	}
	if n.kind == nClass {
		return c.class(n.ranges)
	}
	seq, err := c.sequence(n, nil)
	return [][]item{seq}, err
}

// sequence appends the items matching n in sequence to out.
func (c *compiler) sequence(n *node, out []item) ([]item, error) {
	switch n.kind {
	case nSeq:
		var err error
		for _, k := range n.kids {
			if out, err = c.sequence(k, out); err != nil {
				return nil, err
			}
		}
		return out, nil
	case nLit:
		if err := c.grow(len(n.bytes)); err != nil {
			return nil, err
		}
		for i := 0; i < len(n.bytes); i++ {
			var s byteSet
			s.add(n.bytes[i], n.bytes[i])
			out = append(out, c.set(s))
		}
		return out, nil
	case nRef:
		r, ok := c.index[n.name]
		if !ok {
			return nil, fmt.Errorf("grammar: line %d: undefined rule %q", n.line, n.name)
		}
		if err := c.grow(1); err != nil {
			return nil, err
		}
		return append(out, item{eRef, r}), nil
	case nAlt:
		if len(n.kids) == 1 {
			return c.sequence(n.kids[0], out)
		}
	case nClass:
		if len(n.ranges) > 0 && n.ranges[len(n.ranges)-1].hi < utf8.RuneSelf {
			var s byteSet
			for _, r := range n.ranges {
				s.add(byte(r.lo), byte(r.hi))
			}
			if err := c.grow(1); err != nil {
				return nil, err
			}
			return append(out, c.set(s)), nil
		}
	case nRepeat:
		return c.repeat(n, out)
	}
	r, err := c.sub(n)
	if err != nil {
		return nil, err
	}
	if err := c.grow(1); err != nil {
		return nil, err
	}
	return append(out, item{eRef, r}), nil
}

// sub makes n a rule of its own (once per node).
func (c *compiler) sub(n *node) (int32, error) {
	if r, ok := c.exprIdx[n]; ok {
		return r, nil
	}
	r := c.newRule("")
	c.exprIdx[n] = r
	alts, err := c.alternatives(n)
	if err != nil {
		return 0, err
	}
	c.rules[r] = alts
	return r, nil
}

// repeat expands x{m,n}: m copies of x, then either a star rule
// (S ::= x S | ε) or n-m nested optionals (O ::= x O' | ε), as llama.cpp does.
func (c *compiler) repeat(n *node, out []item) ([]item, error) {
	x := n.kids[0]
	var one []item
	if x.kind == nRef {
		var err error
		if one, err = c.sequence(x, nil); err != nil {
			return nil, err
		}
	} else {
		r, err := c.sub(x)
		if err != nil {
			return nil, err
		}
		one = []item{{eRef, r}}
	}
	if err := c.grow(n.min + 1); err != nil {
		return nil, err
	}
	for range n.min {
		out = append(out, one...)
	}
	if n.max < 0 {
		s := c.newRule("")
		c.rules[s] = [][]item{append(append([]item(nil), one...), item{eRef, s}), nil}
		return append(out, item{eRef, s}), nil
	}
	if n.max == n.min {
		return out, nil
	}
	if err := c.grow(2 * (n.max - n.min)); err != nil {
		return nil, err
	}
	prev := int32(-1)
	for range n.max - n.min {
		o := c.newRule("")
		alt := append([]item(nil), one...)
		if prev >= 0 {
			alt = append(alt, item{eRef, prev})
		}
		c.rules[o] = [][]item{alt, nil}
		prev = o
	}
	return append(out, item{eRef, prev}), nil
}

// class compiles code point ranges into alternatives of byte sequences.
func (c *compiler) class(rs []rng) ([][]item, error) {
	var single byteSet
	haveSingle := false
	var out [][]item
	for _, r := range rs {
		for _, seq := range utf8Ranges(r.lo, r.hi) {
			if len(seq) == 1 {
				single.add(seq[0][0], seq[0][1])
				haveSingle = true
				continue
			}
			if err := c.grow(len(seq) + 1); err != nil {
				return nil, err
			}
			var alt []item
			for _, b := range seq {
				var s byteSet
				s.add(b[0], b[1])
				alt = append(alt, c.set(s))
			}
			out = append(out, alt)
		}
	}
	if haveSingle {
		out = append([][]item{{c.set(single)}}, out...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("grammar: a character class matches nothing")
	}
	return out, nil
}

// utf8Ranges splits [lo, hi] into ranges whose UTF-8 encodings are
// sequences of byte ranges (each [2]byte{lo, hi}), as RE2 does.
func utf8Ranges(lo, hi rune) [][][2]byte {
	var out [][][2]byte
	var split func(lo, hi rune)
	split = func(lo, hi rune) {
		for _, b := range []rune{0x7F, 0x7FF, 0xFFFF} {
			if lo <= b && hi > b {
				split(lo, b)
				split(b+1, hi)
				return
			}
		}
		n := utf8.RuneLen(lo)
		for i := 1; i < n; i++ {
			m := rune(1)<<(6*i) - 1
			if lo&^m != hi&^m {
				if lo&m != 0 {
					split(lo, lo|m)
					split((lo|m)+1, hi)
					return
				}
				if hi&m != m {
					split(lo, (hi&^m)-1)
					split(hi&^m, hi)
					return
				}
			}
		}
		var a, b [4]byte
		utf8.EncodeRune(a[:], lo)
		utf8.EncodeRune(b[:], hi)
		seq := make([][2]byte, n)
		for i := range n {
			seq[i] = [2]byte{a[i], b[i]}
		}
		out = append(out, seq)
	}
	split(lo, hi)
	return out
}

const inf = math.MaxInt32

// analyse computes the shortest completion of every element and refuses
// rules that can never finish and left recursion (which would make the
// pushdown automaton expand forever).
func (g *Grammar) analyse() error {
	ruleMin := g.shortest()
	elemMin := func(e elem) int64 {
		switch e.kind {
		case eSet:
			return 1
		case eRef:
			return ruleMin[e.arg]
		}
		return 0
	}
	if ruleMin[g.root] >= inf {
		return fmt.Errorf("grammar: rule %q can never finish (every alternative recurses without end)", g.name(g.root))
	}
	for r := range g.alts {
		if ruleMin[r] >= inf {
			return fmt.Errorf("grammar: rule %q can never finish (every alternative recurses without end)", g.name(int32(r)))
		}
	}
	g.minLen = make([]int32, len(g.elems))
	for _, alts := range g.alts {
		for _, a := range alts {
			end := a
			for g.elems[end].kind != eEnd {
				end++
			}
			var sum int64
			for p := end; p >= a; p-- {
				sum = min(sum+elemMin(g.elems[p]), inf)
				g.minLen[p] = int32(sum)
			}
		}
	}
	// Left recursion: a rule that can reach itself without a byte.
	const (
		white = iota
		grey
		black
	)
	color := make([]uint8, len(g.alts))
	var visit func(r int32) error
	visit = func(r int32) error {
		color[r] = grey
		for _, a := range g.alts[r] {
			for p := a; g.elems[p].kind == eRef; p++ {
				t := g.elems[p].arg
				switch color[t] {
				case grey:
					return fmt.Errorf("grammar: rule %q is left-recursive (it can reach itself before matching a character)", g.name(t))
				case white:
					if err := visit(t); err != nil {
						return err
					}
				}
				if ruleMin[t] != 0 {
					break
				}
			}
		}
		color[r] = black
		return nil
	}
	for r := range g.alts {
		if color[r] == white {
			if err := visit(int32(r)); err != nil {
				return err
			}
		}
	}
	return nil
}

// shortest computes every rule's shortest match in bytes (inf: it never
// finishes) by Knuth's generalisation of Dijkstra's algorithm: a rule is
// final once it is the smallest candidate left, and an alternative becomes
// a candidate for its rule once all the rules it refers to are final.
// Linear in the grammar's size (up to the heap's log factor), whatever the
// order its rules are written in.
func (g *Grammar) shortest() []int64 {
	type altInfo struct {
		rule    int32
		pending int   // references to rules not yet final
		sum     int64 // bytes of the final part so far
	}
	var alts []altInfo
	uses := make([][]int32, len(g.alts)) // per rule: the alternatives referring to it, once per reference
	h := &minHeap{}
	for r, as := range g.alts {
		for _, a := range as {
			ai := int32(len(alts))
			info := altInfo{rule: int32(r)}
			for p := a; g.elems[p].kind != eEnd; p++ {
				switch e := g.elems[p]; e.kind {
				case eSet:
					info.sum++
				case eRef:
					info.pending++
					uses[e.arg] = append(uses[e.arg], ai)
				}
			}
			alts = append(alts, info)
			if info.pending == 0 {
				h.push(info.sum, int32(r))
			}
		}
	}
	ruleMin := make([]int64, len(g.alts))
	for i := range ruleMin {
		ruleMin[i] = inf
	}
	final := make([]bool, len(g.alts))
	for h.len() > 0 {
		v, r := h.pop()
		if final[r] {
			continue
		}
		final[r] = true
		ruleMin[r] = v
		for _, ai := range uses[r] {
			a := &alts[ai]
			a.sum = min(a.sum+v, inf)
			if a.pending--; a.pending == 0 && !final[a.rule] {
				h.push(a.sum, a.rule)
			}
		}
	}
	return ruleMin
}

type minHeap struct {
	v []int64
	r []int32
}

func (h *minHeap) len() int { return len(h.v) }

func (h *minHeap) push(v int64, r int32) {
	h.v, h.r = append(h.v, v), append(h.r, r)
	for i := len(h.v) - 1; i > 0; {
		p := (i - 1) / 2
		if h.v[p] <= h.v[i] {
			break
		}
		h.v[p], h.v[i], h.r[p], h.r[i] = h.v[i], h.v[p], h.r[i], h.r[p]
		i = p
	}
}

func (h *minHeap) pop() (int64, int32) {
	v, r := h.v[0], h.r[0]
	n := len(h.v) - 1
	h.v[0], h.r[0] = h.v[n], h.r[n]
	h.v, h.r = h.v[:n], h.r[:n]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < n && h.v[l] < h.v[m] {
			m = l
		}
		if l+1 < n && h.v[l+1] < h.v[m] {
			m = l + 1
		}
		if m == i {
			break
		}
		h.v[m], h.v[i], h.r[m], h.r[i] = h.v[i], h.v[m], h.r[i], h.r[m]
		i = m
	}
	return v, r
}

// name is a rule's name for messages: a made-up rule is named after the
// named rule it was made for.
func (g *Grammar) name(r int32) string {
	if g.names[r] != "" {
		return g.names[r]
	}
	return fmt.Sprintf("(subexpression %d)", r)
}
