// Package flash is the flash-aware speculative decoding strategy, for a
// target whose layers are partly streamed from storage: a verify pass then
// pays each streamed layer's read once whatever its rows, so the step is
// shaped by the device's cost model (package cost) instead of a fixed
// length. Three parts, each of which an ablation switch turns off
// (speculate.Ablation): gain-cost trees (the draft grows while a node's
// expected tokens per unit of marginal step time keep the step's rate up,
// speculate.ModelDrafter.DraftGainCost), verification pruning (a trained
// predictor, Pruner, drops unlikely nodes after a middle target layer,
// from the logit lens of the target's hidden state) and the lazy LM head
// (logits only along the path being accepted). It learns as it runs how
// far the machine now is from the calibrated cost model; a Setup shares
// what it learned across an engine's requests.
//
// It is a speculate.Strategy: the speculate.Decoder's pipeline runs it, and
// verification stays lossless (a pruned node is still verified from its
// parent's row; accepted, it ends the step).
package flash

import (
	"fmt"
	"math"
	"slices"
	"time"

	"shade/cost"
	"shade/speculate"
)

// Setup is what flash mode needs beyond the request's knobs; its Make
// gives each decoder its strategy (speculate.Deps.Flash).
type Setup struct {
	// Cost is the device's cost model, with the run's streamed layers
	// set: gain-cost trees are sized by it and the lazy head uses it to
	// choose between one head pass over the main path and row-by-row
	// logits. Nil: a static tree and a row-by-row head.
	Cost *cost.Model
	// Pruner is the trained verification-pruning predictor (nil: no
	// pruning).
	Pruner *Pruner
	// Trace, if set, receives every step's tree nodes with their pruning
	// features and verdicts (nodes whose parent was reached): the
	// training data of the predictor. Features are taken after
	// Config.PruneLayer (default 60% of the target's depth).
	Trace func([]PruneSample)
	// Estimator, if set, is the cost estimator the strategy corrects the
	// cost model by and teaches, shared by the generations that use it
	// (and by auto mode); nil: one per decoder.
	Estimator *cost.Estimator
	// Fixed uses Cost as given: nothing is learned from the machine's
	// timings, so trees take the same shapes on every run and a seed
	// gives the same output whatever the load (tests, comparisons).
	// Otherwise the shapes follow the timings (the output is distributed
	// the same either way).
	Fixed bool
}

// Make is a new strategy for one decoder.
func (su *Setup) Make(cfg speculate.Config) (speculate.Strategy, error) {
	f := &strategy{cfg: cfg, pruner: su.Pruner, trace: su.Trace, est: su.Estimator, fixed: su.Fixed}
	if f.est == nil {
		f.est = new(cost.Estimator)
	}
	if su.Cost != nil {
		c := *su.Cost
		f.cost = &c
	}
	return f, nil
}

// strategy is one decoder's flash strategy: the prune layer, each node's
// pruning features, which nodes were pruned and which form the draft's
// main path, and what it has learned of the machine.
type strategy struct {
	cfg    speculate.Config
	pruner *Pruner
	trace  func([]PruneSample)
	est    *cost.Estimator
	fixed  bool // Setup.Fixed: est is neither applied nor taught

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
	// cost is this decoder's copy of the cost model, its compute and
	// draft scales corrected by the estimator; the verify pass's shape
	// feeds the estimator.
	cost                   *cost.Model
	verifyRows, verifyKept int
}

