package speculate

// NgramCache proposes continuations for n-gram filling from several
// sources: the context (prompt and verified output) and the draft branches
// the target rejected. Every n-gram (Min…Max tokens) it sees counts one
// vote, per source weight, for the token that followed it; votes decay
// with every step (Tick) so stale continuations fade, and a lookup weighs a
// longer matching n-gram above a shorter one (n² per vote). The best
// continuation is extended greedily, token by token. It only proposes:
// the target verifies every proposed token, so output never depends on it.
type NgramCache struct {
	Min, Max int
	// Decay multiplies every vote at each Tick (default 0.995: a vote
	// loses half its weight in about 140 steps unless it is seen again).
	Decay float64
	// RejectedWeight is a vote from a rejected draft branch (default 0.5;
	// the context's votes weigh 1).
	RejectedWeight float64
	// MaxEntries bounds the n-grams kept (default 1<<16); beyond it the
	// faintest are dropped.
	MaxEntries int

	tick    uint64
	table   map[uint64]*ngramVotes
	ctx     []int32 // the context indexed so far
	indexed int     // n-grams ending before this position are in table
	seq     []int32 // scratch: suffix + proposal
	out     []int32
}

// ngramVotes are the tokens seen after one n-gram.
type ngramVotes struct {
	n     int
	next  []int32
	votes []float64
	at    uint64 // tick the votes were last brought up to date
}

// NewNgramCache returns a cache over n-grams of min…max tokens.
func NewNgramCache(min, max int) *NgramCache {
	min, max = clampInt(min, 1, 16), clampInt(max, 1, 16)
	if max < min {
		max = min
	}
	return &NgramCache{Min: min, Max: max, Decay: 0.995, RejectedWeight: 0.5, MaxEntries: 1 << 16,
		table: make(map[uint64]*ngramVotes)}
}

// Len is the number of n-grams held.
func (c *NgramCache) Len() int { return len(c.table) }

// Tick ages every vote by one step.
func (c *NgramCache) Tick() { c.tick++ }

// refresh applies the decay owed since e was last touched.
func (c *NgramCache) refresh(e *ngramVotes) {
	if e.at == c.tick {
		return
	}
	f := 1.0
	for k := e.at; k < c.tick && f > 1e-6; k++ {
		f *= c.Decay
	}
	for i := range e.votes {
		e.votes[i] *= f
	}
	e.at = c.tick
}

// vote counts w for tok following the n-gram gram.
func (c *NgramCache) vote(gram []int32, tok int32, w float64) {
	h := ngramHash(gram)
	e := c.table[h]
	if e == nil {
		if len(c.table) >= c.MaxEntries {
			c.prune()
		}
		e = &ngramVotes{n: len(gram), at: c.tick}
		c.table[h] = e
	}
	c.refresh(e)
	for i, t := range e.next {
		if t == tok {
			e.votes[i] += w
			return
		}
	}
	// A bounded fan-out per n-gram: the faintest continuation gives way.
	if len(e.next) >= 8 {
		low := 0
		for i := range e.votes {
			if e.votes[i] < e.votes[low] {
				low = i
			}
		}
		e.next[low], e.votes[low] = tok, w
		return
	}
	e.next = append(e.next, tok)
	e.votes = append(e.votes, w)
}

// prune drops the n-grams whose strongest vote has faded the most, down
// to three quarters of MaxEntries.
func (c *NgramCache) prune() {
	limit := 0.05
	for len(c.table) > c.MaxEntries*3/4 {
		for h, e := range c.table {
			c.refresh(e)
			best := 0.0
			for _, v := range e.votes {
				best = max(best, v)
			}
			if best < limit {
				delete(c.table, h)
			}
		}
		limit *= 2
	}
}

// add indexes the n-grams of seq ending at positions from..len(seq)-1 (each
// votes for the token at that position) with weight w.
func (c *NgramCache) add(seq []int32, from int, w float64) {
	for e := max(from, 1); e < len(seq); e++ {
		for n := c.Min; n <= c.Max && n <= e; n++ {
			c.vote(seq[e-n:e], seq[e], w)
		}
	}
}

