package spec

import (
	"math"
	"sync"
	"time"
)

// Estimates hold auto mode's learned acceptance and costs. They can be
// shared by every generation of the same target and draft on a machine
// (engine keeps one), so a new request does not pay to learn them again.
// Safe for concurrent use.
type Estimates struct {
	mu sync.Mutex
	c  sizer
}

// NewEstimates returns estimates with no observations (a weak prior).
func NewEstimates() *Estimates {
	e := &Estimates{}
	e.c.init(64)
	return e
}

// sizer sizes drafts in auto mode. It keeps decayed estimates of the
// per-token acceptance of each drafter (the chance a drafted token is kept
// given the one before it was), of the draft model's cost per token, and of
// the verify pass's cost as a + b·rows; then it picks the draft length k
// that maximizes expected tokens per second,
//
//	E(k) / (a + b·k + draft·k),  E(k) = (1 − α^(k+1)) / (1 − α),
//
// against plain decoding's 1 / a. When no k beats plain decoding it drafts
// nothing, probing with one token now and then so that it notices when
// drafts become good again.
type sizer struct {
	max        int        // longest draft the estimates cover
	limit      int        // the current decoder's --draft-max
	succ, tri  [3]float64 // decayed accepted / tried tokens per drafter
	draftTok   float64    // seconds per drafted token (model)
	ngramStep  float64    // seconds of one n-gram lookup
	verify1    float64    // seconds of a one-row verify
	verifyRow  float64    // seconds per extra verify row
	sinceProbe [3]int
	probeGap   [3]int // plain steps between probes; doubles while probes fail
	sincePlain int
}

const (
	decay       = 0.9
	probeEvery  = 16  // plain steps before the first one-token probe of a poor drafter
	maxProbeGap = 256 // the gap doubles up to this while probes keep failing
	plainEvery  = 64  // drafted steps between plain ones that re-measure a
)

func (c *sizer) init(maxLen int) {
	c.max, c.limit = maxLen, maxLen
	for k := range c.succ { // a weak prior: acceptance 0.5
		c.succ[k], c.tri[k] = 1, 2
	}
}

func ewma(old, x float64) float64 {
	if old == 0 {
		return x
	}
	return 0.8*old + 0.2*x
}

// observe records one step. catchup is how many tokens the draft model had
// to feed before drafting: a long catch-up (after steps it sat out) is a
// one-off cost, not what drafting costs per token, so it is not measured.
func (c *sizer) observe(drafted, accepted int, draft, verify time.Duration, kind DraftKind, catchup int) {
	v := verify.Seconds()
	c.sincePlain++
	if drafted == 0 {
		c.verify1 = ewma(c.verify1, v)
		return
	}
	if c.verify1 > 0 {
		c.verifyRow = ewma(c.verifyRow, max(0, (v-c.verify1)/float64(drafted)))
	}
	if kind == DraftModel && catchup <= 2 {
		c.draftTok = ewma(c.draftTok, draft.Seconds()/float64(drafted))
	}
	if kind == DraftNgram {
		c.ngramStep = ewma(c.ngramStep, draft.Seconds())
	}
	c.succ[kind] = decay*c.succ[kind] + float64(accepted)
	c.tri[kind] = decay*c.tri[kind] + float64(accepted)
	if accepted < drafted {
		c.tri[kind]++
	}
}

func (c *sizer) alpha(kind DraftKind) float64 {
	return min(0.99, c.succ[kind]/max(c.tri[kind], 1e-9))
}

