package speculate

import (
	"container/heap"
	"slices"

	"shade/cost"
	"shade/quant"
)

// GainCost configures gain-cost drafting (DraftGainCost).
type GainCost struct {
	Cost     *cost.Model // the device's costs; required
	MaxNodes int         // safety cap on the tree (and the context room)
	// Unbatched expands one frontier node per draft pass (the ablation of
	// batch-aware drafting); otherwise every frontier node worth
	// expanding goes into one batched pass.
	Unbatched bool
	Width     int // children considered per expanded node (default 4)
	// PerNode is the step's book-keeping per tree node beyond the model's
	// passes (drafting, verification and commit in Go), in seconds: on a
	// small model it is what stops trees from growing.
	PerNode float64
	// RowFloor is the least a verify row costs, in seconds, as observed
	// (the slope of verify time against rows): reads and compute overlap
	// less than the cost model's "the longer of the two" assumes.
	RowFloor float64
	// TileSteps[k], when set, is how much longer verify passes were
	// observed to take with k+2 kernel tiles of rows than with k+1 (the
	// row that starts a tile pays it): the cost model's own estimate of
	// that step is a floor, since compute beside streaming reads is
	// slower than it was measured alone.
	TileSteps []float64
}

// anticipate is how much of the last tree's rate a node must reach to
// enter the next tree (DraftGainCost): most of it, since step rates vary.
const anticipate = 0.8

// maxGainCostDepth bounds how deep a gain-cost tree may grow.
const maxGainCostDepth = 32

// DraftGainCost appends to t a tree shaped for the most expected tokens
// per unit of step time (the flash-aware design, package flash). Each candidate node has a
// gain, the estimated chance that it is accepted (the calibrated
// acceptance of its draft probability times its parent's gain), and a
// marginal cost from the cost model: one more verify row, plus a share of
// a draft pass when a node is expanded to find its children. Nodes are
// added in order of gain per marginal cost while that marginal rate is at
// least the tree's average rate so far, E/T, with E the expected tokens of
// the step (1 + the gains in the tree) and T its estimated time (draft
// passes + the verify pass, whose streamed-layer reads are paid once
// whatever the rows, less the reads of the pass's first streamed layers
// that the streamer does while the draft runs: cost.Model.Overlap). Adding a node below that rate would lower the rate
// of the whole step, so growth stops there: there is no fixed size budget,
// only the safety cap. Frontier nodes worth expanding are expanded
// together in one batched draft pass.
//
// Siblings are added in their draw order (greedy: rank order), so each
// node's children stay a prefix of its draws, and a sampled node's score
// is what a draw of its order is expected to be worth, not what the token
// drawn is (cand.expect): which draws enter the tree does not depend on
// what they drew, and speculative sampling over the tree remains exact.
func (d *ModelDrafter) DraftGainCost(ctx []int32, g GainCost, t *Tree) error {
	d.preempted = false
	if len(ctx) == 0 || g.MaxNodes <= 0 || g.Cost == nil {
		return nil
	}
	if g.Width <= 0 {
		g.Width = 4
	}
	if ok, err := d.catchUp(ctx, g.MaxNodes); !ok {
		return err
	}
	cm := g.Cost
	vocab := d.m.Config.Vocab
	base := cm.VerifyRows(1) + cm.Head(1)
	expect := 1.0 // E: the bonus token is always produced
	// Drafting is not all extra time: while it runs, the streamer reads
	// the verify pass's first streamed layers (cost.Model.Overlap), so a
	// draft pass costs only what it adds beyond the reads it hides.
	drafting := cm.Draft(d.catchup)
	draftCost := func(from, more float64, rows int) float64 {
		return more - (cm.Overlap(from+more, rows) - cm.Overlap(from, rows))
	}
	total := draftCost(0, drafting, 1) + base // T
	eps := max(1e-3*base, 1e-7)               // book-keeping per row, so free rows are not infinitely attractive
	rate := func() float64 { return expect / total }
	// A node is worth its cost if it does not lower the rate the finished
	// tree will have. Early in growth the tree's rate so far is low (one
	// token over a whole verify pass), and nodes it lets in stay: cheap
	// rows of unlikely siblings that crowd out deeper nodes. So the bar is
	// also most of the rate the last tree reached.
	bar := func() float64 { return max(rate(), anticipate*d.lastRate) }
	defer func() { d.lastRate = rate() }()
	rowCost := func(rows int) float64 {
		c := max(cm.VerifyRows(rows+1)-cm.VerifyRows(rows), g.RowFloor)
		if k := rows/quant.TileRows - 1; rows%quant.TileRows == 0 && k >= 0 && k < len(g.TileSteps) {
			c = max(c, g.TileSteps[k])
		}
		return c + eps
	}

	d.heap = d.heap[:0]
	d.noteShadows(-1, d.logits[:vocab], g.Width)
	d.pushChildren(-1, d.logits[:vocab], g.Width)
	type key struct {
		parent int32
		order  int
	}
	taken := map[key]bool{}
	expanded := map[int32]bool{}
	nextRow := d.rootRow + 1
	var toExpand []int32
	for {
		// Add candidates while each raises the step's rate.
		added := 0
		for d.heap.Len() > 0 && t.Len() < g.MaxNodes {
			c := d.heap[0]
			dc := rowCost(t.Len() + 1)
			if c.score/dc < bar() {
				break
			}
			heap.Pop(&d.heap)
			if c.order > 0 && !taken[key{c.parent, c.order - 1}] {
				continue // an earlier draw of its parent was not taken
			}
			taken[key{c.parent, c.order}] = true
			d.addNode(t, c)
			expect += c.score
			total += dc
			added++
		}
		// Expand the tree nodes whose best child would still raise the
		// rate, counting the draft pass that finds their children.
		toExpand = toExpand[:0]
		for n := range int32(t.Len()) {
			if !expanded[n] && t.Depth(n) < maxGainCostDepth {
				toExpand = append(toExpand, n)
			}
		}
		slices.SortStableFunc(toExpand, func(a, b int32) int {
			switch {
			case d.nodeGain[a] > d.nodeGain[b]:
				return -1
			case d.nodeGain[a] < d.nodeGain[b]:
				return 1
			}
			return 0
		})
		childAccept := d.ranks.accept(d.ranks.topProb(), 0)
		childGain := func(n int32) float64 {
			return d.nodeRaw[n] * childAccept * d.ranks.depthFactor(d.nodeDepth[n]+1)
		}
		k, pass, passCost := 0, 0.0, 0.0
		rows := t.Len()
		for _, n := range toExpand {
			if rows >= g.MaxNodes {
				break
			}
			dDraft := cm.Draft(k+1) - cm.Draft(k)
			if g.Unbatched {
				dDraft = cm.Draft(1)
			}
			dCost := draftCost(drafting+pass, dDraft, rows+2)
			gain := childGain(n)
			if gain/(dCost+rowCost(rows+1)) < bar() {
				break
			}
			pass += dDraft
			passCost += dCost
			k++
			rows++
			if g.Unbatched {
				break // small expansions run alone
			}
		}
		if k == 0 {
			if added == 0 {
				return nil
			}
			continue
		}
		nodes := slices.Clone(toExpand[:k])
		drafting += pass
		total += passCost
		ok, err := d.feed(t, nodes, &nextRow)
		if !ok {
			return err
		}
		for j, n := range nodes {
			expanded[n] = true
			row := d.logits[j*vocab : (j+1)*vocab]
			d.noteShadows(n, row, g.Width)
			d.pushChildren(n, row, g.Width)
		}
	}
}

