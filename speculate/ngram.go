package speculate

// Ngram drafts by lookup: the longest recent n-gram (NgramMax down to
// NgramMin tokens) that ends the context and occurred earlier in it — in the
// prompt or in the text generated so far — proposes the tokens that followed
// that earlier occurrence (like llama.cpp's prompt lookup and n-gram cache).
// Proposals are deterministic: a chain with no draft distribution.
type Ngram struct {
	Min, Max int // n-gram lengths tried, longest first

	ctx     []int32          // the context indexed so far
	indexed int              // n-grams ending before this position are in last
	last    map[uint64]int32 // n-gram hash (with n) → end position of its latest occurrence
}

// NewNgram returns an n-gram drafter for n-grams of min…max tokens.
func NewNgram(min, max int) *Ngram {
	min, max = clampInt(min, 1, 16), clampInt(max, 1, 16)
	if max < min {
		max = min
	}
	return &Ngram{Min: min, Max: max, last: make(map[uint64]int32)}
}

func clampInt(x, lo, hi int) int { return max(lo, min(hi, x)) }

func ngramHash(toks []int32) uint64 {
	h := uint64(14695981039346656037) ^ uint64(len(toks))
	for _, t := range toks {
		h ^= uint64(uint32(t))
		h *= 1099511628211
	}
	return h
}

// sync indexes the n-grams of ctx that end before its last position,
// starting over when ctx is not a continuation of what was indexed.
func (g *Ngram) sync(ctx []int32) {
	same := len(ctx) >= len(g.ctx)
	for i := 0; same && i < len(g.ctx); i++ {
		same = ctx[i] == g.ctx[i]
	}
	if !same {
		clear(g.last)
		g.indexed = 0
	}
	g.ctx = append(g.ctx[:0], ctx...)
	// An n-gram ending at position e covers ctx[e-n:e]; the one ending at
	// len(ctx) is the suffix being looked up, so stop before it.
	for e := max(g.indexed, 1); e < len(ctx); e++ {
		for n := g.Min; n <= g.Max && n <= e; n++ {
			g.last[ngramHash(ctx[e-n:e])] = int32(e)
		}
	}
	g.indexed = max(g.indexed, len(ctx))
}

// Propose appends to t a chain of up to k tokens following ctx, as children
// of the pending token (ctx's last token). It returns how many it added.
func (g *Ngram) Propose(ctx []int32, k int, t *Tree) int {
	if k <= 0 || len(ctx) < g.Min+1 {
		g.sync(ctx)
		return 0
	}
	g.sync(ctx)
	for n := min(g.Max, len(ctx)-1); n >= g.Min; n-- {
		suffix := ctx[len(ctx)-n:]
		e, ok := g.last[ngramHash(suffix)]
		if !ok || !equal(ctx[int(e)-n:e], suffix) {
			continue
		}
		follow := ctx[e:min(int(e)+k, len(ctx))]
		if len(follow) == 0 {
			continue
		}
		parent := int32(-1)
		for _, tok := range follow {
			parent = t.Add(tok, parent, nil)
		}
		return len(follow)
	}
	return 0
}

func equal(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Continue returns up to k tokens that followed, earlier in ctx, the
// longest n-gram ending the text ctx+extra (extra: hypothetical tokens
// after ctx, such as a draft path). It indexes ctx as Propose does and
// never indexes extra. The result aliases ctx; nil when nothing matches.
func (g *Ngram) Continue(ctx, extra []int32, k int) []int32 {
	g.sync(ctx)
	total := len(ctx) + len(extra)
	if k <= 0 || total < g.Min+1 {
		return nil
	}
	var suffix [16]int32
	for n := min(g.Max, total-1); n >= g.Min; n-- {
		for i := range n {
			j := total - n + i
			if j < len(ctx) {
				suffix[i] = ctx[j]
			} else {
				suffix[i] = extra[j-len(ctx)]
			}
		}
		e, ok := g.last[ngramHash(suffix[:n])]
		if !ok || !equal(ctx[int(e)-n:e], suffix[:n]) {
			continue
		}
		if follow := ctx[e:min(int(e)+k, len(ctx))]; len(follow) > 0 {
			return follow
		}
	}
	return nil
}