func (f *strategy) Init(s *speculate.Step) error {
	layers := s.Target.Model().Config.Layers
	if !f.fixed {
		f.est.Apply(f.cost)
	}
	switch {
	case f.cfg.Ablation.NoPrune:
		s.Stats.PruneNote = "off (--no-prune)"
	case f.pruner == nil:
		s.Stats.PruneNote = "off: no trained predictor (shade calibrate --pruner)"
	case layers < 2:
		s.Stats.PruneNote = "off: the target has one layer"
	default:
		if err := f.pruner.Validate(layers); err != nil {
			return err
		}
		f.pruning = true
		f.layer = f.pruner.Layer
	}
	if pl := f.cfg.PruneLayer; pl < 0 || (pl > 0 && pl >= layers) {
		return fmt.Errorf("flash: prune layer %d: the target has %d layers, so it must be in [1, %d] (0: the predictor's own)", pl, layers, layers-1)
	}
	if f.cfg.PruneLayer > 0 {
		f.layer = f.cfg.PruneLayer
	}
	if f.trace != nil && f.layer == 0 {
		f.layer = DefaultPruneLayer(layers)
	}
	if !f.pruning && f.trace == nil {
		f.layer = 0
	}
	if f.layer >= layers {
		f.layer = layers - 1
	}
	return nil
}

// DefaultPruneLayer is where pruning happens unless told: after 60% of
// the target's layers, late enough for the hidden state to know, early
// enough that the rest of the pass is worth saving.
func DefaultPruneLayer(layers int) int {
	return min(max(1, int(math.Round(0.6*float64(layers)))), max(1, layers-1))
}

// Draft grows a gain-cost tree, or with NoGainCost (or no cost model) the
// static tree.
func (f *strategy) Draft(s *speculate.Step) (speculate.DraftKind, error) {
	var err error
	if f.cfg.Ablation.NoGainCost || f.cost == nil {
		err = s.Drafter.Draft(s.Context, speculate.Shape{Width: f.cfg.TreeWidth, Depth: f.cfg.TreeDepth, Max: min(f.cfg.DraftMax, s.Room)}, s.Tree)
	} else {
		g := speculate.GainCost{Cost: f.cost, MaxNodes: min(f.cfg.MaxNodes, s.Room), Unbatched: f.cfg.Ablation.NoBatchDraft}
		if !f.fixed {
			g.PerNode, g.RowFloor, g.TileSteps = f.est.PerNode(), f.est.RowFloor(), f.est.TileSteps()
		}
		err = s.Drafter.DraftGainCost(s.Context, g, s.Tree)
	}
	s.Stats.DraftPasses += s.Drafter.DraftPasses()
	s.Stats.MaxTree = max(s.Stats.MaxTree, s.Tree.Len())
	return speculate.DraftModel, err
}

// Verify runs the verify pass; with a predictor (or a trace) it stops
// after the prune layer to score the tree's nodes, drops the ones to prune
// with their descendants, and runs the rest.
func (f *strategy) Verify(s *speculate.Step) error {
	f.pruned = nil
	f.sampled = false
	f.verifyRows, f.verifyKept = len(s.Batch.Tokens), len(s.Batch.Tokens)
	f.mainPath(s)
	if f.layer == 0 || s.Tree.Len() == 0 {
		return s.Forward(s.Batch)
	}
	layers := s.Target.Model().Config.Layers
	if err := s.Target.Begin(s.Batch); err != nil {
		return err
	}
	if err := s.RunLayers(0, f.layer); err != nil {
		return err
	}
	if err := f.features(s); err != nil {
		return err
	}
	f.sampled = true
	if f.pruning {
		if keep := f.choose(s); len(keep) < s.Tree.Len()+1 {
			if err := s.Target.Prune(keep); err != nil {
				return err
			}
			f.verifyKept = len(keep)
			s.Stats.PruneSteps++
		}
	}
	s.Pruned = f.pruned
	return s.RunLayers(f.layer, layers)
}

// mainPath marks the draft's most probable chain: from the pending token,
// the child the draft gave the highest probability, and so on.
func (f *strategy) mainPath(s *speculate.Step) {
	t := s.Tree
	f.main = slices.Grow(f.main[:0], t.Len())[:t.Len()]
	clear(f.main)
	for cur := int32(-1); ; {
		best, bestP := int32(-1), -1.0
		for i, p := range t.Parent {
			if p == cur && s.Drafter.NodeProb(int32(i)) > bestP {
				best, bestP = int32(i), s.Drafter.NodeProb(int32(i))
			}
		}
		if best < 0 {
			return
		}
		f.main[best] = true
		cur = best
	}
}

