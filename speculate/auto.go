package speculate

import (
	"math"
	"sync"
	"time"

	"shade/cost"
)

// Estimates hold what auto mode learns: the acceptance of each drafter,
// and the step costs in the cost estimator it shares with flash mode
// (Costs). They can be shared by every generation of the same target and
// draft on a machine (engine keeps one), so a new request does not pay to
// learn them again. Every mode's steps feed them. Safe for concurrent use.
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

// Costs is the cost estimator the estimates keep step costs in.
func (e *Estimates) Costs() *cost.Estimator { return e.c.cost }

// observe records a committed step (Sizer.observe).
func (e *Estimates) observe(drafted, accepted int, draft, verify time.Duration, kind DraftKind, catchup int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.c.observe(drafted, accepted, draft, verify, kind, catchup)
}

// sizer sizes drafts in auto mode. It keeps decayed estimates of the
// per-token acceptance of each drafter (the chance a drafted token is kept
// given the one before it was); the cost estimator keeps the draft model's
// cost per token and the verify step's: one row's, a, and what k drafted
// tokens add to it, V(k), observed for each k (cost.StepCosts.Extra). It
// picks the draft length k that maximizes expected tokens per second,
//
//	E(k) / (a + V(k) + draft·k),  E(k) = (1 − α^(k+1)) / (1 − α),
//
// against plain decoding's 1 / a. When no k beats plain decoding it drafts
// nothing, probing with one token now and then so that it notices when
// drafts become good again.
type sizer struct {
	max        int        // longest draft the estimates cover
	limit      int        // the current decoder's --draft-max
	succ, tri  [3]float64 // decayed accepted / tried tokens per drafter
	cost       *cost.Estimator
	sinceProbe [3]int
	// sinceLonger counts steps whose best length's successor was never
	// verified since one drafted it (best).
	sinceLonger [3]int
	probeGap    [3]int // plain steps between probes; doubles while probes fail
	sincePlain  int
}

const (
	decay       = 0.9
	probeEvery  = 16  // plain steps before the first one-token probe of a poor drafter
	maxProbeGap = 256 // the gap doubles up to this while probes keep failing
	longerEvery = 8   // steps before drafting one more than the best, unobserved, length
	plainEvery  = 64  // drafted steps between plain ones that re-measure a
)

func (c *sizer) init(maxLen int) {
	c.max, c.limit = maxLen, maxLen
	c.cost = new(cost.Estimator)
	for k := range c.succ { // a weak prior: acceptance 0.5
		c.succ[k], c.tri[k] = 1, 2
	}
}

// observe records one step. catchup is how many tokens the draft model had
// to feed before drafting (cost.Estimator.ObserveStep).
func (c *sizer) observe(drafted, accepted int, draft, verify time.Duration, kind DraftKind, catchup int) {
	c.sincePlain++
	c.cost.ObserveStep(drafted, kind == DraftNgram, draft, verify, catchup)
	if drafted == 0 {
		return
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
func (c *sizer) best(kind DraftKind, limit int) int {
	sc := c.cost.StepCosts()
	perToken := 0.0
	if kind == DraftModel {
		perToken = sc.DraftToken
		if perToken == 0 {
			limit = min(limit, 2)
		}
	}
	a := c.alpha(kind)
	fixed := 0.0 // a cost every drafted step pays whatever its length
	if kind == DraftNgram {
		fixed = sc.NgramLookup
	}
	verify1 := sc.Verify1
	bestK, bestRate := 0, 1/verify1
	hopeless := true // even drafts that are always accepted would not pay
	for k := 1; k <= limit; k++ {
		step := verify1 + sc.Extra(k) + perToken*float64(k) + fixed
		e := (1 - math.Pow(a, float64(k+1))) / (1 - a)
		if rate := e / step; rate > bestRate {
			bestK, bestRate = k, rate
		}
		if float64(k+1)/step > 1/verify1 {
			hopeless = false
		}
	}
	if bestK > 0 {
		c.probeGap[kind] = probeEvery
		// A length never verified has a guessed cost (interpolated, or
		// extended from the last stretch observed), which overrates
		// rows where a pass turns from memory- to compute-bound: now and
		// then draft one more than the best when that one is unobserved,
		// so that its cost is measured.
		if bestK < min(limit, cost.MaxStepDraft) && sc.VerifyExtra[bestK+1] == 0 {
			if c.sinceLonger[kind]++; c.sinceLonger[kind] >= longerEvery {
				c.sinceLonger[kind] = 0
				return bestK + 1
			}
		}
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
	if c.cost.StepCosts().Verify1 == 0 || c.sincePlain >= plainEvery {
		c.sincePlain = 0
		return true
	}
	return false
}

func (c *sizer) ngramLen(limit int) int { return c.best(DraftNgram, min(c.max, limit)) }

func (c *sizer) modelLen() int { return c.best(DraftModel, min(c.max, c.limit)) }

// auto is ModeAuto's strategy: n-gram lookup is nearly free, so it is
// tried first; the sizer sizes the model draft (possibly to nothing) from
// the acceptance and step costs observed (the Decoder feeds the estimates
// after every step, whatever the mode).
type auto struct {
	plain
	est   *Estimates
	ngram *Ngram
}

func newAuto(cfg Config, est *Estimates) *auto {
	return &auto{est: est, ngram: NewNgram(cfg.NgramMin, cfg.NgramMax)}
}

func (a *auto) Draft(s *Step) (DraftKind, error) {
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
	if kNgram > 0 && s.proposeNgram(a.ngram, kNgram) > 0 {
		return DraftNgram, nil
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
	return DraftModel, s.Drafter.Draft(s.Context, Shape{Width: 1, Depth: k, Max: k}, s.Tree)
}
