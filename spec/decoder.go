package spec

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"shade/cost"
	"shade/model"
	"shade/par"
	"shade/sample"
)

// Mode selects how drafts are made.
type Mode int

const (
	Off    Mode = iota // plain autoregressive decoding
	Chain              // the draft model proposes a chain
	TreeM              // the draft model proposes a tree
	NgramM             // n-gram lookup proposes a chain
	Auto               // n-gram first, then the draft model; length sized by the controller
	Lever              // the full flash-aware design: gain-cost trees, verify pruning, lazy head
)

var modeNames = []string{"off", "chain", "tree", "ngram", "auto", "lever"}

func (m Mode) String() string { return modeNames[m] }

// ParseMode maps off|chain|tree|ngram|auto|lever to a Mode.
func ParseMode(s string) (Mode, error) {
	for i, n := range modeNames {
		if n == s {
			return Mode(i), nil
		}
	}
	return Off, fmt.Errorf("spec: unknown mode %q (want %s)", s, strings.Join(modeNames, ", "))
}

// Config sets up speculation.
type Config struct {
	Mode      Mode
	DraftMax  int // most drafted tokens per step (default 8)
	TreeWidth int // nodes per tree level (tree mode; default 3)
	TreeDepth int // tree levels (tree mode; default DraftMax)
	NgramMin  int // n-gram lengths looked up (default 2…4)
	NgramMax  int
	// RowByRowHead computes the LM head strictly one row at a time along
	// the path being accepted, stopping at the first rejection, instead of
	// one pass over the draft's best path (fewer rows computed, more passes
	// over the head's weights: the better choice when the head is streamed
	// from storage or the tree is wide).
	RowByRowHead bool
	// Estimates, if set, is where auto mode keeps what it learns of
	// acceptance and step costs, so that later generations with the same
	// models start from it; nil keeps them per decoder.
	Estimates *Estimates
	// Governor, if set, paces decoding for other work on the machine: it
	// may preempt drafts, widen verification with n-gram filling, sleep
	// between target layers and pause between steps.
	Governor Governor

	// Lever mode (the full design) and the switches that turn its parts
	// off one at a time, for ablation.
	//
	// Cost is the device's cost model: gain-cost trees are sized by it and
	// the lazy head uses it to choose between one head pass over the main
	// path and row-by-row logits. Nil: a static tree and a row-by-row head.
	Cost *cost.Model
	// Pruner is the trained verification-pruning predictor (nil: no
	// pruning). PruneLayer, if set, overrides the layer it prunes after.
	Pruner     *Pruner
	PruneLayer int
	// MaxNodes is the safety cap of a gain-cost tree (default 64).
	MaxNodes     int
	NoGainCost   bool // a static tree (TreeWidth × TreeDepth, DraftMax nodes) instead
	NoPrune      bool // verify every drafted row through every layer
	NoLazyHead   bool // logits for every row of the verify pass, in one head pass
	NoBatchDraft bool // expand one frontier node per draft pass
	// PreDraft turns on pre-drafting (an experiment, off by default: on
	// this project's 2-core machine it does not pay): with layers
	// streamed, greedy decoding and gain-cost trees, lever mode drafts the
	// next step's tree on a second drafter while the target verifies the
	// current one (see preDraft), and uses it, run out if need be, when
	// verification accepts the main path and then the draft's next token.
	PreDraft bool
	// PreDraftPool is the worker pool pre-drafts run on, beside the
	// target's (nil: the pre-drafting goroutine alone). TargetIdle, if
	// set, reports whether the target's pass is blocked on storage reads:
	// a pre-draft then runs its draft layers only while it is, so that
	// it never slows the verify pass it runs beside.
	PreDraftPool *par.Pool
	TargetIdle   func() bool
	// PruneTrace, if set, receives every step's tree nodes with their
	// pruning features and verdicts (nodes whose parent was reached):
	// the training data of the predictor. Features are taken after
	// PruneLayer (default 60% of the target's depth).
	PruneTrace func([]PruneSample)
	// Learned, if set, is where lever mode keeps what it learns of the
	// machine (compute and draft speed against the cost model, book-keeping
	// per node), shared by the generations that use it; nil: per decoder.
	Learned *LeverLearned
}

