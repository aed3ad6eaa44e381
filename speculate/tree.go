// Package speculate owns speculative decoding: token trees, their lossless
// verification against a target model (greedy, and speculative sampling
// for temperature/top-k/top-p), and the Decoder, one fixed pipeline per
// step (draft → widen → verify → accept → commit) over a Strategy per
// mode: plain decoding, a draft model's chain or tree, n-gram lookup over
// the prompt and the text so far, auto (both, sized from the acceptance and
// step costs it observes), and the flash-aware strategy of package flash.
// The Governor hook is how elastic scheduling paces it (draft preemption,
// the widen stage's n-gram filling, sleeps). The draft model's drafter
// grows fixed shapes and gain-cost trees (DraftGainCost). It drives the
// model package's layer-granular tree forward; it knows nothing of HTTP or
// the CLI.
package speculate

import "shade/sample"

// Tree is a draft: tokens proposed to follow the pending token (the last
// token produced and not yet run through the target). Node i has token
// Tokens[i] and parent Parent[i], another node (always earlier) or -1 for
// the pending token itself. Nodes are numbered level by level.
type Tree struct {
	Tokens []int32
	Parent []int32
	// Q[i] is the draft distribution node i was sampled from (at its
	// parent), needed for speculative sampling; nil when the node was
	// proposed deterministically (greedy drafting, n-gram lookup). Siblings
	// share one slice.
	Q [][]sample.Candidate
}

// Len is the number of drafted nodes.
func (t *Tree) Len() int {
	if t == nil {
		return 0
	}
	return len(t.Tokens)
}

// Reset empties the tree, keeping its storage.
func (t *Tree) Reset() {
	t.Tokens, t.Parent, t.Q = t.Tokens[:0], t.Parent[:0], t.Q[:0]
}

// Add appends a node and returns its index.
func (t *Tree) Add(tok, parent int32, q []sample.Candidate) int32 {
	t.Tokens = append(t.Tokens, tok)
	t.Parent = append(t.Parent, parent)
	t.Q = append(t.Q, q)
	return int32(len(t.Tokens) - 1)
}

// Children appends to dst the nodes whose parent is p, in order.
func (t *Tree) Children(p int32, dst []int32) []int32 {
	for i, q := range t.Parent {
		if q == p {
			dst = append(dst, int32(i))
		}
	}
	return dst
}

// Depth is the depth of node i (1 for a child of the pending token).
func (t *Tree) Depth(i int32) int {
	d := 0
	for ; i >= 0; i = t.Parent[i] {
		d++
	}
	return d
}
