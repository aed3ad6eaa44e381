package speculate

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"shade/model"
	"shade/sample"
)

// Shape bounds a draft: at most Width nodes per level, Depth levels and
// Max nodes in all. A chain is Width 1.
type Shape struct {
	Width, Depth, Max int
}

// ModelDrafter proposes drafts with a small model that shares the target's
// vocabulary. It keeps its own KV cache in step with the target's accepted
// text: each Draft first feeds whatever the target accepted that it has not
// seen, then grows the tree level by level, one batched pass per level
// (model.State.Extend), expanding the most likely frontier nodes.
type ModelDrafter struct {
	m       *model.Model
	s       *model.State
	sampler *sample.Sampler

	seen    []int32 // tokens whose KV is committed in s
	catchup int     // tokens the last Draft fed before drafting
	fed     []bool  // per node of the last draft: has a KV row in s
	nodeRow []int32 // per node: its row in s's tree in flight
	rootRow int32   // row of the pending token in s's tree
	logits  []float32
	rows    []int
	cands   []cand

	// Acceptance by sibling rank, from verification so far (decayed):
	// how often the target kept a node of that rank once it had reached
	// the node's parent. It calibrates which nodes a tree spends its rows on.
	nodeRanks []int // per node of the last draft
	ranks     *RankStats
	batch     model.Batch

	// Per node of the last draft: the draft's probability of its token at
	// its parent, and the estimated chance the whole path to it is
	// accepted. shadows[i+1] are node i's (shadows[0] the pending token's)
	// most likely children by the draft, whether drafted or not: the
	// verification pruner scores tree nodes against them.
	nodeQ     []float64
	nodeGain  []float64 // the estimate, corrected by depth
	nodeRaw   []float64 // the product of per-node estimates along the path
	nodeDepth []int
	shadows   [][]int32
	passes    int // draft passes of the last Draft after the catch-up one
	// modelTime is the time the last Draft spent in the model's passes
	// and head: the rest of its time is book-keeping.
	modelTime time.Duration
	passRows  []int // rows of each of those passes (the catch-up first)
	heap      candHeap
	// lastRate is the expected tokens per second of the last gain-cost
	// tree (DraftGainCost).
	lastRate float64

	// con, when set, is the target's constraint where the draft starts
	// (after the pending token): drafts are masked by it, so the tree
	// only holds tokens the constrained target can accept.
	con     sample.Constraint
	nodeCon []sample.Constraint // per node: con advanced along its path
	masked  []float32

	// gov, when set, is asked after every draft layer whether to stop.
	gov       Governor
	hook      func(layer int) error // d.layerHook, bound once
	preempted bool                  // the last Draft was cut short by gov
}

// cand is a possible child during expansion.
type cand struct {
	parent int32 // node, or -1
	tok    int32
	score  float64 // log of the estimated chance the node is accepted
	rank   int     // 0 for its parent's most likely child, 1 for the next, …
	order  int     // rank among its siblings' draws (stochastic drafts)
	prob   float64 // the draft's probability of tok at parent
	q      []sample.Candidate
	// Stochastic drafts: path is score with the token actually drawn
	// (what its descendants are scored from), and expect is the
	// estimated chance that a draw of this order is accepted, averaged
	// over what was left of q to draw from (RankStats.acceptDraw). A
	// draw's own score (score, expect) must not depend on the token it
	// gave: speculative sampling is exact only over q's draws as drawn,
	// and a tree that kept likely draws and dropped unlikely ones would
	// bias the output towards the draft's favourites.
	path   float64
	expect float64
}

// NewModelDrafter returns a drafter running m with a context of ctx tokens.
// params are the target's sampling parameters: a greedy target gets greedy
// drafts (top-ranked children), a sampling one gets children drawn from the
// draft's own distribution under the same processors.
func NewModelDrafter(m *model.Model, ctx int, params sample.Params) (*ModelDrafter, error) {
	s, err := m.NewState(ctx)
	if err != nil {
		return nil, err
	}
	return newModelDrafter(s, params)
}

