package spec

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"shade/cost"
	"shade/model"
	"shade/quant"
)

// leverState is what a Decoder in Lever mode keeps between the stages of a
// step: the prune layer, each node's pruning features, which nodes were
// pruned and which form the draft's main path.
type leverState struct {
	layer   int  // target layers run before pruning; 0: no stop mid-pass
	pruning bool // a predictor is set and pruning is on
	feats   [][PruneFeatures]float64
	lensTop []float64 // per node+1: the lens's top share among that node's children and shadows
	pruned  []bool    // per node; nil when nothing was pruned this step
	main    []bool    // per node: on the draft's main path
	scores  []float64
	order   []int32
	set     []bool
	keep    []int
	lensTok []int32
	lensOut []float32
	kids    []int32
	sampled bool // the step had features taken
	samples []PruneSample
	// modelTime is the time this step spent in the target's passes and
	// head; perNode is the decayed mean of the step's other time per tree
	// node (what a node costs beyond the cost model's passes).
	modelTime time.Duration
	perNode   float64
	// cost is this decoder's copy of the cost model, its compute and
	// draft scales learned from the steps so far; the last verify pass's
	// shape and time feed the learning.
	cost                   *cost.Model
	verifyTook             time.Duration
	verifyRows, verifyKept int
	// Decayed sums of verify passes' rows and times: their slope is the
	// observed cost of a verify row.
	sn, sx, sy, sxx, sxy float64
	// Decayed counts and time sums of verify passes by how many kernel
	// tiles their rows took (index k: k+1 tiles): what one more tile
	// actually costs (tileSteps).
	tileN, tileT [maxTiles]float64
	// predrafted: the step's tree was drafted during the previous step's
	// verification (its draft time is not the step's).
	predrafted bool
}

// LeverLearned is what Lever mode learns of the machine as it runs: how
// much slower or faster than calibrated the target's compute and the
// draft passes are, and the book-keeping per tree node. An engine shares
// one across its requests so that each starts from what the earlier ones
// learned. Safe for concurrent use.
type LeverLearned struct {
	mu                       sync.Mutex
	computeScale, draftScale float64
	perNode                  float64
	rows                     [5]float64 // the verify rows/time sums
	tileN, tileT             [maxTiles]float64
}

// maxTiles is how many kernel tiles of verify rows Lever keeps timings of.
const maxTiles = 4

func (l *LeverLearned) load(lv *leverState) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if lv.cost != nil {
		if l.computeScale > 0 {
			lv.cost.ComputeScale = l.computeScale
		}
		if l.draftScale > 0 {
			lv.cost.DraftScale = l.draftScale
		}
	}
	lv.perNode = l.perNode
	lv.sn, lv.sx, lv.sy, lv.sxx, lv.sxy = l.rows[0], l.rows[1], l.rows[2], l.rows[3], l.rows[4]
	lv.tileN, lv.tileT = l.tileN, l.tileT
}

func (l *LeverLearned) store(lv *leverState) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if lv.cost != nil {
		l.computeScale, l.draftScale = lv.cost.ComputeScale, lv.cost.DraftScale
	}
	l.perNode = lv.perNode
	l.rows = [5]float64{lv.sn, lv.sx, lv.sy, lv.sxx, lv.sxy}
	l.tileN, l.tileT = lv.tileN, lv.tileT
}

// learnScales fits the cost model's compute and draft scales to the step
// just run (decayed means), so that gain-cost trees are sized by what the
// machine does now, not when it was calibrated.
func (lv *leverState) learnScales(d *Decoder) {
	c := lv.cost
	if c == nil {
		d.cfg.Learned.store(lv)
		return
	}
	pruneAt := c.Layers
	if lv.verifyKept < lv.verifyRows {
		pruneAt = lv.layer
	}
	x, y := float64(lv.verifyKept), lv.verifyTook.Seconds()
	const keep = 0.95
	lv.sn, lv.sx, lv.sy = keep*lv.sn+1, keep*lv.sx+x, keep*lv.sy+y
	lv.sxx, lv.sxy = keep*lv.sxx+x*x, keep*lv.sxy+x*y
	// The pass was shorter by the reads the draft hid (cost.Model.Overlap):
	// the compute scale is fitted to the pass without that head start.
	took := lv.verifyTook.Seconds()
	if d.draft != nil && !lv.predrafted {
		took += c.Overlap(d.draft.modelTime.Seconds(), lv.verifyRows)
	}
	lv.noteTiles(lv.verifyRows, took)
	if s, ok := c.FitComputeScale(lv.verifyRows, lv.verifyKept, pruneAt, took); ok {
		c.ComputeScale = 0.7*scaleOr1(c.ComputeScale) + 0.3*s
	}
	// A pre-drafted tree's passes ran alone, beside a verify pass: not
	// what the draft costs within a step.
	if d.draft == nil || d.draft.modelTime <= 0 || lv.predrafted {
		d.cfg.Learned.store(lv)
		return
	}
	var want float64
	for _, b := range d.draft.passRows {
		want += c.Draft(b) / scaleOr1(c.DraftScale)
	}
	if want > 0 {
		s := min(max(d.draft.modelTime.Seconds()/want, 1.0/8), 8)
		c.DraftScale = 0.7*scaleOr1(c.DraftScale) + 0.3*s
	}
	d.cfg.Learned.store(lv)
}