// best returns the draft length with the best expected rate, 0 for none.
// Until the draft model's cost is measured, drafts stay short.
func (c *sizer) best(kind DraftKind, perToken float64, limit int) int {
	if kind == DraftModel && perToken == 0 {
		limit = min(limit, 2)
	}
	a := c.alpha(kind)
	fixed := 0.0 // a cost every drafted step pays whatever its length
	if kind == DraftNgram {
		fixed = c.ngramStep
	}
	bestK, bestRate := 0, 1/c.verify1
	hopeless := true // even drafts that are always accepted would not pay
	for k := 1; k <= limit; k++ {
		cost := c.verify1 + c.verifyRow*float64(k) + perToken*float64(k) + fixed
		e := (1 - math.Pow(a, float64(k+1))) / (1 - a)
		if rate := e / cost; rate > bestRate {
			bestK, bestRate = k, rate
		}
		if float64(k+1)/cost > 1/c.verify1 {
			hopeless = false
		}
	}
	if bestK > 0 {
		c.probeGap[kind] = probeEvery
		return bestK
	}
	if c.probeGap[kind] == 0 {
		c.probeGap[kind] = probeEvery
	}
	if hopeless {
		// Probing only learns acceptance, and acceptance cannot help: just
		// refresh the costs now and then.
		c.probeGap[kind] = maxProbeGap
	}
	if c.sinceProbe[kind]++; c.sinceProbe[kind] >= c.probeGap[kind] {
		c.sinceProbe[kind] = 0
		c.probeGap[kind] = min(2*c.probeGap[kind], maxProbeGap)
		return min(1, limit)
	}
	return 0
}

// plainStep reports whether this step should draft nothing, to measure the
// plain step's cost: first, and then every plainEvery steps.
func (c *sizer) plainStep() bool {
	if c.verify1 == 0 || c.sincePlain >= plainEvery {
		c.sincePlain = 0
		return true
	}
	return false
}

func (c *sizer) ngramLen(limit int) int { return c.best(DraftNgram, 0, min(c.max, limit)) }

func (c *sizer) modelLen() int { return c.best(DraftModel, c.draftTok, min(c.max, c.limit)) }

// auto is ModeAuto's strategy: n-gram lookup is nearly free, so it is
// tried first; the sizer sizes the model draft (possibly to nothing) from
// the acceptance and step costs it has observed.
type auto struct {
	plain
	est   *Estimates
	ngram *Ngram
	kind  DraftKind
}

func newAuto(cfg Config) *auto {
	est := cfg.Deps.Estimates
	if est == nil {
		est = NewEstimates()
	}
	return &auto{est: est, ngram: NewNgram(cfg.NgramMin, cfg.NgramMax)}
}

func (a *auto) Draft(s *Step) (DraftKind, error) {
	a.kind = DraftNone
	room := s.Room
	a.est.mu.Lock()
	plain := a.est.c.plainStep()
	kNgram := 0
	if !plain {
		kNgram = a.est.c.ngramLen(min(s.Config.DraftMax, room))
	}
	a.est.mu.Unlock()
	if plain {
		a.ngram.sync(s.Context)
		return DraftNone, nil
	}
	if kNgram > 0 && a.ngram.Propose(s.Context, kNgram, s.Tree) > 0 {
		a.kind = DraftNgram
		return a.kind, nil
	}
	if s.Drafter == nil {
		return DraftNone, nil
	}
	a.est.mu.Lock()
	a.est.c.limit = s.Config.DraftMax
	kModel := a.est.c.modelLen()
	a.est.mu.Unlock()
	k := min(kModel, room)
	if k <= 0 {
		return DraftNone, nil
	}
	a.kind = DraftModel
	return a.kind, s.Drafter.Draft(s.Context, Shape{Width: 1, Depth: k, Max: k}, s.Tree)
}

// Observe weighs the step: the verify cost the sizer learns includes the
// step's book-keeping (commit, draft sync), which on a small model is not
// negligible.
func (a *auto) Observe(s *Step) {
	catchup := 0
	if a.kind == DraftModel {
		catchup = s.Drafter.catchup
	}
	a.est.mu.Lock()
	a.est.c.observe(s.Tree.Len(), len(s.Path), s.DraftTime, s.StepTime-s.DraftTime, a.kind, catchup)
	a.est.mu.Unlock()
}
