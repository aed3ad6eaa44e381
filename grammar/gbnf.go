// Package grammar owns constrained output: a GBNF parser (llama.cpp's
// grammar format), a JSON-schema → grammar compiler, the built-in "any JSON
// object" grammar, and the per-step mask over a model's vocabulary that a
// sampler applies so that generated text always belongs to the grammar.
//
// A Grammar is compiled once and is immutable. A Matcher follows one
// generation: it says which tokens may come next (Mask), advances by the
// token chosen (Accept), and clones cheaply so speculative paths can be
// explored. Matching is over bytes, so a token may end in the middle of a
// UTF-8 character and the next one complete it. The pushdown automaton's
// stack sets are hash-consed into the states of a lazily built DFA, and the
// mask of a state is one walk of the vocabulary's token trie through that
// DFA, cached per state (see docs/grammar.md).
package grammar

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits on what a grammar may cost: hostile input gets an error, never
// unbounded time or memory.
const (
	maxSourceBytes = 1 << 20 // GBNF text
	maxElems       = 1 << 18 // compiled elements (repetitions expanded)
	maxRepeat      = 4096    // the largest {m,n} bound
	maxNesting     = 200     // parenthesised groups inside each other
)

// A SyntaxError is a malformed GBNF grammar.
type SyntaxError struct {
	Line, Col int
	Msg       string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("grammar: line %d col %d: %s", e.Line, e.Col, e.Msg)
}

// node is the parsed form of a GBNF expression.
type node struct {
	kind     nodeKind
	bytes    string  // lit: the UTF-8 bytes
	ranges   []rng   // class: code point ranges (already negated if ^)
	name     string  // ref
	kids     []*node // alt, seq, repeat (one kid)
	min, max int     // repeat; max -1: unbounded
	line     int     // where a ref appears, for errors
}

type nodeKind uint8

const (
	nLit nodeKind = iota
	nClass
	nRef
	nAlt
	nSeq
	nRepeat
)

type rng struct{ lo, hi rune }

type parser struct {
	src   string
	pos   int
	depth int
	rules map[string]*node
	order []string
}