// Head is the lazy LM head: logits only along the path being accepted,
// from the root, either row by row (stopping at the first rejection) or,
// when the cost model says one pass over the main path's rows costs less
// than the rows expected to be reached one by one, in one pass. With
// NoLazyHead: every surviving row in one pass.
func (f *strategy) Head(s *speculate.Step) []int {
	t := s.Tree
	if f.cfg.Ablation.NoLazyHead {
		f.keep = append(f.keep[:0], 0)
		for i := range t.Len() {
			if f.pruned == nil || !f.pruned[i] {
				f.keep = append(f.keep, i+1)
			}
		}
		return f.keep
	}
	cm := f.cost
	if cm == nil || f.cfg.RowByRowHead {
		return nil
	}
	// Rows of the main path, and the expected cost of reaching them one by one.
	rows := append(f.keep[:0], 0)
	byRow := cm.Head(1)
	for i := range t.Len() {
		if i < len(f.main) && f.main[i] && (f.pruned == nil || !f.pruned[i]) {
			rows = append(rows, i+1)
			byRow += s.Drafter.NodeGain(int32(i)) * cm.Head(1)
		}
	}
	f.keep = rows
	if len(rows) == 1 || cm.Head(len(rows)) > byRow {
		return nil
	}
	return rows
}

// Observe records the pruning outcome and the training samples of the
// verified step, then learns from its timings.
func (f *strategy) Observe(s *speculate.Step) {
	f.afterStep(s)
	if !f.fixed {
		f.observeOverhead(s)
		f.learnScales(s)
	}
}

// afterStep records the pruning outcome and the training samples of a
// verified step.
func (f *strategy) afterStep(s *speculate.Step) {
	t := s.Tree
	n := t.Len()
	// The target's own choice after each reached node: the next accepted
	// node, or the bonus token after the last.
	reached := make([]bool, n+1) // per node+1
	choice := make([]int32, n+1)
	reached[0] = true
	prev := int32(-1)
	for _, p := range s.Path {
		choice[prev+1] = t.Tokens[p]
		reached[p+1] = true
		prev = p
	}
	choice[prev+1] = s.Bonus
	if f.pruned != nil && s.Greedy() {
		for i := range n {
			if f.pruned[i] && reached[t.Parent[i]+1] && choice[t.Parent[i]+1] == t.Tokens[i] {
				s.Stats.PrunedLost++
			}
		}
	}
	if f.trace == nil || !f.sampled {
		return
	}
	f.samples = f.samples[:0]
	onPath := make([]bool, n)
	for _, p := range s.Path {
		onPath[p] = true
	}
	for i := range n {
		if !reached[t.Parent[i]+1] || (f.pruned != nil && f.pruned[i]) {
			continue
		}
		f.samples = append(f.samples, PruneSample{Step: s.Stats.Steps, Features: f.feats[i], Accepted: onPath[i]})
	}
	f.trace(f.samples)
}

// observeOverhead teaches the estimator the book-keeping per node of a
// finished step: its time beyond the model's passes (the target's and the
// draft's).
func (f *strategy) observeOverhead(s *speculate.Step) {
	other := s.StepTime - s.PassTime - s.HeadTime
	if s.Drafter != nil {
		_, took := s.Drafter.LastPasses()
		other -= took
	}
	f.est.ObserveOverhead(s.Tree.Len(), other)
}

// learnScales teaches the estimator the step's verify pass and draft, so
// that gain-cost trees are sized by what the machine does now, not when
// it was calibrated; it corrects this decoder's cost model as it goes.
func (f *strategy) learnScales(s *speculate.Step) {
	c := f.cost
	if c == nil {
		return
	}
	pruneAt := c.Layers
	if f.verifyKept < f.verifyRows {
		pruneAt = f.layer
	}
	var passRows []int
	var draftTook time.Duration
	if s.Drafter != nil {
		passRows, draftTook = s.Drafter.LastPasses()
	}
	f.est.ObservePass(c, f.verifyRows, f.verifyKept, pruneAt, s.PassTime, draftTook)
	f.est.ObserveDraft(c, passRows, draftTook)
}