func (c *Config) defaults() {
	if c.MaxNodes <= 0 {
		c.MaxNodes = 64
	}
	if c.DraftMax <= 0 {
		c.DraftMax = 8
	}
	if c.TreeWidth <= 0 {
		c.TreeWidth = 3
	}
	if c.TreeDepth <= 0 {
		c.TreeDepth = c.DraftMax
	}
	if c.NgramMin <= 0 {
		c.NgramMin = 2
	}
	if c.NgramMax <= 0 {
		c.NgramMax = 4
	}
}

// DepthStats counts drafted and accepted tokens at one draft depth.
type DepthStats struct {
	Drafted  int `json:"drafted"`
	Accepted int `json:"accepted"`
}

// Stats describe a speculative run.
type Stats struct {
	Steps      int           `json:"steps"`
	Drafted    int           `json:"drafted"`
	Accepted   int           `json:"accepted"`
	Generated  int           `json:"generated"`
	ByDepth    []DepthStats  `json:"by_depth"`
	DraftTime  time.Duration `json:"draft_ns"`
	VerifyTime time.Duration `json:"verify_ns"`
	OtherTime  time.Duration `json:"other_ns"`
	// Under a Governor: drafts preempted, nodes added by n-gram filling
	// and how many of them the target kept, and time spent sleeping
	// (between target layers and between steps).
	Preempted      int           `json:"preempted,omitempty"`
	Filled         int           `json:"filled,omitempty"`
	FilledAccepted int           `json:"filled_accepted,omitempty"`
	Sleep          time.Duration `json:"sleep_ns,omitempty"`
	// Governor is what the governor reports of its decisions, if it does
	// (Reporter).
	Governor any `json:"governor,omitempty"`
	// Lever mode: draft passes after catching up, the largest tree, the
	// verify rows pruned (and how many of them the target would have
	// accepted, greedy only), steps that pruned, LM-head rows computed,
	// and why pruning is off when it is.
	DraftPasses int `json:"draft_passes,omitempty"`
	MaxTree     int `json:"max_tree,omitempty"`
	Pruned      int `json:"pruned,omitempty"`
	PrunedLost  int `json:"pruned_lost,omitempty"`
	PruneSteps  int `json:"prune_steps,omitempty"`
	HeadRows    int `json:"head_rows,omitempty"`
	// Pre-drafting: next-step trees drafted during verification, how
	// many of them were used (the step then drafted nothing itself), and
	// how many were confirmed but came out empty (the gain-cost tree,
	// built from learned costs, found no node worth a row).
	PreDrafts      int    `json:"pre_drafts,omitempty"`
	PreDraftHits   int    `json:"pre_draft_hits,omitempty"`
	PreDraftsEmpty int    `json:"pre_drafts_empty,omitempty"`
	PruneNote      string `json:"prune_note,omitempty"`
}

// Add adds the counts and times of o to s, as over several generations
// (MaxTree keeps the larger; Governor and PruneNote keep s's when set).
func (s *Stats) Add(o *Stats) {
	s.Steps += o.Steps
	s.Drafted += o.Drafted
	s.Accepted += o.Accepted
	s.Generated += o.Generated
	for i, d := range o.ByDepth {
		if i == len(s.ByDepth) {
			s.ByDepth = append(s.ByDepth, DepthStats{})
		}
		s.ByDepth[i].Drafted += d.Drafted
		s.ByDepth[i].Accepted += d.Accepted
	}
	s.DraftTime += o.DraftTime
	s.VerifyTime += o.VerifyTime
	s.OtherTime += o.OtherTime
	s.Preempted += o.Preempted
	s.Filled += o.Filled
	s.FilledAccepted += o.FilledAccepted
	s.Sleep += o.Sleep
	s.DraftPasses += o.DraftPasses
	s.MaxTree = max(s.MaxTree, o.MaxTree)
	s.Pruned += o.Pruned
	s.PrunedLost += o.PrunedLost
	s.PruneSteps += o.PruneSteps
	s.HeadRows += o.HeadRows
	s.PreDrafts += o.PreDrafts
	s.PreDraftHits += o.PreDraftHits
	s.PreDraftsEmpty += o.PreDraftsEmpty
	if s.Governor == nil {
		s.Governor = o.Governor
	}
	if s.PruneNote == "" {
		s.PruneNote = o.PruneNote
	}
}