func scaleOr1(s float64) float64 {
	if s > 0 {
		return s
	}
	return 1
}

// observeOverhead learns the book-keeping per node from a finished step
// of n nodes that took `step` in all.
func (lv *leverState) observeOverhead(d *Decoder, n int, step time.Duration) {
	other := step - lv.modelTime
	if d.draft != nil && !lv.predrafted {
		other -= d.draft.modelTime
	}
	lv.modelTime = 0
	if n == 0 || other < 0 {
		return
	}
	x := other.Seconds() / float64(n+1)
	if lv.perNode == 0 {
		lv.perNode = x
	} else {
		lv.perNode = 0.8*lv.perNode + 0.2*x
	}
}

func (lv *leverState) init(d *Decoder) error {
	layers := d.target.Model().Config.Layers
	cfg := &d.cfg
	if cfg.Cost != nil {
		c := *cfg.Cost
		lv.cost = &c
	}
	cfg.Learned.load(lv)
	switch {
	case cfg.NoPrune:
		d.stats.PruneNote = "off (--no-prune)"
	case cfg.Pruner == nil:
		d.stats.PruneNote = "off: no trained predictor (shade calibrate --pruner)"
	case layers < 2:
		d.stats.PruneNote = "off: the target has one layer"
	default:
		if err := cfg.Pruner.Validate(layers); err != nil {
			return err
		}
		lv.pruning = true
		lv.layer = cfg.Pruner.Layer
	}
	if cfg.PruneLayer < 0 || (cfg.PruneLayer > 0 && cfg.PruneLayer >= layers) {
		return fmt.Errorf("spec: prune layer %d: the target has %d layers, so it must be in [1, %d] (0: the predictor's own)", cfg.PruneLayer, layers, layers-1)
	}
	if cfg.PruneLayer > 0 {
		lv.layer = cfg.PruneLayer
	}
	if cfg.PruneTrace != nil && lv.layer == 0 {
		lv.layer = DefaultPruneLayer(layers)
	}
	if !lv.pruning && cfg.PruneTrace == nil {
		lv.layer = 0
	}
	if lv.layer >= layers {
		lv.layer = layers - 1
	}
	return nil
}

// DefaultPruneLayer is where pruning happens unless told: after 60% of
// the target's layers, late enough for the hidden state to know, early
// enough that the rest of the pass is worth saving.
func DefaultPruneLayer(layers int) int {
	return min(max(1, int(math.Round(0.6*float64(layers)))), max(1, layers-1))
}

// verifyForward runs the verify pass; in Lever mode with a predictor (or a
// trace) it stops after the prune layer to score the tree's nodes, drops
// the ones to prune with their descendants, and runs the rest.
func (d *Decoder) verifyForward(b model.Batch) error {
	lv := &d.lv
	t0 := time.Now()
	defer func() { lv.modelTime += time.Since(t0) }()
	lv.pruned = nil
	lv.sampled = false
	if d.cfg.Mode != Lever {
		return d.forward(b)
	}
	lv.verifyRows, lv.verifyKept = len(b.Tokens), len(b.Tokens)
	defer func() { lv.verifyTook = time.Since(t0) }()
	lv.mainPath(d)
	if lv.layer == 0 || d.tree.Len() == 0 {
		return d.forward(b)
	}
	layers := d.target.Model().Config.Layers
	if err := d.target.Begin(b); err != nil {
		return err
	}
	if err := d.target.RunLayers(0, lv.layer, d.targetHook); err != nil {
		return err
	}
	if err := lv.features(d); err != nil {
		return err
	}
	lv.sampled = true
	if lv.pruning {
		if keep := lv.choose(d); len(keep) < d.tree.Len()+1 {
			if err := d.target.Prune(keep); err != nil {
				return err
			}
			lv.verifyKept = len(keep)
			d.stats.PruneSteps++
		}
	}
	return d.target.RunLayers(lv.layer, layers, d.targetHook)
}