// newModelDrafter is a drafter on state s, which has seen nothing yet
// (NewModelDrafterOn says otherwise).
func newModelDrafter(s *model.State, params sample.Params) (*ModelDrafter, error) {
	m := s.Model()
	params.Seed ^= 0x5eed5eed5eed5eed
	params.RepeatPenalty = 1 // the penalty's history is the target's business
	sm, err := sample.New(params)
	if err != nil {
		return nil, err
	}
	d := &ModelDrafter{m: m, s: s, sampler: sm, logits: make([]float32, m.Config.Vocab), ranks: new(RankStats)}
	d.hook = d.layerHook
	return d, nil
}

// SetGovernor makes every draft pass run layer by layer with a yield point
// after each layer, where g may preempt the draft (nil: never).
func (d *ModelDrafter) SetGovernor(g Governor) { d.gov = g }

// Preempted reports whether the last Draft was cut short by the governor.
func (d *ModelDrafter) Preempted() bool { return d.preempted }

func (d *ModelDrafter) layerHook(layer int) error {
	if d.gov != nil && d.gov.DraftLayer(layer, d.s.Rows(), d.s.LayerTimes[layer]) {
		return errPreempted
	}
	return nil
}

// run runs every layer of the pass in flight; false when the governor
// preempted it (the pass is then abandoned).
func (d *ModelDrafter) run() (bool, error) {
	t0 := time.Now()
	defer func() { d.modelTime += time.Since(t0) }()
	err := d.s.RunLayers(0, d.m.Config.Layers, d.hook)
	if err == errPreempted {
		d.s.Abandon()
		d.preempted = true
		return false, nil
	}
	return err == nil, err
}

// ShareRankStats makes the drafter learn into (and start from) st.
func (d *ModelDrafter) ShareRankStats(st *RankStats) {
	if st != nil {
		d.ranks = st
	}
}

// LastPasses are the batch rows of each model pass of the last draft (the
// catch-up first) and the time they took in all, head included: the rest
// of a draft's time is book-keeping.
func (d *ModelDrafter) LastPasses() ([]int, time.Duration) { return d.passRows, d.modelTime }

// Model returns the draft model.
func (d *ModelDrafter) Model() *model.Model { return d.m }

// Draft appends to t a tree of at most shape.Max nodes following ctx (the
// accepted text ending with the pending token).
func (d *ModelDrafter) Draft(ctx []int32, shape Shape, t *Tree) error {
	d.preempted = false
	if len(ctx) == 0 || shape.Max <= 0 || shape.Depth <= 0 || shape.Width <= 0 {
		return nil
	}
	if ok, err := d.catchUp(ctx, shape.Max); !ok {
		return err
	}
	vocab := d.m.Config.Vocab
	// Candidates: the best children of every frontier node.
	frontier := []int32{-1}
	frontierScore := []float64{0}
	nextRow := int32(d.rootRow + 1)
	d.noteShadows(-1, d.logits[:vocab], shape.Width)
	for depth := 1; depth <= shape.Depth && t.Len() < shape.Max; depth++ {
		d.cands = d.cands[:0]
		for k, p := range frontier {
			row := d.logits[k*vocab : (k+1)*vocab]
			if p >= 0 {
				d.noteShadows(p, row, shape.Width)
			}
			d.expand(p, frontierScore[k], row, shape.Width)
		}
		chosen := d.choose(min(shape.Width, shape.Max-t.Len()))
		if len(chosen) == 0 {
			break
		}
		frontier = frontier[:0]
		frontierScore = frontierScore[:0]
		for _, c := range chosen {
			frontier = append(frontier, d.addNode(t, c))
			frontierScore = append(frontierScore, c.path)
		}
		if depth == shape.Depth || t.Len() >= shape.Max {
			break
		}
		// Feed the new level in one batched pass to expand it next.
		ok, err := d.feed(t, frontier, &nextRow)
		if !ok {
			return err
		}
	}
	return nil
}

