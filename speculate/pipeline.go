package speculate

import (
	"errors"
	"fmt"
	"time"

	"shade/model"
	"shade/sample"
)

// Strategy is one mode's part of a speculative step. The Decoder runs the
// same pipeline for every mode, draft → widen → verify → accept → commit,
// and asks the strategy at three of its stages: what to draft, how to run
// the verify pass and which rows' logits to compute in one head pass; then
// it tells it how the step went. Widening (a governor's n-gram filling),
// accepting (walking the tree against the target's logits, lossless) and
// committing (the target's and the drafter's caches, the stats) are the
// Decoder's alone, so no strategy can change the output.
type Strategy interface {
	// Init is called once by NewDecoder, before any step.
	Init(s *Step) error
	// Draft fills s.Tree (empty) with the step's draft, at most s.Room
	// nodes, and returns what drafted it.
	Draft(s *Step) (DraftKind, error)
	// Verify runs the target's pass over s.Batch (the pending token and
	// the tree), s.Forward for most modes. A strategy may drop rows
	// mid-pass: it marks their nodes in s.Pruned. The walk still verifies
	// them against their parents' rows, but cannot go past one: an
	// accepted pruned node is the last token of the step.
	Verify(s *Step) error
	// Head lists the verify rows whose logits one head pass computes
	// before the walk (nil: every row as the walk reaches it).
	Head(s *Step) []int
	// Observe learns from the step just committed (s.Path, s.Bonus and
	// the step's timings are set).
	Observe(s *Step)
}

// DraftKind says what drafted a step's tree.
type DraftKind int

const (
	DraftNone  DraftKind = iota // nothing was drafted
	DraftNgram                  // n-gram lookup
	DraftModel                  // the draft model
)

// Step is what a Strategy sees of the step in flight: the decoder's state
// and the stage results so far.
type Step struct {
	Config  Config        // the decoder's, with defaults
	Target  *model.State  // the target's state; its cache holds the accepted text but the pending token
	Drafter *ModelDrafter // nil in modes without a draft model
	Sampler *sample.Sampler
	Stats   *Stats // the decoder's counters, for the strategy's own

	Context []int32 // the accepted text; its last token is the pending one
	Tree    *Tree   // the step's draft
	Room    int     // nodes the target's context has room for
	Batch   model.Batch
	Pruned  []bool // per node, set by Verify: its row dropped mid-pass, so the walk ends at it (nil: none)

	// Set once verified: the accepted nodes and the bonus token.
	Path  []int32
	Bonus int32
	// Drafted is how many of the tree's nodes the strategy drafted (the
	// rest, if any, came from widening).
	Drafted int
	// Timings of the step once committed: drafting, the verify pass
	// (Verify's time), the target's head passes, and the whole step.
	DraftTime, PassTime, HeadTime, StepTime time.Duration

	d *Decoder
}

// Forward runs the target's whole pass over b, layer by layer with the
// governor's yield points.
func (s *Step) Forward(b model.Batch) error { return s.d.forward(b) }

// RunLayers runs target layers [from, to) of the pass in flight with the
// governor's yield points.
func (s *Step) RunLayers(from, to int) error { return s.Target.RunLayers(from, to, s.d.targetHook) }

// Greedy reports whether the target samples greedily.
func (s *Step) Greedy() bool { return s.Sampler.Params().Greedy() }

// MainPathRows lists the verify rows of the draft's first-child chain
// from the pending token (row 0, node n's row is n+1): the rows a walk
// most likely needs.
func (s *Step) MainPathRows(out []int) []int {
	for row, node := 0, int32(-1); ; {
		out = append(out, row)
		next := int32(-1)
		for i, p := range s.Tree.Parent {
			if p == node {
				next = int32(i)
				break
			}
		}
		if next < 0 {
			return out
		}
		node, row = next, int(next)+1
	}
}

