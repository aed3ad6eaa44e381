package tokenizer

import (
	"fmt"
	"math"
	"strings"
)

// spmSym is a run of bytes of the escaped text; merged-away symbols have n == 0.
type spmSym struct {
	start, n   int32
	prev, next int32
}

// scoreKey orders bigrams for the min-heap: higher score first.
func scoreKey(s float32) uint64 {
	if s == 0 {
		s = 0 // -0 ties with +0, as float comparison does
	}
	b := math.Float32bits(s)
	if b&0x80000000 != 0 {
		b = ^b
	} else {
		b |= 0x80000000
	}
	return uint64(^b) // b ascends with s; invert for descending
}

// encodeSPM appends the tokens of one text fragment (llm_tokenizer_spm_session):
// spaces become "▁" (with one prefixed when prefix is set), then adjacent
// symbols, starting from single UTF-8 characters, are merged while their
// concatenation is a token, highest score first (ties: leftmost); symbols
// that are not tokens fall back to byte tokens.
func (t *Tokenizer) encodeSPM(frag string, prefix bool, out []int32) ([]int32, error) {
	if prefix {
		frag = " " + frag
	}
	text := strings.ReplaceAll(frag, " ", "▁")
	syms := make([]spmSym, 0, len(text))
	for off := 0; off < len(text); {
		n := min(utf8Len(text[off]), len(text)-off)
		i := int32(len(syms))
		syms = append(syms, spmSym{start: int32(off), n: int32(n), prev: i - 1, next: i + 1})
		off += n
	}
	if len(syms) == 0 {
		return out, nil
	}
	syms[len(syms)-1].next = -1

	var h bigramHeap
	push := func(l, r int32) {
		if l < 0 || r < 0 {
			return
		}
		a, b := syms[l], syms[r]
		id, ok := t.toID[text[a.start:b.start+b.n]]
		if !ok {
			return
		}
		h.push(bigram{key: scoreKey(t.scores[id]), left: l, right: r, size: a.n + b.n})
	}
	for i := 1; i < len(syms); i++ {
		push(int32(i-1), int32(i))
	}
	for len(h.items) > 0 {
		bg := h.pop()
		l, r := &syms[bg.left], &syms[bg.right]
		if l.n == 0 || r.n == 0 || l.n+r.n != bg.size {
			continue
		}
		l.n += r.n
		r.n = 0
		l.next = r.next
		if r.next >= 0 {
			syms[r.next].prev = bg.left
		}
		push(l.prev, bg.left)
		push(bg.left, l.next)
	}
	for i := int32(0); i >= 0; i = syms[i].next {
		s := text[syms[i].start : syms[i].start+syms[i].n]
		if id, ok := t.toID[s]; ok {
			out = append(out, id)
			continue
		}
		for j := 0; j < len(s); j++ {
			id := t.byteTok[s[j]]
			if id < 0 {
				return nil, fmt.Errorf("tokenizer: %q is not in the vocab and there is no byte token for 0x%02X", s, s[j])
			}
			out = append(out, id)
		}
	}
	return out, nil
}

// utf8Len is llama.cpp's unicode_len_utf8: the sequence length a lead byte announces.
func utf8Len(b byte) int {
	return [16]int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4}[b>>4]
}