// catchUp feeds the draft what the target accepted that it has not seen
// (always at least the pending token) and leaves the pending token's
// logits in d.logits; false when the governor preempted it.
func (d *ModelDrafter) catchUp(ctx []int32, maxNodes int) (bool, error) {
	// Keep the common prefix, feed the rest (always ≥ 1 token).
	common := 0
	for common < len(d.seen) && common < len(ctx)-1 && d.seen[common] == ctx[common] {
		common++
	}
	if err := d.s.Truncate(common); err != nil {
		return false, err
	}
	d.seen = d.seen[:common]
	feed := ctx[common:]
	d.catchup = len(feed)
	if common+len(feed)+maxNodes+1 > d.s.Cache.Cap() {
		return false, fmt.Errorf("speculate: draft context full (%d tokens)", d.s.Cache.Cap())
	}
	d.fed = d.fed[:0]
	d.nodeRow = d.nodeRow[:0]
	d.nodeRanks = d.nodeRanks[:0]
	d.nodeQ = d.nodeQ[:0]
	d.nodeGain = d.nodeGain[:0]
	d.nodeRaw = d.nodeRaw[:0]
	d.nodeDepth = d.nodeDepth[:0]
	d.shadows = d.shadows[:0]
	d.nodeCon = d.nodeCon[:0]
	d.passes = 0
	d.modelTime = 0
	d.passRows = append(d.passRows[:0], len(feed))
	if err := d.s.Begin(model.Chain(feed)); err != nil {
		return false, err
	}
	if ok, err := d.run(); !ok {
		// Preempted while catching up: nothing is drafted, and the fed
		// tokens are fed again next time.
		return false, err
	}
	d.rootRow = int32(len(feed) - 1)
	d.logits = d.logits[:d.m.Config.Vocab]
	t0 := time.Now()
	err := d.s.Logits([]int{len(feed) - 1}, d.logits)
	d.modelTime += time.Since(t0)
	if err != nil {
		return false, err
	}
	return true, nil
}

// addNode adds a chosen candidate to the tree with its book-keeping.
func (d *ModelDrafter) addNode(t *Tree, c cand) int32 {
	n := t.Add(c.tok, c.parent, c.q)
	d.nodeRanks = append(d.nodeRanks, c.rank)
	d.nodeQ = append(d.nodeQ, c.prob)
	raw, depth := d.ranks.accept(c.prob, c.rank), 1
	if c.parent >= 0 {
		raw *= d.nodeRaw[c.parent]
		depth = d.nodeDepth[c.parent] + 1
	}
	d.nodeRaw = append(d.nodeRaw, raw)
	d.nodeDepth = append(d.nodeDepth, depth)
	d.nodeGain = append(d.nodeGain, raw*d.ranks.pathFactor(depth, c.rank))
	d.fed = append(d.fed, false)
	d.nodeRow = append(d.nodeRow, -1)
	if d.con != nil {
		d.nodeCon = append(d.nodeCon[:n], d.childConstraint(c.parent, c.tok))
	}
	for len(d.shadows) < t.Len()+1 {
		d.shadows = append(d.shadows, nil)
	}
	return n
}