// AcceptanceRate is accepted ÷ drafted.
func (s *Stats) AcceptanceRate() float64 {
	if s.Drafted == 0 {
		return 0
	}
	return float64(s.Accepted) / float64(s.Drafted)
}

// MeanAccepted is the mean number of draft tokens accepted per step.
func (s *Stats) MeanAccepted() float64 {
	if s.Steps == 0 {
		return 0
	}
	return float64(s.Accepted) / float64(s.Steps)
}

// Decoder generates tokens from a target model, speculatively when a
// drafter is configured. Under greedy sampling its output is the target's
// own greedy output, token for token; under stochastic sampling it is
// distributed exactly as the target's sampler.
type Decoder struct {
	cfg           Config
	target        *model.State
	sampler       *sample.Sampler
	verify        *verifier
	draft         *ModelDrafter
	ngram         *Ngram
	ctl           *Estimates
	lastDraftKind draftKind

	ctx    []int32 // accepted text; its last token is the pending one
	tree   Tree
	path   []int32
	rows   []int
	logits []float32
	batch  model.Batch

	predicted  []int     // rows whose logits predLogits holds
	predLogits []float32 // (len(predicted), vocab)
	stats      Stats
	Prefill    int // rows per prefill pass (default 256)

	gov        Governor
	targetHook func(layer int) error // d.targetLayer, bound once
	filledFrom int32                 // first node added by n-gram filling, or -1
	fillNodes  []int32
	ngcache    *NgramCache // under a governor: filling's multi-source n-gram cache

	lv  leverState
	pre *preDraft // nil unless pre-drafting
}

// NewDecoder sets up decoding on a target state. draft may be nil when the
// mode does not need a draft model (off, ngram, or auto without one).
func NewDecoder(target *model.State, sampler *sample.Sampler, draft *ModelDrafter, cfg Config) (*Decoder, error) {
	cfg.defaults()
	if draft == nil && (cfg.Mode == Chain || cfg.Mode == TreeM || cfg.Mode == Lever) {
		return nil, fmt.Errorf("spec: mode %v needs a draft model", cfg.Mode)
	}
	vocab := target.Model().Config.Vocab
	d := &Decoder{cfg: cfg, target: target, sampler: sampler, draft: draft,
		verify: newVerifier(sampler, vocab), logits: make([]float32, vocab), Prefill: 256}
	if cfg.Mode == NgramM || cfg.Mode == Auto {
		d.ngram = NewNgram(cfg.NgramMin, cfg.NgramMax)
	}
	d.ctl = cfg.Estimates
	if d.ctl == nil {
		d.ctl = NewEstimates()
	}
	d.gov = cfg.Governor
	d.targetHook = d.targetLayer
	if cfg.Mode == Lever {
		if err := d.lv.init(d); err != nil {
			return nil, err
		}
		if cfg.PreDraft && !cfg.NoGainCost && cfg.Governor == nil && sampler.Params().Greedy() &&
			d.lv.cost != nil && d.lv.cost.StreamedLayers > 0 {
			if err := d.enablePreDraft(); err != nil {
				return nil, err
			}
		}
	}
	if d.gov != nil {
		if d.ngram == nil {
			d.ngram = NewNgram(cfg.NgramMin, cfg.NgramMax)
		}
		d.ngcache = NewNgramCache(cfg.NgramMin, cfg.NgramMax)
		if draft != nil {
			draft.SetGovernor(d.gov)
		}
	}
	return d, nil
}