// pushChildren puts node p's candidate children on the heap, scored by
// their gain: the estimated chance the path to them is accepted.
func (d *ModelDrafter) pushChildren(p int32, logits []float32, width int) {
	d.cands = d.cands[:0]
	d.expand(p, 0, logits, width)
	parentRaw, depth := 1.0, 1
	if p >= 0 {
		parentRaw, depth = d.nodeRaw[p], d.nodeDepth[p]+1
	}
	if len(d.cands) > 0 && d.cands[0].order == 0 {
		d.ranks.noteTop(d.cands[0].prob)
	}
	for _, c := range d.cands {
		a := c.expect // sampled: not by the token drawn (cand.expect)
		if c.q == nil {
			a = d.ranks.accept(c.prob, c.rank)
		}
		c.score = parentRaw * d.ranks.pathFactor(depth, c.rank) * a
		heap.Push(&d.heap, c)
	}
}

// candHeap is a max-heap of candidates by score.
type candHeap []cand

func (h candHeap) Len() int           { return len(h) }
func (h candHeap) Less(i, j int) bool { return h[i].score > h[j].score }
func (h candHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *candHeap) Push(x any)        { *h = append(*h, x.(cand)) }
func (h *candHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}

// Shadows returns the draft's most likely children of node n (-1: the
// pending token) in the last draft, drafted or not; nil if n was not
// expanded.
func (d *ModelDrafter) Shadows(n int32) []int32 {
	if int(n)+1 >= len(d.shadows) || n < -1 {
		return nil
	}
	return d.shadows[n+1]
}

// NodeProb is the draft's probability of node n's token at its parent.
func (d *ModelDrafter) NodeProb(n int32) float64 {
	if n < 0 || int(n) >= len(d.nodeQ) {
		return 0
	}
	return d.nodeQ[n]
}

// NodeGain is the estimated chance that the path to node n is accepted.
func (d *ModelDrafter) NodeGain(n int32) float64 {
	if n < 0 || int(n) >= len(d.nodeGain) {
		return 0
	}
	return d.nodeGain[n]
}

// DraftPasses is the number of draft passes the last draft ran after
// catching up.
func (d *ModelDrafter) DraftPasses() int { return d.passes }
