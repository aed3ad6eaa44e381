package speculate

import (
	"fmt"
	"strings"
	"time"
)

// Mode selects how drafts are made.
type Mode int

const (
	ModeOff   Mode = iota // plain autoregressive decoding
	ModeChain             // the draft model proposes a chain
	ModeTree              // the draft model proposes a tree
	ModeNgram             // n-gram lookup proposes a chain
	ModeAuto              // n-gram first, then the draft model; length sized from observed costs
	ModeFlash             // the flash-aware design (package flash): gain-cost trees, verify pruning, lazy head
)

// The mode names are the CLI's (--spec): the flash-aware mode is "lever",
// the name its flag has always had.
var modeNames = []string{"off", "chain", "tree", "ngram", "auto", "lever"}

func (m Mode) String() string { return modeNames[m] }

// NeedsDraft reports whether the mode drafts with a draft model only.
func (m Mode) NeedsDraft() bool { return m == ModeChain || m == ModeTree || m == ModeFlash }

// ParseMode maps off|chain|tree|ngram|auto|lever to a Mode.
func ParseMode(s string) (Mode, error) {
	for i, n := range modeNames {
		if n == s {
			return Mode(i), nil
		}
	}
	return ModeOff, fmt.Errorf("speculate: unknown mode %q (want %s)", s, strings.Join(modeNames, ", "))
}

// Config sets up speculation: what a request asks for (the knobs), the
// switches that turn the flash-aware design's parts off for measurement
// (Ablation), and what the run supplies (Deps).
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
	// MaxNodes is the safety cap of a gain-cost tree (flash mode; default 64).
	MaxNodes int
	// PruneLayer, if set, is the target layer verification pruning stops
	// after (flash mode; 0: the predictor's own).
	PruneLayer int
	Ablation   Ablation
	Deps       Deps
}

// Ablation turns the flash-aware design's parts off one at a time, to
// measure what each is worth.
type Ablation struct {
	NoGainCost   bool // a static tree (TreeWidth × TreeDepth, DraftMax nodes) instead
	NoPrune      bool // verify every drafted row through every layer
	NoLazyHead   bool // logits for every row of the verify pass, in one head pass
	NoBatchDraft bool // expand one frontier node per draft pass
}

// Deps are what a run gives the decoder beyond the request's knobs.
type Deps struct {
	// Estimates, if set, is where auto mode keeps what it learns of
	// acceptance and step costs, so that later generations with the same
	// models start from it; nil keeps them per decoder.
	Estimates *Estimates
	// Governor, if set, paces decoding for other work on the machine: it
	// may preempt drafts, widen verification with n-gram filling, sleep
	// between target layers and pause between steps.
	Governor Governor
	// Flash makes flash mode's strategy (a *flash.Setup): required in
	// that mode, unused in the others.
	Flash Maker
}

// Maker makes a decoder's Strategy from its configuration. A Config may
// serve many generations, and a strategy keeps one generation's state.
type Maker interface {
	Make(cfg Config) (Strategy, error)
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

// Defaults returns c with every unset knob at its default.
func (c Config) Defaults() Config {
	c.defaults()
	return c
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
	// Flash mode: draft passes after catching up, the largest tree, the
	// verify rows pruned (and how many of them the target would have
	// accepted, greedy only), steps that pruned, LM-head rows computed,
	// and why pruning is off when it is.
	DraftPasses int    `json:"draft_passes,omitempty"`
	MaxTree     int    `json:"max_tree,omitempty"`
	Pruned      int    `json:"pruned,omitempty"`
	PrunedLost  int    `json:"pruned_lost,omitempty"`
	PruneSteps  int    `json:"prune_steps,omitempty"`
	HeadRows    int    `json:"head_rows,omitempty"`
	PruneNote   string `json:"prune_note,omitempty"`
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