// targetLayer is the yield point after each target layer.
func (d *Decoder) targetLayer(layer int) error {
	if d.gov != nil {
		d.stats.Sleep += sleepFor(d.gov.VerifyLayer(layer, d.target.Rows(), d.target.LayerTimes[layer]))
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

// Stats returns the counters so far.
func (d *Decoder) Stats() Stats {
	st := d.stats
	if d.pre != nil {
		st.PreDrafts, st.PreDraftHits, st.PreDraftsEmpty = d.pre.launched, d.pre.hits, d.pre.empty
	}
	if d.gov != nil {
		st.Governor = governorReport(d.gov)
	}
	return st
}

// Start feeds a prompt: every token but the last goes through the target
// (in batches); the last becomes the pending token the first step starts from.
func (d *Decoder) Start(prompt []int32) error {
	if len(prompt) == 0 {
		return errors.New("spec: empty prompt")
	}
	if err := d.target.Truncate(0); err != nil {
		return err
	}
	if d.draft != nil {
		d.draft.Reset()
	}
	body := prompt[:len(prompt)-1]
	for i := 0; i < len(body); i += d.Prefill {
		chunk := body[i:min(i+d.Prefill, len(body))]
		if err := d.forward(model.Chain(chunk)); err != nil {
			return err
		}
		if err := d.target.CommitAll(); err != nil {
			return err
		}
	}
	d.ctx = append(d.ctx[:0], prompt...)
	return nil
}

// Step runs one speculative step and appends the tokens it produced (at
// least one) to out. The last produced token is pending: it is fed to the
// target at the start of the next step.
func (d *Decoder) Step(out []int32) ([]int32, error) {
	t0 := time.Now()
	d.tree.Reset()
	d.dropPreDraft()
	if err := d.makeDraft(); err != nil {
		return out, err
	}
	d.filledFrom = -1
	if d.gov != nil {
		if d.draft != nil && d.lastDraftKind == draftModel && d.draft.Preempted() {
			d.stats.Preempted++
		}
		room := d.target.Cache.Cap() - d.target.Len() - 1
		if want := min(d.gov.VerifyRows(d.tree.Len()), room+1, 64); want > d.tree.Len()+1 {
			d.filledFrom = int32(d.tree.Len())
			d.fill(want - 1)
		}
	}
	t1 := time.Now()

	// Verify: the pending token and the whole tree in one target pass.
	n := d.tree.Len()
	if d.target.Len()+n+1 > d.target.Cache.Cap() {
		return out, fmt.Errorf("spec: context full (%d tokens)", d.target.Cache.Cap())
	}
	d.batch.Tokens = append(d.batch.Tokens[:0], d.ctx[len(d.ctx)-1])
	d.batch.Parent = append(d.batch.Parent[:0], -1)
	for i := range n {
		d.batch.Tokens = append(d.batch.Tokens, d.tree.Tokens[i])
		d.batch.Parent = append(d.batch.Parent, d.tree.Parent[i]+1)
	}
	if d.pre != nil && n > 0 {
		d.launchPreDraft(d.gainCost(d.cfg.MaxNodes))
	}
	path, bonus, err := d.verifyTree()
	if err != nil {
		d.dropPreDraft() // a pre-draft must not outlive its decoder's last step
		return out, err
	}
	d.joinPreDraft(path, bonus)
	d.rows = append(d.rows[:0], 0)
	for _, p := range path {
		d.rows = append(d.rows, int(p)+1)
	}
	if err := d.target.Commit(d.rows); err != nil {
		return out, err
	}
	if d.ngcache != nil {
		d.ngcache.Rejected(d.ctx, &d.tree, path, d.draftedNodes())
		d.ngcache.Tick()
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

	// Book-keeping for stats and the controller.
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
		if d.filledFrom >= 0 && p >= d.filledFrom {
			d.stats.FilledAccepted++
		}
	}
	if d.filledFrom >= 0 {
		d.stats.Filled += n - int(d.filledFrom)
	}
	if d.cfg.Mode == Lever {
		d.lv.afterStep(d, path, bonus)
		d.lv.observeOverhead(d, n, time.Since(t0))
		d.lv.learnScales(d)
	}
	t3 := time.Now()
	// A pre-draft that ran out after verification was the next step's
	// drafting, done early.
	var ranOut time.Duration
	if d.pre != nil {
		ranOut, d.pre.ranOut = d.pre.ranOut, 0
	}
	d.stats.DraftTime += t1.Sub(t0) + ranOut
	d.stats.VerifyTime += t2.Sub(t1) - ranOut
	d.stats.OtherTime += t3.Sub(t2)
	catchup := 0
	if d.lastDraftKind == draftModel {
		catchup = d.draft.catchup
	}
	d.ctl.mu.Lock()
	// The verify cost the controller weighs includes the step's book-keeping
	// (commit, draft sync): on a small model that is not negligible.
	d.ctl.c.observe(n, len(path), t1.Sub(t0), t3.Sub(t1), d.lastDraftKind, catchup)
	d.ctl.mu.Unlock()
	if d.gov != nil {
		d.stats.Sleep += sleepFor(d.gov.StepDone(len(path)+1, time.Since(t0)))
	}
	return out, nil
}

// verifyTree runs the verify pass over d.batch and walks the tree: the
// accepted path and the bonus token.
func (d *Decoder) verifyTree() ([]int32, int32, error) {
	if err := d.verifyForward(d.batch); err != nil {
		return nil, 0, err
	}
	if err := d.predictLogits(); err != nil {
		return nil, 0, err
	}
	d.verify.skip = d.lv.pruned
	path, bonus, err := d.verify.walk(&d.tree, d.rowLogits, d.path[:0])
	d.verify.skip = nil
	d.path = path
	return path, bonus, err
}

// fill grows the tree to size nodes with n-gram continuations: along the
// draft's main path (the pending token, its first child, that node's first
// child, …), deepest first, it looks up what followed the text up to that
// node and hangs it there as a chain, merging into children that already
// propose the same tokens. Filled nodes come after the drafted ones, so
// they are the last siblings verification tries; being deterministic
// proposals, they keep verification exact under sampling too.
func (d *Decoder) fill(size int) {
	t := &d.tree
	main := d.fillNodes[:0]
	main = append(main, -1)
	for node := int32(-1); ; {
		next := int32(-1)
		for i, p := range t.Parent {
			if p == node {
				next = int32(i)
				break
			}
		}
		if next < 0 {
			break
		}
		main = append(main, next)
		node = next
	}
	d.fillNodes = main
	var prefix []int32
	for k := len(main) - 1; k >= 0 && t.Len() < size; k-- {
		prefix = prefix[:0]
		for _, n := range main[1 : k+1] {
			prefix = append(prefix, t.Tokens[n])
		}
		cont := d.ngcache.Continue(d.ctx, prefix, size-t.Len()+1)
		at := main[k]
		for _, tok := range cont {
			if t.Len() >= size {
				break
			}
			child := int32(-1)
			for i, p := range t.Parent {
				if p == at && t.Tokens[i] == tok {
					child = int32(i)
					break
				}
			}
			if child < 0 {
				child = t.Add(tok, at, nil)
			}
			at = child
		}
	}
}

// draftedNodes is how many of the tree's nodes the drafter made (the rest,
// if any, came from n-gram filling).
func (d *Decoder) draftedNodes() int {
	if d.filledFrom >= 0 {
		return int(d.filledFrom)
	}
	return d.tree.Len()
}

// predictLogits computes, in one LM-head pass, the logits of the rows on
// the draft's own best path (the pending token, its first child, that
// node's first child, …): the rows verification will most likely need. One
// pass over the LM head weights for all of them costs about what one row
// does when decoding is memory-bound; rows off that path are computed on
// demand, so the LM head still never runs on rows nobody asked for.
func (d *Decoder) predictLogits() error {
	d.predicted = d.predicted[:0]
	if d.cfg.Mode == Lever {
		return d.lv.predictLogits(d)
	}
	if d.cfg.RowByRowHead {
		return nil
	}
	for row, node := 0, int32(-1); ; {
		d.predicted = append(d.predicted, row)
		next := int32(-1)
		for i, p := range d.tree.Parent {
			if p == node {
				next = int32(i)
				break
			}
		}
		if next < 0 {
			break
		}
		node, row = next, int(next)+1
	}
	return d.headPass()
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
	defer func() { d.lv.modelTime += time.Since(t0) }()
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
	d.lv.modelTime += time.Since(t0)
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
	return nil, fmt.Errorf("spec: %w (%d of %d values of the row after %d tokens): the model file's weights or hyperparameters are broken", ErrNonFinite, bad, len(logits), d.target.Len()+row+1)
}

// gainCost is the configuration of a gain-cost draft with room for at most
// room nodes.
func (d *Decoder) gainCost(room int) GainCost {
	return GainCost{Cost: d.lv.cost, MaxNodes: min(d.cfg.MaxNodes, room), Unbatched: d.cfg.NoBatchDraft, PerNode: d.lv.perNode, RowFloor: d.lv.rowFloor(), TileSteps: d.lv.tileSteps()}
}

// makeDraft fills d.tree according to the mode.
func (d *Decoder) makeDraft() error {
	d.lastDraftKind = draftNone
	room := d.target.Cache.Cap() - d.target.Len() - 1
	switch d.cfg.Mode {
	case Off:
		return nil
	case NgramM:
		if d.ngram.Propose(d.ctx, min(d.cfg.DraftMax, room), &d.tree) > 0 {
			d.lastDraftKind = draftNgram
		}
		return nil
	case Chain:
		d.lastDraftKind = draftModel
		return d.draft.Draft(d.ctx, Shape{Width: 1, Depth: d.cfg.DraftMax, Max: min(d.cfg.DraftMax, room)}, &d.tree)
	case TreeM:
		d.lastDraftKind = draftModel
		return d.draft.Draft(d.ctx, Shape{Width: d.cfg.TreeWidth, Depth: d.cfg.TreeDepth, Max: min(d.cfg.DraftMax, room)}, &d.tree)
	case Lever:
		d.lastDraftKind = draftModel
		var err error
		d.lv.predrafted = d.takePreDraft()
		switch {
		case d.lv.predrafted:
		case d.cfg.NoGainCost || d.lv.cost == nil:
			err = d.draft.Draft(d.ctx, Shape{Width: d.cfg.TreeWidth, Depth: d.cfg.TreeDepth, Max: min(d.cfg.DraftMax, room)}, &d.tree)
		default:
			err = d.draft.DraftGainCost(d.ctx, d.gainCost(room), &d.tree)
		}
		d.stats.DraftPasses += d.draft.DraftPasses()
		d.stats.MaxTree = max(d.stats.MaxTree, d.tree.Len())
		return err
	}
	// Auto: n-gram lookup is nearly free, so try it first; the controller
	// sizes the model draft (possibly to nothing).
	d.ctl.mu.Lock()
	plain := d.ctl.c.plainStep()
	kNgram, kModel := 0, 0
	if !plain {
		kNgram = d.ctl.c.ngramLen(min(d.cfg.DraftMax, room))
	}
	d.ctl.mu.Unlock()
	if plain {
		d.ngram.sync(d.ctx)
		return nil
	}
	if kNgram > 0 && d.ngram.Propose(d.ctx, kNgram, &d.tree) > 0 {
		d.lastDraftKind = draftNgram
		return nil
	}
	if d.draft == nil {
		return nil
	}
	d.ctl.mu.Lock()
	d.ctl.c.limit = d.cfg.DraftMax
	kModel = d.ctl.c.modelLen()
	d.ctl.mu.Unlock()
	k := min(kModel, room)
	if k <= 0 {
		return nil
	}
	d.lastDraftKind = draftModel
	return d.draft.Draft(d.ctx, Shape{Width: 1, Depth: k, Max: k}, &d.tree)
}