// Decoder generates tokens from a target model, speculatively when a
// drafter is configured. Under greedy sampling its output is the target's
// own greedy output, token for token; under stochastic sampling it is
// distributed exactly as the target's sampler.
type Decoder struct {
	cfg      Config
	target   *model.State
	sampler  *sample.Sampler
	verify   *verifier
	draft    *ModelDrafter
	strategy Strategy
	step     Step
	est      *Estimates

	ctx    []int32 // accepted text; its last token is the pending one
	tree   Tree
	path   []int32
	rows   []int
	logits []float32

	predicted  []int     // rows whose logits predLogits holds
	predLogits []float32 // (len(predicted), vocab)
	headTime   time.Duration
	stats      Stats
	Prefill    int // rows per prefill pass (default 256)

	gov        Governor
	targetHook func(layer int) error // d.targetLayer, bound once
	widen      *widener              // nil without a governor
}

// NewDecoder sets up decoding on a target state. draft may be nil when the
// mode does not need a draft model (off, ngram, or auto without one).
func NewDecoder(target *model.State, sampler *sample.Sampler, draft *ModelDrafter, cfg Config) (*Decoder, error) {
	cfg.defaults()
	if draft == nil && cfg.Mode.NeedsDraft() {
		return nil, fmt.Errorf("speculate: mode %v needs a draft model", cfg.Mode)
	}
	vocab := target.Model().Config.Vocab
	d := &Decoder{cfg: cfg, target: target, sampler: sampler, draft: draft,
		verify: newVerifier(sampler, vocab), logits: make([]float32, vocab), Prefill: 256}
	d.gov = cfg.Deps.Governor
	d.targetHook = d.targetLayer
	if d.est = cfg.Deps.Estimates; d.est == nil {
		d.est = NewEstimates()
	}
	var err error
	if d.strategy, err = newStrategy(cfg, d.est); err != nil {
		return nil, err
	}
	if d.gov != nil {
		d.widen = newWidener(cfg)
		if draft != nil {
			draft.SetGovernor(d.gov)
		}
	}
	d.step = Step{Config: cfg, Target: target, Drafter: draft, Sampler: sampler, Stats: &d.stats, Tree: &d.tree, d: d}
	if err := d.strategy.Init(&d.step); err != nil {
		return nil, err
	}
	return d, nil
}

// newStrategy is the mode's strategy.
func newStrategy(cfg Config, est *Estimates) (Strategy, error) {
	switch cfg.Mode {
	case ModeOff:
		return plain{}, nil
	case ModeChain:
		return &modelDraft{shape: Shape{Width: 1, Depth: cfg.DraftMax, Max: cfg.DraftMax}}, nil
	case ModeTree:
		return &modelDraft{shape: Shape{Width: cfg.TreeWidth, Depth: cfg.TreeDepth, Max: cfg.DraftMax}}, nil
	case ModeNgram:
		return &ngramDraft{ngram: NewNgram(cfg.NgramMin, cfg.NgramMax)}, nil
	case ModeAuto:
		return newAuto(cfg, est), nil
	case ModeFlash:
		if cfg.Deps.Flash == nil {
			return nil, errors.New("speculate: flash mode needs its strategy (Deps.Flash: a *flash.Setup)")
		}
		return cfg.Deps.Flash.Make(cfg)
	}
	return nil, fmt.Errorf("speculate: unknown mode %d", cfg.Mode)
}

// targetLayer is the yield point after each target layer.
func (d *Decoder) targetLayer(layer int) error {
	if d.gov != nil {
		d.stats.Sleep += sleepFor(d.target.Model().Pool, d.gov.VerifyLayer(layer, d.target.Rows(), d.target.LayerTimes[layer]))
	}
	return nil
}

// forward runs a whole target pass with the yield points.
func (d *Decoder) forward(b model.Batch) error {
	if err := d.target.Begin(b); err != nil {
		return err
	}
	return d.target.RunLayers(0, d.target.Model().Config.Layers, d.targetHook)
}

