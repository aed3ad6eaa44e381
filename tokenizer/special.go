package tokenizer

import (
	"sort"
	"strings"
)

// fragment is a piece of the input: a special token (tok >= 0) or the raw
// text text[start:end] still to be tokenized (tok < 0).
type fragment struct {
	tok        int32
	start, end int
}

// partition splits text around the special tokens found in it
// (llama.cpp's tokenizer_st_partition). Longer special tokens are matched
// first; control and unknown tokens only with parseSpecial; user-defined
// tokens always. Tokens with the lstrip/rstrip attribute swallow the ASCII
// whitespace before/after them. A control or unknown token whose text
// touches a byte of a literal span is not matched there: those bytes stay
// text, as if parseSpecial were off for them alone (literal is sorted and
// its spans do not overlap).
func (t *Tokenizer) partition(text string, parseSpecial bool, literal []Span) []fragment {
	if text == "" {
		return nil
	}
	frags := []fragment{{tok: -1, start: 0, end: len(text)}}
	var next []fragment
	for _, id := range t.special {
		a := t.attrs[id]
		if !parseSpecial && a&(attrControl|attrUnknown) != 0 {
			continue
		}
		tok := t.tokens[id]
		if !strings.Contains(text, tok) {
			continue
		}
		next = next[:0]
		for _, f := range frags {
			if f.tok >= 0 {
				next = append(next, f)
				continue
			}
			pos, from := f.start, f.start
			for {
				i := strings.Index(text[from:f.end], tok)
				if i < 0 {
					break
				}
				m := from + i
				if a&(attrControl|attrUnknown) != 0 && touches(literal, m, m+len(tok)) {
					from = m + 1
					continue
				}
				left := m
				if a&attrLStrip != 0 {
					for left > pos && isCSpace(text[left-1]) {
						left--
					}
				}
				if left > pos {
					next = append(next, fragment{tok: -1, start: pos, end: left})
				}
				next = append(next, fragment{tok: id, start: m, end: m + len(tok)})
				pos = m + len(tok)
				if a&attrRStrip != 0 {
					for pos < f.end && isCSpace(text[pos]) {
						pos++
					}
				}
				from = pos
			}
			if pos < f.end {
				next = append(next, fragment{tok: -1, start: pos, end: f.end})
			}
		}
		frags, next = next, frags
	}
	return frags
}

// isCSpace is C's isspace in the "C" locale.
func isCSpace(c byte) bool { return c == ' ' || '\t' <= c && c <= '\r' }

// Span is the byte range [Start, End) of a text.
type Span struct{ Start, End int }

// touches reports whether [start, end) shares a byte with one of the
// sorted spans.
func touches(spans []Span, start, end int) bool {
	// The first span that ends after start is the only candidate.
	i := sort.Search(len(spans), func(i int) bool { return spans[i].End > start })
	return i < len(spans) && spans[i].Start < end && spans[i].Start < spans[i].End
}
