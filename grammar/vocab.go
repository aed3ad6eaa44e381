package grammar

import (
	"bytes"
	"slices"
	"sync"

	"shade/tokenizer"
)

// Vocab is a model's vocabulary as the grammar sees it: the bytes of every
// token that stands for text, in a trie, and the end-of-generation tokens.
// It is built once per vocabulary, is immutable and safe for concurrent use.
type Vocab struct {
	n     int
	nodes []trieNode // preorder; nodes[0] is the empty prefix
	toks  []int32    // the tokens ending at each node: nodes[i].tokLo…tokHi
	eog   []int32
	text  [][]byte // per token: its bytes (nil: a special token)
	byte1 [256]int32
}

type trieNode struct {
	b            byte
	depth        uint16
	end          int32 // the preorder index past this node's subtree
	tokLo, tokHi int32
}

// maxTokenBytes bounds the trie's depth; longer tokens are never allowed.
const maxTokenBytes = 1 << 12

// NewVocab builds a Vocab. tokens[i] is the text token i stands for (its
// bytes after undoing "▁" or byte-level escapes); special[i] marks control
// tokens, which are never allowed, and eog lists the end-of-generation
// tokens, allowed exactly when the grammar has matched completely.
func NewVocab(tokens [][]byte, special []bool, eog []int32) *Vocab {
	v := &Vocab{n: len(tokens), text: make([][]byte, len(tokens))}
	for i := range v.byte1 {
		v.byte1[i] = -1
	}
	var ids []int32
	for i, t := range tokens {
		if len(t) == 0 || len(t) > maxTokenBytes || i < len(special) && special[i] {
			continue
		}
		v.text[i] = t
		ids = append(ids, int32(i))
		if len(t) == 1 && v.byte1[t[0]] < 0 {
			v.byte1[t[0]] = int32(i)
		}
	}
	for _, e := range eog {
		if e >= 0 && int(e) < len(tokens) {
			v.eog = append(v.eog, e)
			v.text[e] = nil
		}
	}
	ids = slices.DeleteFunc(ids, func(id int32) bool { return v.text[id] == nil })
	slices.SortStableFunc(ids, func(a, b int32) int { return bytes.Compare(tokens[a], tokens[b]) })
	// Preorder trie from the sorted strings: each string shares its longest
	// common prefix with the one before it.
	v.nodes = append(v.nodes, trieNode{})
	path := []int32{0} // path[d] is the node at depth d
	var prev []byte
	closeTo := func(depth int) {
		for len(path) > depth+1 {
			v.nodes[path[len(path)-1]].end = int32(len(v.nodes))
			path = path[:len(path)-1]
		}
	}
	for _, id := range ids {
		t := tokens[id]
		lcp := 0
		for lcp < len(t) && lcp < len(prev) && t[lcp] == prev[lcp] {
			lcp++
		}
		closeTo(lcp)
		for d := lcp; d < len(t); d++ {
			path = append(path, int32(len(v.nodes)))
			v.nodes = append(v.nodes, trieNode{b: t[d], depth: uint16(d + 1)})
		}
		n := &v.nodes[path[len(path)-1]]
		if n.tokHi == 0 {
			n.tokLo = int32(len(v.toks))
		}
		v.toks = append(v.toks, id)
		n.tokHi = int32(len(v.toks))
		prev = t
	}
	closeTo(0)
	v.nodes[0].end = int32(len(v.nodes))
	return v
}

// Size is the number of tokens.
func (v *Vocab) Size() int { return v.n }

var tokVocabs sync.Map // *tokenizer.Tokenizer → *Vocab

// TokenizerVocab is the Vocab of t (built on first use, then shared):
// control and unknown tokens are special, and t's end-of-generation tokens
// end a complete match.
func TokenizerVocab(t *tokenizer.Tokenizer) *Vocab {
	if v, ok := tokVocabs.Load(t); ok {
		return v.(*Vocab)
	}
	n := t.VocabSize()
	toks := make([][]byte, n)
	special := make([]bool, n)
	var eog []int32
	for i := range n {
		id := int32(i)
		toks[i] = t.TokenBytes(id)
		special[i] = t.IsControl(id) || id == t.UNK()
		if t.IsEOG(id) {
			eog = append(eog, id)
		}
	}
	v, _ := tokVocabs.LoadOrStore(t, NewVocab(toks, special, eog))
	return v.(*Vocab)
}

// maskWords is the length of a mask over n tokens.
func maskWords(n int) int { return (n + 63) / 64 }

// walk sets in mask the tokens allowed from state s whose state after them
// is at most limit bytes from a complete match, and returns the largest
// such distance (-1 when none). It is one preorder pass over the trie:
// a prefix the DFA refuses skips its whole subtree.
func (v *Vocab) walk(d *dfa, s int32, mask []uint64, limit int32, stk []int32) int32 {
	stk[0] = s
	maxDist := int32(-1)
	nodes := v.nodes
	tr := d.tr
	for i := int32(1); i < int32(len(nodes)); {
		n := &nodes[i]
		from := stk[n.depth-1]
		t := tr[int(from)<<8|int(n.b)]
		if t == unknown {
			t = d.next(from, n.b)
			tr = d.tr // next may have grown it
		}
		if t == dead {
			i = n.end
			continue
		}
		stk[n.depth] = t
		if n.tokHi > n.tokLo {
			if dist := d.dist[t]; dist <= limit {
				maxDist = max(maxDist, dist)
				for _, id := range v.toks[n.tokLo:n.tokHi] {
					mask[id>>6] |= 1 << (id & 63)
				}
			}
		}
		i++
	}
	return maxDist
}