// OnToken makes f see every token a step produces, in order, with the
// target's logits of the verify row the token was chosen from: the
// model's own logits, before any sampling processor, whichever strategy
// drafted and whatever was pruned (every row a walk reaches has its full
// row of logits computed, lazy head or not). It is how log-probabilities
// are reported without a second forward pass; logits is only valid
// during the call. nil turns it off.
func (d *Decoder) OnToken(f func(logits []float32, token int32)) { d.verify.onToken = f }

// Stats returns the counters so far.
func (d *Decoder) Stats() Stats {
	st := d.stats
	if d.gov != nil {
		st.Governor = governorReport(d.gov)
	}
	return st
}

// Start feeds a prompt: every token but the last goes through the target
// (in batches); the last becomes the pending token the first step starts from.
func (d *Decoder) Start(prompt []int32) error {
	if len(prompt) == 0 {
		return errors.New("speculate: empty prompt")
	}
	if d.draft != nil {
		d.draft.Reset()
	}
	return d.StartCached(prompt, 0)
}

// Step runs one speculative step and appends the tokens it produced (at
// least one) to out. The last produced token is pending: it is fed to the
// target at the start of the next step.
func (d *Decoder) Step(out []int32) ([]int32, error) {
	t0 := time.Now()
	s := &d.step
	s.Context = d.ctx
	s.Room = d.target.Cache.Cap() - d.target.Len() - 1
	s.Pruned, s.Path = nil, nil
	d.headTime = 0

	// Draft.
	d.tree.Reset()
	if d.draft != nil {
		d.draft.SetConstraint(d.sampler.Constraint())
	}
	kind, err := d.strategy.Draft(s)
	if err != nil {
		return out, err
	}
	s.Drafted = d.tree.Len()
	// Widen: under a governor, n-gram continuations up to the rows it asks for.
	if d.widen != nil {
		d.widen.widen(d, kind)
	}
	t1 := time.Now()

	// Verify: the pending token and the whole tree in one target pass.
	n := d.tree.Len()
	if d.target.Len()+n+1 > d.target.Cache.Cap() {
		return out, fmt.Errorf("speculate: context full (%d tokens)", d.target.Cache.Cap())
	}
	s.Batch.Tokens = append(s.Batch.Tokens[:0], d.ctx[len(d.ctx)-1])
	s.Batch.Parent = append(s.Batch.Parent[:0], -1)
	for i := range n {
		s.Batch.Tokens = append(s.Batch.Tokens, d.tree.Tokens[i])
		s.Batch.Parent = append(s.Batch.Parent, d.tree.Parent[i]+1)
	}
	if err := d.strategy.Verify(s); err != nil {
		return out, err
	}
	tPass := time.Now()
	d.predicted = append(d.predicted[:0], d.strategy.Head(s)...)
	if len(d.predicted) > 0 {
		if err := d.headPass(); err != nil {
			return out, err
		}
	}

	// Accept: walk the tree against the target's logits.
	d.verify.skip = s.Pruned
	path, bonus, err := d.verify.walk(&d.tree, d.rowLogits, d.path[:0])
	d.verify.skip = nil
	d.path = path
	if err != nil {
		return out, err
	}

	// Commit.
	d.rows = append(d.rows[:0], 0)
	for _, p := range path {
		d.rows = append(d.rows, int(p)+1)
	}
	if err := d.target.Commit(d.rows); err != nil {
		return out, err
	}
	if d.widen != nil {
		d.widen.rejected(d, path, s.Drafted)
	}
	t2 := time.Now()
	if d.draft != nil {
		if err := d.draft.Accepted(d.ctx, &d.tree, path); err != nil {
			return out, err
		}
	}
	d.sampler.Accept(bonus)
	for _, p := range path {
		d.ctx = append(d.ctx, d.tree.Tokens[p])
		out = append(out, d.tree.Tokens[p])
	}
	d.ctx = append(d.ctx, bonus)
	out = append(out, bonus)
	d.count(n, path, s.Drafted)

	s.Path, s.Bonus = path, bonus
	t3 := time.Now()
	s.DraftTime, s.PassTime, s.HeadTime, s.StepTime = t1.Sub(t0), tPass.Sub(t1), d.headTime, t3.Sub(t0)
	d.strategy.Observe(s)
	catchup := 0
	if kind == DraftModel {
		catchup = d.draft.catchup
	}
	// Every mode's steps teach the estimates auto sizes by; the verify
	// cost includes the step's book-keeping (commit, draft sync), which on
	// a small model is not negligible.
	d.est.observe(n, len(path), s.DraftTime, s.StepTime-s.DraftTime, kind, catchup)
	d.stats.DraftTime += t1.Sub(t0)
	d.stats.VerifyTime += t2.Sub(t1)
	d.stats.OtherTime += time.Since(t2)
	if d.gov != nil {
		d.stats.Sleep += sleepFor(d.target.Model().Pool, d.gov.StepDone(len(path)+1, time.Since(t0)))
	}
	return out, nil
}

