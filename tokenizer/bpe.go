package tokenizer

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// initBPE ranks the merges and indexes tokens by the bytes they stand for.
func (t *Tokenizer) initBPE(merges []string) error {
	if merges == nil {
		return fmt.Errorf("tokenizer: gpt2 vocab without merges (tokenizer.ggml.merges)")
	}
	// Every byte-level token text spelled in the GPT-2 alphabet gets its raw
	// bytes, so words can be matched without re-encoding them.
	t.rawToID = make(map[string]int32, len(t.tokens))
	var raw []byte
	for id, s := range t.tokens {
		raw = raw[:0]
		ok := true
		for _, r := range s {
			if r < 0 || int(r) >= len(runeByte) || runeByte[r] < 0 {
				ok = false
				break
			}
			raw = append(raw, byte(runeByte[r]))
		}
		if ok {
			t.rawToID[string(raw)] = int32(id)
		}
	}
	t.merges = make(map[uint64]uint64, len(merges))
	for rank, m := range merges {
		// llama.cpp splits at the first space after the first byte.
		sp := -1
		if len(m) > 1 {
			if i := strings.IndexByte(m[1:], ' '); i >= 0 {
				sp = i + 1
			}
		}
		if sp < 0 {
			return fmt.Errorf("tokenizer: merge %d %q has no space separating its two parts", rank, m)
		}
		left, right := m[:sp], m[sp+1:]
		l, ok := t.toID[left]
		if !ok {
			return fmt.Errorf("tokenizer: merge %d %q: left part %q is not a token", rank, m, left)
		}
		r, ok := t.toID[right]
		if !ok {
			return fmt.Errorf("tokenizer: merge %d %q: right part %q is not a token", rank, m, right)
		}
		res, ok := t.toID[left+right]
		if !ok {
			res = -1
		}
		key := uint64(uint32(l))<<32 | uint64(uint32(r))
		if _, dup := t.merges[key]; !dup { // the first rank wins, as with llama.cpp's emplace
			t.merges[key] = uint64(rank)<<32 | uint64(uint32(res))
		}
	}
	return nil
}

// initBytes finds the token for each byte: for SPM the <0xXX> byte-fallback
// tokens (or a token spelled as the bare byte), for BPE the token of the byte's
// GPT-2 character. Byte tokens must be spelled <0xXX>.
func (t *Tokenizer) initBytes() error {
	for i := range t.byteTok {
		t.byteTok[i] = NoToken
	}
	for b := 0; b < 256; b++ {
		switch t.kind {
		case kindSPM:
			if id, ok := t.toID[fmt.Sprintf("<0x%02X>", b)]; ok {
				t.byteTok[b] = id
			} else if id, ok := t.toID[string([]byte{byte(b)})]; ok {
				t.byteTok[b] = id
			}
		case kindBPE:
			if id, ok := t.rawToID[string([]byte{byte(b)})]; ok {
				t.byteTok[b] = id
			}
		}
	}
	for id, a := range t.attrs {
		if a&attrByte != 0 {
			if _, ok := parseByteToken(t.tokens[id]); !ok {
				return fmt.Errorf("tokenizer: token %d %q has type byte but is not spelled <0xXX>", id, t.tokens[id])
			}
		}
	}
	return nil
}

func parseByteToken(s string) (byte, bool) {
	if len(s) != 6 || s[:3] != "<0x" || s[5] != '>' {
		return 0, false
	}
	hi, ok1 := hexVal(s[3])
	lo, ok2 := hexVal(s[4])
	return hi<<4 | lo, ok1 && ok2
}