// mainPath marks the draft's most probable chain: from the pending token,
// the child the draft gave the highest probability, and so on.
func (lv *leverState) mainPath(d *Decoder) {
	t := &d.tree
	lv.main = slices.Grow(lv.main[:0], t.Len())[:t.Len()]
	clear(lv.main)
	for cur := int32(-1); ; {
		best, bestP := int32(-1), -1.0
		for i, p := range t.Parent {
			if p == cur && d.draft.NodeProb(int32(i)) > bestP {
				best, bestP = int32(i), d.draft.NodeProb(int32(i))
			}
		}
		if best < 0 {
			return
		}
		lv.main[best] = true
		cur = best
	}
}

// features computes every node's pruning features from the target's
// hidden states after the prune layer.
func (lv *leverState) features(d *Decoder) error {
	t := &d.tree
	n := t.Len()
	lv.feats = slices.Grow(lv.feats[:0], n)[:n]
	lv.lensTop = slices.Grow(lv.lensTop[:0], n+1)[:n+1]
	for p := int32(-1); p < int32(n); p++ {
		lv.kids = t.Children(p, lv.kids[:0])
		if len(lv.kids) == 0 {
			continue
		}
		lv.lensTok = lv.lensTok[:0]
		for _, k := range lv.kids {
			lv.lensTok = append(lv.lensTok, t.Tokens[k])
		}
		for _, s := range d.draft.Shadows(p) {
			if !slices.Contains(lv.lensTok, s) && len(lv.lensTok) < len(lv.kids)+shadowCount {
				lv.lensTok = append(lv.lensTok, s)
			}
		}
		lv.lensOut = slices.Grow(lv.lensOut[:0], len(lv.lensTok))[:len(lv.lensTok)]
		if err := d.target.Lens(int(p)+1, lv.lensTok, lv.lensOut); err != nil {
			return err
		}
		top := lv.lensOut[0]
		for _, z := range lv.lensOut {
			top = max(top, z)
		}
		var sum float64
		for _, z := range lv.lensOut {
			sum += math.Exp(float64(z - top))
		}
		lv.lensTop[p+1] = 1 / sum
		for j, k := range lv.kids {
			z := lv.lensOut[j]
			other := float32(math.Inf(-1))
			for i, o := range lv.lensOut {
				if i != j {
					other = max(other, o)
				}
			}
			share := math.Exp(float64(z-top)) / sum
			margin := 10.0
			if !math.IsInf(float64(other), -1) {
				margin = min(max(float64(z-other), -10), 10)
			}
			isTop := 0.0
			if z == top {
				isTop = 1
			}
			f := &lv.feats[k]
			f[0] = share
			f[1] = math.Log(share + 1e-6)
			f[2] = margin
			f[3] = isTop
			f[4] = math.Log(max(d.draft.NodeProb(k), 1e-4))
			f[5] = float64(t.Depth(k))
		}
	}
	return nil
}

// choose decides which rows keep running: the pending token, the main
// path, and every node the predictor does not expect to be rejected, with
// the safeguards: a node is pruned only where the lens is confident at its
// parent, never more than MaxFrac of the tree, never below MinKeep rows.
// A pruned node takes its descendants with it and, under sampling, its
// later-drawn siblings (children must stay a prefix of the draws).
func (lv *leverState) choose(d *Decoder) []int {
	t := &d.tree
	pr := d.cfg.Pruner
	n := t.Len()
	lv.scores = slices.Grow(lv.scores[:0], n)[:n]
	lv.order = lv.order[:0]
	for i := range n {
		lv.scores[i] = pr.Score(lv.feats[i][:])
		if !lv.main[i] && lv.scores[i] < pr.Threshold && lv.lensTop[t.Parent[i]+1] >= pr.Confident {
			lv.order = append(lv.order, int32(i))
		}
	}
	lv.keep = lv.keep[:0]
	if len(lv.order) == 0 {
		for r := range n + 1 {
			lv.keep = append(lv.keep, r)
		}
		return lv.keep
	}
	slices.SortStableFunc(lv.order, func(a, b int32) int {
		switch {
		case lv.scores[a] < lv.scores[b]:
			return -1
		case lv.scores[a] > lv.scores[b]:
			return 1
		}
		return 0
	})
	pruned := make([]bool, n)
	count := 0
	maxPrune := int(pr.MaxFrac * float64(n))
	sampled := !d.sampler.Params().Greedy()
	lv.set = slices.Grow(lv.set[:0], n)[:n]
	for _, c := range lv.order {
		if pruned[c] {
			continue
		}
		clear(lv.set)
		lv.set[c] = true
		if sampled {
			for i := int(c) + 1; i < n; i++ {
				if t.Parent[i] == t.Parent[c] {
					lv.set[i] = true
				}
			}
		}
		add, ok := 0, true
		for i := range n {
			if p := t.Parent[i]; p >= 0 && lv.set[p] {
				lv.set[i] = true
			}
			if lv.set[i] {
				if lv.main[i] {
					ok = false
					break
				}
				if !pruned[i] {
					add++
				}
			}
		}
		if !ok || count+add > maxPrune || n+1-(count+add) < pr.MinKeep {
			continue
		}
		for i := range n {
			if lv.set[i] {
				pruned[i] = true
			}
		}
		count += add
	}
	lv.keep = append(lv.keep, 0)
	for i := range n {
		if !pruned[i] {
			lv.keep = append(lv.keep, i+1)
		}
	}
	if count > 0 {
		lv.pruned = pruned
		d.stats.Pruned += count
	}
	return lv.keep
}