// feed runs the given tree nodes through the draft in one batched pass
// (Extend), leaving their logits in d.logits in order; false when the
// governor preempted the pass (the nodes stay in the tree, unfed).
func (d *ModelDrafter) feed(t *Tree, nodes []int32, nextRow *int32) (bool, error) {
	vocab := d.m.Config.Vocab
	d.batch.Tokens = d.batch.Tokens[:0]
	d.batch.Parent = d.batch.Parent[:0]
	for _, n := range nodes {
		parentRow := d.rootRow
		if p := t.Parent[n]; p >= 0 {
			parentRow = d.nodeRow[p]
		}
		d.batch.Tokens = append(d.batch.Tokens, t.Tokens[n])
		d.batch.Parent = append(d.batch.Parent, parentRow)
		d.nodeRow[n] = *nextRow
		d.fed[n] = true
		*nextRow++
	}
	if err := d.s.Extend(d.batch); err != nil {
		return false, err
	}
	d.passes++
	d.passRows = append(d.passRows, len(nodes))
	if ok, err := d.run(); !ok {
		for _, n := range nodes {
			d.fed[n], d.nodeRow[n] = false, -1
		}
		return false, err
	}
	if cap(d.logits) < len(nodes)*vocab {
		d.logits = make([]float32, len(nodes)*vocab)
	}
	d.logits = d.logits[:len(nodes)*vocab]
	d.rows = d.rows[:0]
	for k := range nodes {
		d.rows = append(d.rows, k)
	}
	t0 := time.Now()
	err := d.s.Logits(d.rows, d.logits)
	d.modelTime += time.Since(t0)
	return true, err
}

// ShadowCount is how many of the draft's most likely children of a node
// beyond those drafted are kept (Shadows), for a pruner's normalisation.
const ShadowCount = 4

// noteShadows records node p's most likely children by the draft.
func (d *ModelDrafter) noteShadows(p int32, logits []float32, width int) {
	for len(d.shadows) < int(p)+2 {
		d.shadows = append(d.shadows, nil)
	}
	if !finite(logits) {
		d.shadows[p+1] = nil
		return
	}
	d.shadows[p+1] = topIDs(logits, width+ShadowCount)
}

// expand adds up to width candidate children of node p to d.cands.
//
// A row with a NaN or infinite logit (a broken draft model, or one that
// overflowed) proposes no children: the draft ends at p, as if rejected
// there. Its probabilities would be NaN, and a NaN must never reach the
// rank statistics' bins, an index.
func (d *ModelDrafter) expand(p int32, score float64, logits []float32, width int) {
	if !finite(logits) {
		return
	}
	if d.con != nil {
		if logits = d.mask(p, logits); logits == nil {
			return
		}
	}
	if d.sampler.Params().Greedy() {
		lse := logSumExp(logits)
		for rank, id := range topIDs(logits, width) {
			if math.IsInf(float64(logits[id]), -1) {
				break // masked: fewer tokens allowed than the width
			}
			lp := float64(logits[id]) - lse
			sc := score + d.nodeScore(rank, lp)
			d.cands = append(d.cands, cand{parent: p, tok: id, rank: rank, order: rank, prob: math.Exp(lp),
				score: sc, path: sc})
		}
		return
	}
	// Draw up to width distinct tokens from the draft distribution,
	// without replacement; verification undoes each draw in the same order.
	q := slices.Clone(d.sampler.Distribution(logits))
	left := make([]float32, len(q))
	// What is left of q to draw from: its mass, and by probability bin
	// its mass and sum of squares, and its sum of q·log q, from which a
	// draw's score is taken before the draw.
	var rest, qlogq float64
	var binMass, binSq [probBins]float64
	for i, c := range q {
		left[i] = c.P
		if x := float64(c.P); x > 0 {
			rest += x
			qlogq += x * math.Log(x)
			binMass[probBin(x)] += x
			binSq[probBin(x)] += x * x
		}
	}
	var mass float32 = 1
	for order := 0; order < width && mass > 1e-6; order++ {
		expLogP := qlogq / max(rest, 1e-30)
		expect := d.ranks.acceptDraw(&binMass, &binSq, order)
		r := d.sampler.Uniform() * mass
		pick := -1
		var acc float32
		for i, w := range left {
			if w <= 0 {
				continue
			}
			acc += w
			pick = i
			if r < acc {
				break
			}
		}
		if pick < 0 {
			break
		}
		x := float64(q[pick].P)
		d.cands = append(d.cands, cand{parent: p, tok: q[pick].ID, rank: order, order: order, q: q, prob: x,
			score: score + d.nodeScore(order, expLogP), path: score + d.nodeScore(order, math.Log(x)), expect: expect})
		mass -= left[pick]
		left[pick] = 0
		rest -= x
		qlogq -= x * math.Log(x)
		binMass[probBin(x)] -= x
		binSq[probBin(x)] -= x * x
	}
}