func hexVal(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// bpeScratch holds buffers reused across the words of one Encode call.
type bpeScratch struct {
	cpts  []rune
	offs  []int // byte offset of each code point, plus the end
	words []int
	syms  []bpeSym
	heap  bigramHeap
}

// bpeSym is a run of bytes of the word; merged-away symbols have n == 0.
type bpeSym struct {
	start, n   int32
	prev, next int32
	id         int32 // token id of the bytes, or -1
}

// encodeBPE appends the tokens of one text fragment (llm_tokenizer_bpe_session::tokenize).
func (t *Tokenizer) encodeBPE(text string, out []int32, s *bpeScratch) []int32 {
	s.cpts, s.offs = s.cpts[:0], s.offs[:0]
	for i, r := range text {
		s.cpts = append(s.cpts, r)
		s.offs = append(s.offs, i)
	}
	s.offs = append(s.offs, len(text))
	s.words = append(s.words[:0], len(s.cpts))
	for _, stage := range t.split {
		s.words = stage(s.cpts, s.words, s.words[len(s.words):])
	}
	c := 0
	for _, n := range s.words {
		word := text[s.offs[c]:s.offs[c+n]]
		c += n
		if t.ignoreMg {
			if id, ok := t.rawToID[word]; ok {
				out = append(out, id)
				continue
			}
		}
		out = t.mergeWord(word, out, s)
	}
	return out
}

// mergeWord runs the BPE merges over one pre-tokenized word, one symbol per
// byte to start with, lowest rank first (ties: leftmost).
func (t *Tokenizer) mergeWord(word string, out []int32, s *bpeScratch) []int32 {
	syms := s.syms[:0]
	for i := 0; i < len(word); i++ {
		syms = append(syms, bpeSym{start: int32(i), n: 1, prev: int32(i - 1), next: int32(i + 1), id: t.byteTok[word[i]]})
	}
	syms[len(syms)-1].next = -1
	h := &s.heap
	h.items = h.items[:0]
	push := func(l, r int32) {
		if l < 0 || r < 0 {
			return
		}
		a, b := syms[l].id, syms[r].id
		if a < 0 || b < 0 {
			return
		}
		m, ok := t.merges[uint64(uint32(a))<<32|uint64(uint32(b))]
		if !ok {
			return
		}
		h.push(bigram{key: uint64(m >> 32), left: l, right: r, size: syms[l].n + syms[r].n})
	}
	for i := 1; i < len(syms); i++ {
		push(int32(i-1), int32(i))
	}
	for len(h.items) > 0 {
		bg := h.pop()
		l, r := &syms[bg.left], &syms[bg.right]
		if l.n == 0 || r.n == 0 || l.n+r.n != bg.size {
			continue // stale: one side has changed since it was queued
		}
		a, b := l.id, r.id
		m := t.merges[uint64(uint32(a))<<32|uint64(uint32(b))]
		l.n += r.n
		l.id = int32(uint32(m))
		r.n = 0
		l.next = r.next
		if r.next >= 0 {
			syms[r.next].prev = bg.left
		}
		push(l.prev, bg.left)
		push(bg.left, l.next)
	}
	for i := int32(0); i >= 0; i = syms[i].next {
		sy := syms[i]
		if sy.id >= 0 {
			out = append(out, sy.id)
			continue
		}
		// Not a token: llama.cpp looks up each byte of the symbol's
		// byte-level spelling on its own and keeps what it finds.
		enc := encodeByteLevel(word[sy.start : sy.start+sy.n])
		for j := 0; j < len(enc); j++ {
			if id, ok := t.toID[enc[j:j+1]]; ok {
				out = append(out, id)
			}
		}
	}
	s.syms = syms
	return out
}

// encodeByteLevel spells raw bytes in the GPT-2 alphabet.
func encodeByteLevel(raw string) string {
	var b strings.Builder
	for i := 0; i < len(raw); i++ {
		b.WriteString(byteText[raw[i]])
	}
	return b.String()
}

// decodeByteLevel is llama.cpp's llama_decode_text: GPT-2 characters back to
// bytes; a character outside the alphabet becomes "[UNK_BYTE_0x…<text>]".
func decodeByteLevel(text string) []byte {
	out := make([]byte, 0, len(text))
	for _, r := range text {
		if r >= 0 && int(r) < len(runeByte) && runeByte[r] >= 0 {
			out = append(out, byte(runeByte[r]))
			continue
		}
		out = append(out, "[UNK_BYTE_0x"...)
		var buf [utf8.UTFMax]byte
		n := utf8.EncodeRune(buf[:], r)
		for _, c := range buf[:n] {
			out = fmt.Appendf(out, "%02x", c)
		}
		out = append(out, text...)
		out = append(out, ']')
	}
	return out
}

// bigram is a candidate merge of two adjacent symbols. For BPE key is the
// merge rank (lower first); for SPM it is derived from the score (see spm.go).
type bigram struct {
	key         uint64
	left, right int32
	size        int32
}

// bigramHeap is a binary min-heap on (key, left).
type bigramHeap struct{ items []bigram }

func (h *bigramHeap) less(i, j int) bool {
	a, b := &h.items[i], &h.items[j]
	return a.key < b.key || a.key == b.key && a.left < b.left
}

func (h *bigramHeap) push(b bigram) {
	h.items = append(h.items, b)
	i := len(h.items) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(i, p) {
			break
		}
		h.items[i], h.items[p] = h.items[p], h.items[i]
		i = p
	}
}

func (h *bigramHeap) pop() bigram {
	top := h.items[0]
	last := len(h.items) - 1
	h.items[0] = h.items[last]
	h.items = h.items[:last]
	i := 0
	for {
		l := 2*i + 1
		if l >= last {
			break
		}
		m := l
		if r := l + 1; r < last && h.less(r, l) {
			m = r
		}
		if !h.less(m, i) {
			break
		}
		h.items[i], h.items[m] = h.items[m], h.items[i]
		i = m
	}
	return top
}