// sync indexes the part of ctx not yet seen, starting over (without
// forgetting votes) when ctx is not a continuation of what was indexed.
func (c *NgramCache) sync(ctx []int32) {
	same := len(ctx) >= len(c.ctx)
	for i := 0; same && i < len(c.ctx); i++ {
		same = ctx[i] == c.ctx[i]
	}
	if !same {
		c.indexed = 0
	}
	c.add(ctx, c.indexed, 1)
	c.ctx = append(c.ctx[:0], ctx...)
	c.indexed = len(ctx)
}

// Rejected indexes the draft branches the target rejected in one step: ctx
// is the accepted text before the step (its last token the pending one),
// t the verified tree and path the accepted nodes. Only nodes before
// drafted (the drafter's own, not n-gram filling) count, so the cache does
// not vote for its own proposals.
func (c *NgramCache) Rejected(ctx []int32, t *Tree, path []int32, drafted int) {
	onPath := func(i int32) bool {
		for _, p := range path {
			if p == i {
				return true
			}
		}
		return false
	}
	drafted = min(drafted, t.Len())
	hasChild := make([]bool, drafted)
	for i := range drafted {
		if p := t.Parent[i]; p >= 0 && int(p) < drafted {
			hasChild[p] = true
		}
	}
	keep := min(len(ctx), c.Max)
	var branch []int32
	for leaf := range drafted {
		if hasChild[leaf] || onPath(int32(leaf)) {
			continue
		}
		branch = branch[:0]
		for n := int32(leaf); n >= 0; n = t.Parent[n] {
			branch = append(branch, t.Tokens[n])
		}
		seq := append(c.seq[:0], ctx[len(ctx)-keep:]...)
		for i := len(branch) - 1; i >= 0; i-- {
			seq = append(seq, branch[i])
		}
		c.seq = seq
		c.add(seq, keep, c.RejectedWeight)
	}
}

// Continue returns up to k tokens likely to follow ctx+extra (extra:
// hypothetical tokens after ctx, such as a draft path), built greedily from
// the strongest votes, longer matches weighing more. It indexes ctx first
// and never indexes extra. The result is valid until the next call; nil
// when nothing matches.
func (c *NgramCache) Continue(ctx, extra []int32, k int) []int32 {
	c.sync(ctx)
	if k <= 0 {
		return nil
	}
	keep := min(len(ctx), c.Max)
	seq := append(c.seq[:0], ctx[len(ctx)-keep:]...)
	seq = append(seq, extra...)
	start := len(seq)
	for range k {
		tok, ok := c.best(seq)
		if !ok {
			break
		}
		seq = append(seq, tok)
	}
	c.seq = seq
	c.out = append(c.out[:0], seq[start:]...)
	if len(c.out) == 0 {
		return nil
	}
	return c.out
}

// best is the highest-scoring next token after seq: the sum over matching
// n-grams of n² × votes.
func (c *NgramCache) best(seq []int32) (int32, bool) {
	var toks [32]int32
	var score [32]float64
	m := 0
	for n := c.Min; n <= c.Max && n <= len(seq); n++ {
		e := c.table[ngramHash(seq[len(seq)-n:])]
		if e == nil || e.n != n {
			continue
		}
		c.refresh(e)
		w := float64(n * n)
		for i, t := range e.next {
			j := 0
			for j < m && toks[j] != t {
				j++
			}
			if j == m {
				if m == len(toks) {
					continue
				}
				toks[m] = t
				m++
			}
			score[j] += w * e.votes[i]
		}
	}
	bi := -1
	for j := range m {
		// Frequency filter: a continuation must keep at least a tenth of a
		// fresh vote, so faded ones stop being proposed.
		if score[j] >= 0.1 && (bi < 0 || score[j] > score[bi]) {
			bi = j
		}
	}
	if bi < 0 {
		return 0, false
	}
	return toks[bi], true
}