// siblingRatio is how likely, relative to the best node of its level, a
// node must be to enter the tree.
const siblingRatio = 0.2

const maxRanks = 16

// RankStats is the acceptance of draft nodes by sibling rank, learned from
// verification. It outlives a generation: an engine keeps one per draft
// model so each request starts from what earlier ones learned.
// It is safe for concurrent use.
type RankStats struct {
	mu                sync.Mutex
	drafted, accepted [maxRanks]float64
	// The same by the draft's probability of the node (probBins equal
	// bins), apart for first-ranked children and the others: how far the
	// draft's confidence is from the target's verdict.
	probDrafted, probAccepted [2][probBins]float64
	top                       float64 // running mean of the draft's top child probability
	topN                      int
	// By depth: the estimated path acceptance of the nodes drafted there
	// (before this correction) and how many were accepted. Per-node
	// estimates multiplied along a path drift from what is observed as
	// paths grow; their ratio corrects the product.
	depthPred, depthAcc [maxDepthStats]float64
}

const maxDepthStats = 64

// pathFactor is the depth correction of a node's estimated path
// acceptance: a first-ranked node takes its own depth's; any other takes
// its parent's (the path down to the parent is what the correction knows
// of: the draft's other choices are accepted about as their calibration
// says, and inflating them with the first-ranked chains' factor would
// grow wide trees of unlikely siblings).
func (st *RankStats) pathFactor(depth, rank int) float64 {
	if rank > 0 {
		depth--
	}
	return st.depthFactor(depth)
}

// depthFactor is observed ÷ estimated acceptance of first-ranked nodes at
// a depth (1 before any observation). A depth with too little evidence of its own
// (less than one node's worth of estimated acceptance) takes the factor of
// the deepest depth above it that has it: trees have not grown there yet,
// and a neutral factor would make them stop at the depth they have reached
// while a draft that agrees with the target keeps agreeing further down
// (the estimate multiplies per-node acceptances, so it is lowest exactly
// where that matters).
func (st *RankStats) depthFactor(depth int) float64 {
	d := min(depth, maxDepthStats-1)
	const weight = 2 // prior strength, in accepted nodes
	const evidence = 1
	st.mu.Lock()
	defer st.mu.Unlock()
	for d > 1 && st.depthPred[d] < evidence {
		d--
	}
	return (st.depthAcc[d] + weight) / (st.depthPred[d] + weight)
}

const probBins = 10