// predictLogits is Lever's LM head. Lazy: logits only along the path being
// accepted, from the root, either row by row (stopping at the first
// rejection) or, when the cost model says one pass over the main path's
// rows costs less than the rows expected to be reached one by one, in one
// pass. With NoLazyHead: every surviving row in one pass.
func (lv *leverState) predictLogits(d *Decoder) error {
	t := &d.tree
	if d.cfg.NoLazyHead {
		d.predicted = append(d.predicted, 0)
		for i := range t.Len() {
			if lv.pruned == nil || !lv.pruned[i] {
				d.predicted = append(d.predicted, i+1)
			}
		}
		return d.headPass()
	}
	cm := lv.cost
	if cm == nil || d.cfg.RowByRowHead {
		return nil
	}
	// Rows of the main path, and the expected cost of reaching them one by one.
	d.predicted = append(d.predicted, 0)
	byRow := cm.Head(1)
	for i := range t.Len() {
		if lv.main != nil && i < len(lv.main) && lv.main[i] && (lv.pruned == nil || !lv.pruned[i]) {
			d.predicted = append(d.predicted, i+1)
			byRow += d.draft.NodeGain(int32(i)) * cm.Head(1)
		}
	}
	if len(d.predicted) == 1 || cm.Head(len(d.predicted)) > byRow {
		d.predicted = d.predicted[:0]
		return nil
	}
	return d.headPass()
}

// afterStep records the pruning outcome and the training samples of a
// verified step.
func (lv *leverState) afterStep(d *Decoder, path []int32, bonus int32) {
	t := &d.tree
	n := t.Len()
	// The target's own choice after each reached node: the next accepted
	// node, or the bonus token after the last.
	reached := make([]bool, n+1) // per node+1
	choice := make([]int32, n+1)
	reached[0] = true
	prev := int32(-1)
	for _, p := range path {
		choice[prev+1] = t.Tokens[p]
		reached[p+1] = true
		prev = p
	}
	choice[prev+1] = bonus
	if lv.pruned != nil && d.sampler.Params().Greedy() {
		for i := range n {
			if lv.pruned[i] && reached[t.Parent[i]+1] && choice[t.Parent[i]+1] == t.Tokens[i] {
				d.stats.PrunedLost++
			}
		}
	}
	if d.cfg.PruneTrace == nil || !lv.sampled {
		return
	}
	lv.samples = lv.samples[:0]
	onPath := make([]bool, n)
	for _, p := range path {
		onPath[p] = true
	}
	for i := range n {
		if !reached[t.Parent[i]+1] || (lv.pruned != nil && lv.pruned[i]) {
			continue
		}
		lv.samples = append(lv.samples, PruneSample{Step: d.stats.Steps, Features: lv.feats[i], Accepted: onPath[i]})
	}
	d.cfg.PruneTrace(lv.samples)
}

// noteTiles records a verify pass of rows rows that took `took` seconds
// (its reads hidden by drafting added back) under the number of kernel
// tiles its rows took.
func (lv *leverState) noteTiles(rows int, took float64) {
	k := (rows+quant.TileRows-1)/quant.TileRows - 1
	if k < 0 || k >= maxTiles {
		return
	}
	const keep = 0.9
	for i := range lv.tileN {
		lv.tileN[i] *= keep
		lv.tileT[i] *= keep
	}
	lv.tileN[k]++
	lv.tileT[k] += took
}

// tileSteps is, per number of tiles k+1, what a verify pass has been
// observed to take more with one tile more (0 where not seen enough of
// both to tell).
func (lv *leverState) tileSteps() []float64 {
	var out []float64
	for k := 0; k+1 < maxTiles; k++ {
		step := 0.0
		if lv.tileN[k] >= 1 && lv.tileN[k+1] >= 1 {
			step = max(0, lv.tileT[k+1]/lv.tileN[k+1]-lv.tileT[k]/lv.tileN[k])
		}
		out = append(out, step)
	}
	return out
}

// rowFloor is the observed slope of verify time against rows (0 until the
// passes seen differ enough in rows to tell).
func (lv *leverState) rowFloor() float64 {
	den := lv.sn*lv.sxx - lv.sx*lv.sx
	if lv.sn < 3 || den <= 1e-9*lv.sn*lv.sn {
		return 0
	}
	return max(0, (lv.sn*lv.sxy-lv.sx*lv.sy)/den)
}