func (p *parser) errf(format string, args ...any) error {
	line, col := 1, 1
	for _, c := range p.src[:min(p.pos, len(p.src))] {
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return &SyntaxError{Line: line, Col: col, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) line() int { return strings.Count(p.src[:p.pos], "\n") + 1 }

// space skips blanks and comments; newlines too when nl.
func (p *parser) space(nl bool) {
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		switch {
		case c == ' ' || c == '\t' || c == '\r':
			p.pos++
		case c == '\n' && nl:
			p.pos++
		case c == '#':
			for p.pos < len(p.src) && p.src[p.pos] != '\n' {
				p.pos++
			}
		default:
			return
		}
	}
}

func isNameChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

func (p *parser) name() string {
	start := p.pos
	for p.pos < len(p.src) && isNameChar(p.src[p.pos]) {
		p.pos++
	}
	return p.src[start:p.pos]
}

// parseGBNF parses a whole grammar into its rules.
func parseGBNF(src string) (*parser, error) {
	if len(src) > maxSourceBytes {
		return nil, fmt.Errorf("grammar: source is %d bytes, more than the %d allowed", len(src), maxSourceBytes)
	}
	if !utf8.ValidString(src) {
		return nil, fmt.Errorf("grammar: source is not valid UTF-8")
	}
	p := &parser{src: src, rules: map[string]*node{}}
	for {
		p.space(true)
		if p.pos >= len(p.src) {
			break
		}
		name := p.name()
		if name == "" {
			return nil, p.errf("expected a rule name, found %q", p.src[p.pos:p.pos+1])
		}
		p.space(false)
		if !strings.HasPrefix(p.src[p.pos:], "::=") {
			return nil, p.errf("expected ::= after rule name %q", name)
		}
		p.pos += 3
		body, err := p.alternatives(false)
		if err != nil {
			return nil, err
		}
		if _, dup := p.rules[name]; dup {
			return nil, p.errf("rule %q defined twice", name)
		}
		p.rules[name] = body
		p.order = append(p.order, name)
		p.space(false)
		if p.pos < len(p.src) && p.src[p.pos] != '\n' {
			return nil, p.errf("unexpected %q", p.src[p.pos:p.pos+1])
		}
	}
	if len(p.rules) == 0 {
		return nil, fmt.Errorf("grammar: no rules")
	}
	return p, nil
}

// alternatives parses seq ("|" seq)*. Inside a group newlines are blanks;
// at the top level a newline ends the rule unless a "|" follows it.
func (p *parser) alternatives(nested bool) (*node, error) {
	alt := &node{kind: nAlt}
	for {
		seq, err := p.sequence(nested)
		if err != nil {
			return nil, err
		}
		alt.kids = append(alt.kids, seq)
		p.space(nested)
		if !nested {
			// A continuation line starting with "|" continues the rule.
			save := p.pos
			p.space(true)
			if p.pos < len(p.src) && p.src[p.pos] == '|' {
				p.pos++
				continue
			}
			p.pos = save
			return alt, nil
		}
		if p.pos < len(p.src) && p.src[p.pos] == '|' {
			p.pos++
			continue
		}
		return alt, nil
	}
}

func (p *parser) sequence(nested bool) (*node, error) {
	seq := &node{kind: nSeq}
	for {
		p.space(nested)
		if p.pos >= len(p.src) {
			return seq, nil
		}
		c := p.src[p.pos]
		var item *node
		switch {
		case c == '"':
			p.pos++
			s, err := p.literal('"')
			if err != nil {
				return nil, err
			}
			item = &node{kind: nLit, bytes: s}
		case c == '[':
			p.pos++
			r, err := p.class()
			if err != nil {
				return nil, err
			}
			item = &node{kind: nClass, ranges: r}
		case c == '.':
			p.pos++
			item = &node{kind: nClass, ranges: normRanges([]rng{{0, utf8.MaxRune}})}
		case c == '(':
			p.pos++
			if p.depth++; p.depth > maxNesting {
				return nil, p.errf("groups nested more than %d deep", maxNesting)
			}
			g, err := p.alternatives(true)
			p.depth--
			if err != nil {
				return nil, err
			}
			p.space(true)
			if p.pos >= len(p.src) || p.src[p.pos] != ')' {
				return nil, p.errf("expected )")
			}
			p.pos++
			item = g
		case isNameChar(c):
			save := p.pos
			line := p.line()
			name := p.name()
			// A name followed by ::= starts the next rule.
			q := p.pos
			for q < len(p.src) && (p.src[q] == ' ' || p.src[q] == '\t') {
				q++
			}
			if strings.HasPrefix(p.src[q:], "::=") {
				p.pos = save
				return seq, nil
			}
			item = &node{kind: nRef, name: name, line: line}
		default:
			return seq, nil
		}
		// Postfix operators.
		for p.pos < len(p.src) {
			c := p.src[p.pos]
			var lo, hi int
			switch c {
			case '*':
				lo, hi = 0, -1
				p.pos++
			case '+':
				lo, hi = 1, -1
				p.pos++
			case '?':
				lo, hi = 0, 1
				p.pos++
			case '{':
				p.pos++
				var err error
				if lo, hi, err = p.braces(); err != nil {
					return nil, err
				}
			default:
				goto done
			}
			item = &node{kind: nRepeat, kids: []*node{item}, min: lo, max: hi}
		}
	done:
		seq.kids = append(seq.kids, item)
	}
}

func (p *parser) number() (int, error) {
	p.space(false)
	start := p.pos
	for p.pos < len(p.src) && p.src[p.pos] >= '0' && p.src[p.pos] <= '9' {
		p.pos++
	}
	if start == p.pos {
		return -1, nil
	}
	n, err := strconv.Atoi(p.src[start:p.pos])
	if err != nil || n > maxRepeat {
		return 0, p.errf("repetition count %s is more than %d", p.src[start:p.pos], maxRepeat)
	}
	return n, nil
}

// braces parses m}, m,}, m,n} or ,n}.
func (p *parser) braces() (int, int, error) {
	lo, err := p.number()
	if err != nil {
		return 0, 0, err
	}
	p.space(false)
	hi := lo
	if p.pos < len(p.src) && p.src[p.pos] == ',' {
		p.pos++
		if hi, err = p.number(); err != nil {
			return 0, 0, err
		}
	}
	p.space(false)
	if p.pos >= len(p.src) || p.src[p.pos] != '}' {
		return 0, 0, p.errf("expected } in a repetition")
	}
	p.pos++
	if lo < 0 {
		lo = 0
	}
	if hi >= 0 && hi < lo {
		return 0, 0, p.errf("repetition {%d,%d}: the maximum is below the minimum", lo, hi)
	}
	return lo, hi, nil
}

// char reads one possibly escaped character of a literal or class.
func (p *parser) char() (rune, error) {
	if p.pos >= len(p.src) {
		return 0, p.errf("unexpected end of grammar")
	}
	c := p.src[p.pos]
	if c != '\\' {
		r, n := utf8.DecodeRuneInString(p.src[p.pos:])
		p.pos += n
		return r, nil
	}
	p.pos++
	if p.pos >= len(p.src) {
		return 0, p.errf("unexpected end of grammar after \\")
	}
	c = p.src[p.pos]
	p.pos++
	switch c {
	case 'n':
		return '\n', nil
	case 'r':
		return '\r', nil
	case 't':
		return '\t', nil
	case '\\', '"', '[', ']', '-', '^', '\'':
		return rune(c), nil
	case 'x', 'u', 'U':
		n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[c]
		if p.pos+n > len(p.src) {
			return 0, p.errf("short \\%c escape", c)
		}
		v, err := strconv.ParseUint(p.src[p.pos:p.pos+n], 16, 32)
		if err != nil || v > utf8.MaxRune {
			return 0, p.errf("bad \\%c escape %q", c, p.src[p.pos:p.pos+n])
		}
		p.pos += n
		return rune(v), nil
	}
	return 0, p.errf("unknown escape \\%c", c)
}

func (p *parser) literal(end byte) (string, error) {
	var b strings.Builder
	for {
		if p.pos >= len(p.src) {
			return "", p.errf("unterminated literal")
		}
		if p.src[p.pos] == end {
			p.pos++
			return b.String(), nil
		}
		if p.src[p.pos] == '\n' {
			return "", p.errf("newline in a literal")
		}
		// \xHH is a code point, as in llama.cpp.
		r, err := p.char()
		if err != nil {
			return "", err
		}
		b.WriteRune(r)
	}
}

// class parses the inside of [...] (the [ already read).
func (p *parser) class() ([]rng, error) {
	neg := false
	if p.pos < len(p.src) && p.src[p.pos] == '^' {
		neg = true
		p.pos++
	}
	var rs []rng
	for {
		if p.pos >= len(p.src) {
			return nil, p.errf("unterminated character class")
		}
		if p.src[p.pos] == ']' {
			p.pos++
			break
		}
		lo, err := p.char()
		if err != nil {
			return nil, err
		}
		hi := lo
		if p.pos+1 < len(p.src) && p.src[p.pos] == '-' && p.src[p.pos+1] != ']' {
			p.pos++
			if hi, err = p.char(); err != nil {
				return nil, err
			}
			if hi < lo {
				return nil, p.errf("character range %q-%q is backwards", lo, hi)
			}
		}
		rs = append(rs, rng{lo, hi})
	}
	rs = normRanges(rs)
	if neg {
		rs = negate(rs)
	}
	return rs, nil
}

// normRanges sorts and merges ranges, dropping surrogates (not encodable).
func normRanges(rs []rng) []rng {
	var out []rng
	for _, r := range rs {
		// Cut out the surrogate block.
		if r.lo <= 0xDFFF && r.hi >= 0xD800 {
			if r.lo < 0xD800 {
				out = append(out, rng{r.lo, 0xD7FF})
			}
			if r.hi > 0xDFFF {
				out = append(out, rng{0xE000, r.hi})
			}
			continue
		}
		out = append(out, r)
	}
	for i := 1; i < len(out); i++ { // insertion sort: classes are short
		for j := i; j > 0 && out[j].lo < out[j-1].lo; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	merged := out[:0]
	for _, r := range out {
		if n := len(merged); n > 0 && r.lo <= merged[n-1].hi+1 {
			merged[n-1].hi = max(merged[n-1].hi, r.hi)
			continue
		}
		merged = append(merged, r)
	}
	return merged
}

func negate(rs []rng) []rng {
	var out []rng
	next := rune(0)
	for _, r := range rs {
		if r.lo > next {
			out = append(out, rng{next, r.lo - 1})
		}
		next = r.hi + 1
	}
	if next <= utf8.MaxRune {
		out = append(out, rng{next, utf8.MaxRune})
	}
	return normRanges(out)
}