// noteTop records the draft's probability of its most likely child at an
// expanded node: what the next expansion's best child can be expected to
// have before it is drafted.
func (st *RankStats) noteTop(q float64) {
	if !(q >= 0 && q <= 1) {
		return // a NaN kept would poison every later request's estimate
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.topN == 0 {
		st.top = q
	} else {
		st.top = 0.95*st.top + 0.05*q
	}
	st.topN++
}

// topProb is the running mean of noteTop (0.5 before any).
func (st *RankStats) topProb() float64 {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.topN == 0 {
		return 0.5
	}
	return st.top
}

// accept is the estimated chance that a node of the given sibling rank,
// to which the draft gave probability q, is accepted once its parent is:
// what was observed for drafts of that confidence and rank (first or
// not), starting from what was observed for the rank as a whole. A
// draft's probabilities can be far from its agreement with the target
// (a small draft over a large vocabulary is unsure and yet right), so the
// draft's own q is only the prior of last resort.
func (st *RankStats) accept(q float64, rank int) float64 {
	if !(q > 0) { // NaN too
		q = 0
	}
	q = min(q, 1)
	b := probBin(q)
	r := min(rank, 1)
	const weight = 4 // prior strength, in observations
	st.mu.Lock()
	defer st.mu.Unlock()
	rk := min(rank, maxRanks-1)
	w := st.drafted[rk] / (st.drafted[rk] + 2*weight)
	prior := w*(st.accepted[rk]/max(st.drafted[rk], 1e-9)) + (1-w)*q
	return (st.probAccepted[r][b] + weight*prior) / (st.probDrafted[r][b] + weight)
}

// acceptDraw is accept averaged over a draw from a distribution whose
// probability mass in each bin is mass[b], with sq[b] the sum of the
// squares of its probabilities there (accept is linear in q within a
// bin): the estimated acceptance of a sampled draft node before its token
// is known, whatever the draw gives.
func (st *RankStats) acceptDraw(mass, sq *[probBins]float64, rank int) float64 {
	r := min(rank, 1)
	const weight = 4 // as accept's
	st.mu.Lock()
	defer st.mu.Unlock()
	rk := min(rank, maxRanks-1)
	w := st.drafted[rk] / (st.drafted[rk] + 2*weight)
	rate := st.accepted[rk] / max(st.drafted[rk], 1e-9)
	var total, sum float64
	for b := range probBins {
		m := mass[b]
		if !(m > 0) {
			continue
		}
		s := min(max(sq[b], 0), m)
		total += m
		sum += (m*(st.probAccepted[r][b]+weight*w*rate) + weight*(1-w)*s) / (st.probDrafted[r][b] + weight)
	}
	if total <= 0 {
		return 0
	}
	return sum / total
}

// nodeScore is the log of the estimated chance that a node of the given
// sibling rank is accepted once its parent is: the acceptance observed for
// that rank, with a prior that favours the draft's first choice, blended
// with the draft's own probability (logp) until evidence accumulates.
func (d *ModelDrafter) nodeScore(rank int, logp float64) float64 {
	rank = min(rank, maxRanks-1)
	prior := 0.7 / float64(1+3*rank) // 0.7, 0.18, 0.1, …
	const weight = 4                 // prior strength, in observations
	st := d.ranks
	st.mu.Lock()
	defer st.mu.Unlock()
	rate := (st.accepted[rank] + weight*prior) / (st.drafted[rank] + weight)
	w := st.drafted[rank] / (st.drafted[rank] + 2*weight)
	return w*math.Log(max(rate, 1e-6)) + (1-w)*logp
}

// observe updates the per-rank acceptance from a verified tree: a node
// counts once the target reached its parent (the pending token or an
// accepted node).
func (d *ModelDrafter) observe(t *Tree, path []int32) {
	reached := map[int32]bool{-1: true}
	kept := map[int32]bool{}
	for _, n := range path {
		reached[n], kept[n] = true, true
	}
	st := d.ranks
	st.mu.Lock()
	defer st.mu.Unlock()
	for i := range st.drafted {
		st.drafted[i] *= 0.98
		st.accepted[i] *= 0.98
	}
	for r := range st.probDrafted {
		for i := range st.probDrafted[r] {
			st.probDrafted[r][i] *= 0.99
			st.probAccepted[r][i] *= 0.99
		}
	}
	for i := range st.depthPred {
		st.depthPred[i] *= 0.98
		st.depthAcc[i] *= 0.98
	}
	for n := int32(0); int(n) < t.Len() && int(n) < len(d.nodeRaw) && int(n) < len(d.nodeRanks); n++ {
		if d.nodeRanks[n] != 0 {
			continue // the depth correction is of first-ranked chains (pathFactor)
		}
		dp := min(d.nodeDepth[n], maxDepthStats-1)
		st.depthPred[dp] += d.nodeRaw[n]
		if kept[n] {
			st.depthAcc[dp]++
		}
	}
	for n := int32(0); int(n) < t.Len() && int(n) < len(d.nodeRanks); n++ {
		if !reached[t.Parent[n]] {
			continue
		}
		r := min(d.nodeRanks[n], maxRanks-1)
		st.drafted[r]++
		b := probBin(d.nodeQ[n])
		pr := min(d.nodeRanks[n], 1)
		st.probDrafted[pr][b]++
		if kept[n] {
			st.accepted[r]++
			st.probAccepted[pr][b]++
		}
	}
}

// choose keeps the n most likely candidates. A sampled child is kept only
// with every earlier draw of its parent, so each node's children remain a
// prefix of its draws (what makes tree speculative sampling exact).
func (d *ModelDrafter) choose(n int) []cand {
	slices.SortStableFunc(d.cands, func(a, b cand) int {
		switch {
		case a.score > b.score:
			return -1
		case a.score < b.score:
			return 1
		}
		return 0
	})
	type key struct {
		parent int32
		order  int
	}
	taken := map[key]bool{}
	var out []cand
	for _, c := range d.cands {
		if len(out) == n {
			break
		}
		// A node much less likely than the level's best is not worth its
		// verify row: the budget goes to depth instead (a confident draft
		// grows a chain, an unsure one branches).
		if len(out) > 0 && c.score < out[0].score+math.Log(siblingRatio) {
			break
		}
		if c.q != nil && c.order > 0 && !taken[key{c.parent, c.order - 1}] {
			continue
		}
		taken[key{c.parent, c.order}] = true
		out = append(out, c)
	}
	// Keep siblings in draw order, as verification expects.
	slices.SortStableFunc(out, func(a, b cand) int {
		if a.parent != b.parent {
			return int(a.parent - b.parent)
		}
		return a.order - b.order
	})
	return out
}

// Accepted tells the drafter which nodes of its last draft the target kept
// (in order), so that it commits their KV instead of recomputing them.
func (d *ModelDrafter) Accepted(ctx []int32, t *Tree, path []int32) error {
	if d.s.Rows() == 0 && len(d.fed) == 0 {
		return nil
	}
	d.observe(t, path)
	rows := make([]int, 0, int(d.rootRow)+1+len(path))
	for r := 0; r <= int(d.rootRow); r++ {
		rows = append(rows, r)
	}
	seen := append(d.seen, ctx[len(d.seen):]...)
	for _, n := range path {
		if int(n) >= len(d.fed) || !d.fed[n] {
			break
		}
		rows = append(rows, int(d.nodeRow[n]))
		seen = append(seen, t.Tokens[n])
	}
	if err := d.s.Commit(rows); err != nil {
		return err
	}
	d.seen = seen
	d.fed = d.fed[:0]
	return nil
}

// Reset forgets the draft's context.
func (d *ModelDrafter) Reset() {
	d.s.Truncate(0)
	d.seen = d.seen[:0]
	d.fed = d.fed[:0]
}

// probBin is the bin of the rank statistics a probability falls in; a NaN
// (which no caller should pass) falls in the lowest, an infinity at an end.
func probBin(q float64) int {
	switch {
	case !(q > 0):
		return 0
	case q >= 1:
		return probBins - 1
	}
	return int(q * probBins)
}

// finite reports whether every value of x is a finite number.
func finite(x []float32) bool {
	for _, v := range x {
		// v-v is 0 for a finite v and NaN for ±Inf and NaN.
		if v-v != 0 {
			return false
		}
	}
	return true
}

func logSumExp(x []float32) float64 {
	m := x[0]
	for _, v := range x {
		m = max(m, v)
	}
	var s float64
	for _, v := range x {
		s += math.Exp(float64(v - m))
	}
	return float64(m) + math.Log(s)
}

// topIDs returns the ids of the k largest logits, best first (lowest id on ties).
func topIDs(x []float32, k int) []int32 {
	k = min(k, len(x))
	out := make([]int32, 0, k)
	for i, v := range x {
		if len(out) < k || v > x[out[len(out)-1]] {
			j := len(out)
			if len(out) < k {
				out = append(out, 0)
			} else {
				j = k - 1
			}
			for j > 0 && v > x[out[j-1]] {
				out[j] = out[j-1]
				j--
			}
			out[j] = int32(i)
		}
	}
	return out
}