// count books a committed step of n nodes (drafted of them by the
// strategy, the rest by widening) in the stats.
func (d *Decoder) count(n int, path []int32, drafted int) {
	d.stats.Steps++
	d.stats.Drafted += n
	d.stats.Accepted += len(path)
	d.stats.Generated += len(path) + 1
	for i := range n {
		depth := d.tree.Depth(int32(i))
		for len(d.stats.ByDepth) < depth {
			d.stats.ByDepth = append(d.stats.ByDepth, DepthStats{})
		}
		d.stats.ByDepth[depth-1].Drafted++
	}
	for k, p := range path {
		d.stats.ByDepth[k].Accepted++
		if drafted < n && int(p) >= drafted {
			d.stats.FilledAccepted++
		}
	}
	d.stats.Filled += n - drafted
}

// headPass computes the logits of the rows in d.predicted in one pass.
func (d *Decoder) headPass() error {
	vocab := len(d.logits)
	if need := len(d.predicted) * vocab; cap(d.predLogits) < need {
		d.predLogits = make([]float32, need)
	}
	d.predLogits = d.predLogits[:len(d.predicted)*vocab]
	d.stats.HeadRows += len(d.predicted)
	t0 := time.Now()
	defer func() { d.headTime += time.Since(t0) }()
	return d.target.Logits(d.predicted, d.predLogits)
}

func (d *Decoder) rowLogits(row int) ([]float32, error) {
	vocab := len(d.logits)
	for k, r := range d.predicted {
		if r == row {
			return d.checkFinite(row, d.predLogits[k*vocab:(k+1)*vocab])
		}
	}
	d.rows = append(d.rows[:0], row)
	d.stats.HeadRows++
	t0 := time.Now()
	err := d.target.Logits(d.rows, d.logits)
	d.headTime += time.Since(t0)
	if err != nil {
		return nil, err
	}
	return d.checkFinite(row, d.logits)
}

// ErrNonFinite is wrapped by the error that ends a generation whose target
// model computed a NaN or infinite logit: its weights or hyperparameters
// are broken (or overflow), and no token can be chosen from such a row.
var ErrNonFinite = errors.New("the model computed NaN or infinite logits")

// checkFinite passes on the target's logits of a verify row, or the
// error that ends the generation if one is not a finite number. Every
// token the decoder emits is chosen from a row checked here.
func (d *Decoder) checkFinite(row int, logits []float32) ([]float32, error) {
	if finite(logits) {
		return logits, nil
	}
	bad := 0
	for _, v := range logits {
		if v-v != 0 {
			bad++
		}
	}
	return nil, fmt.Errorf("speculate: %w (%d of %d values of the row after %d tokens): the model file's weights or hyperparameters are broken", ErrNonFinite, bad, len(logits), d.target.Len()+row+1)
}
