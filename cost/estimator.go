package cost

import (
	"sync"
	"time"

	"shade/quant"
)

// Estimator is the one estimate of what a speculative step costs on this
// machine now: the measured table (a Model, when there is one) corrected
// online by what the steps actually took. Every mode that sizes its drafts
// by cost asks it and feeds it: flash mode through the table and its
// corrections (Apply, RowFloor, TileSteps, PerNode), auto mode, which runs
// without a table, through the step costs it observes (StepCosts). An
// engine keeps one per target and draft pair, so that each request starts
// from what the earlier ones learned. The zero value is ready; a nil
// *Estimator learns nothing and estimates nothing. Safe for concurrent use.
type Estimator struct {
	mu sync.Mutex
	// Corrections of the table: how much slower (or faster) the target's
	// compute and the draft passes are now than when measured.
	computeScale, draftScale float64
	// Verify passes: time against rows kept (its slope is what a row
	// costs beyond the table's "the longer of read and compute"), and by
	// how many kernel tiles their rows took.
	rows  rowFit
	tiles tileTimes
	// perNode is a step's book-keeping per tree node beyond the model's
	// passes (drafting, verification and commit in Go).
	perNode float64
	// Step costs observed without a table (auto mode).
	steps StepCosts
}

// StepCosts are the decayed step costs observed by an Estimator, in
// seconds: a step verifying one row, each verify row more, a drafted
// token and an n-gram lookup. Zero means not observed yet.
type StepCosts struct {
	Verify1, VerifyRow, DraftToken, NgramLookup float64
	// VerifyExtra[k] is what a step that drafted k tokens took to verify
	// beyond Verify1 (0: not observed), k <= MaxStepDraft. A verify pass's
	// cost is not linear in its rows: where one row is bound by the memory
	// bus, the next few rows cost little more than their compute hidden
	// behind the same read, then each tile of rows a kernel call takes
	// costs its compute (on Zen 4's AVX2 kernels, an 8B pass of 2 rows took
	// 1.6x one row's time, of 5 rows 2.1x, of 9 rows 3.9x).
	VerifyExtra [MaxStepDraft + 1]float64
}

// MaxStepDraft is the longest draft whose verify cost StepCosts keeps
// apart; longer ones are extrapolated.
const MaxStepDraft = 64

// Extra is what verifying k drafted tokens costs beyond one row, from the
// costs observed: the observed one for k, else interpolated between the
// nearest observed lengths around k (0 drafted tokens cost nothing more),
// else extended beyond the longest observed at the slope of its last
// observed stretch; VerifyRow·k when no length was observed.
func (c *StepCosts) Extra(k int) float64 {
	if k <= 0 {
		return 0
	}
	if k <= MaxStepDraft && c.VerifyExtra[k] > 0 {
		return c.VerifyExtra[k]
	}
	lo, hi := 0, 0 // nearest observed lengths below and above k (0: none)
	for j := min(k-1, MaxStepDraft); j >= 1; j-- {
		if c.VerifyExtra[j] > 0 {
			lo = j
			break
		}
	}
	for j := k + 1; j <= MaxStepDraft; j++ {
		if c.VerifyExtra[j] > 0 {
			hi = j
			break
		}
	}
	switch {
	case hi > 0: // between lo (or 0) and hi
		return c.VerifyExtra[lo] + (c.VerifyExtra[hi]-c.VerifyExtra[lo])*float64(k-lo)/float64(hi-lo)
	case lo > 0: // past the longest observed, at its last stretch's slope
		prev := 0
		for j := lo - 1; j >= 1; j-- {
			if c.VerifyExtra[j] > 0 {
				prev = j
				break
			}
		}
		slope := max(0, (c.VerifyExtra[lo]-c.VerifyExtra[prev])/float64(lo-prev))
		return c.VerifyExtra[lo] + slope*float64(k-lo)
	}
	return c.VerifyRow * float64(k)
}

// Longest is the longest draft whose verify cost was observed (0: none).
func (c *StepCosts) Longest() int {
	for k := MaxStepDraft; k >= 1; k-- {
		if c.VerifyExtra[k] > 0 {
			return k
		}
	}
	return 0
}

// Apply sets m's compute and draft scales to what e has learned (m is the
// caller's copy of the table).
func (e *Estimator) Apply(m *Model) {
	if e == nil || m == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.computeScale > 0 {
		m.ComputeScale = e.computeScale
	}
	if e.draftScale > 0 {
		m.DraftScale = e.draftScale
	}
}

// ObservePass learns from a verify pass over rows rows, kept of them
// after pruneAt layers (kept = rows, pruneAt = m.Layers when nothing was
// pruned), that took `took`, with `draft` of drafting before it (whose
// reads it hid, Model.Overlap). m is the table it ran under; its compute
// scale is updated too.
func (e *Estimator) ObservePass(m *Model, rows, kept, pruneAt int, took, draft time.Duration) {
	if e == nil || m == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.rows.add(float64(kept), took.Seconds())
	// The pass was shorter by the reads the draft hid: the compute scale
	// is fitted to the pass without that head start.
	t := took.Seconds() + m.Overlap(draft.Seconds(), rows)
	e.tiles.add(rows, t)
	if s, ok := m.FitComputeScale(rows, kept, pruneAt, t); ok {
		m.ComputeScale = 0.7*scaleOr1(m.ComputeScale) + 0.3*s
		e.computeScale = m.ComputeScale
	}
}

// ObserveDraft learns from a draft whose model passes had the given rows
// (the catch-up first) and took `took` in all. m is the table; its draft
// scale is updated too.
func (e *Estimator) ObserveDraft(m *Model, passRows []int, took time.Duration) {
	if e == nil || m == nil || took <= 0 {
		return
	}
	var want float64
	for _, b := range passRows {
		want += m.Draft(b) / scaleOr1(m.DraftScale)
	}
	if want <= 0 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	s := min(max(took.Seconds()/want, 1.0/8), 8)
	m.DraftScale = 0.7*scaleOr1(m.DraftScale) + 0.3*s
	e.draftScale = m.DraftScale
}

// ObserveOverhead learns the book-keeping per node from a step of nodes
// tree nodes whose time beyond the model's passes was other.
func (e *Estimator) ObserveOverhead(nodes int, other time.Duration) {
	if e == nil || nodes == 0 || other < 0 {
		return
	}
	x := other.Seconds() / float64(nodes+1)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.perNode == 0 {
		e.perNode = x
	} else {
		e.perNode = 0.8*e.perNode + 0.2*x
	}
}

// PerNode is the book-keeping per tree node, in seconds (0: not observed).
func (e *Estimator) PerNode() float64 {
	if e == nil {
		return 0
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.perNode
}

// RowFloor is the observed slope of verify time against rows, in seconds
// (0 until the passes seen differ enough in rows to tell): the least a
// verify row costs, since reads and compute overlap less than the table's
// "the longer of the two" assumes.
func (e *Estimator) RowFloor() float64 {
	if e == nil {
		return 0
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.rows.slope()
}

// TileSteps is, per number of kernel tiles k+1 of verify rows, how much
// longer passes were observed to take with one tile more (0 where not
// seen enough of both to tell).
func (e *Estimator) TileSteps() []float64 {
	if e == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.tiles.steps()
}

// ObserveStep learns from a step that drafted `drafted` nodes (by n-gram
// lookup when ngram, else by the draft model) in `draft` and verified and
// booked them in `verify`. catchup is how many tokens the draft model fed
// before drafting: a long catch-up (after steps it sat out) is a one-off
// cost, not what drafting costs per token, so it is not measured.
func (e *Estimator) ObserveStep(drafted int, ngram bool, draft, verify time.Duration, catchup int) {
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	c := &e.steps
	v := verify.Seconds()
	if drafted == 0 {
		c.Verify1 = ewma(c.Verify1, v)
		return
	}
	if c.Verify1 > 0 {
		c.VerifyRow = ewma(c.VerifyRow, max(0, (v-c.Verify1)/float64(drafted)))
		if drafted <= MaxStepDraft {
			// A step no slower than one row still costs something: keep
			// the entry observed.
			c.VerifyExtra[drafted] = ewma(c.VerifyExtra[drafted], max(v-c.Verify1, 1e-9))
		}
	}
	switch {
	case ngram:
		c.NgramLookup = ewma(c.NgramLookup, draft.Seconds())
	case catchup <= 2:
		c.DraftToken = ewma(c.DraftToken, draft.Seconds()/float64(drafted))
	}
}

// StepCosts are the step costs observed so far.
func (e *Estimator) StepCosts() StepCosts {
	if e == nil {
		return StepCosts{}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.steps
}

func ewma(old, x float64) float64 {
	if old == 0 {
		return x
	}
	return 0.8*old + 0.2*x
}

func scaleOr1(s float64) float64 {
	if s > 0 {
		return s
	}
	return 1
}

// rowFit is a decayed least-squares fit of verify time against rows.
type rowFit struct{ n, x, y, xx, xy float64 }

func (r *rowFit) add(x, y float64) {
	const keep = 0.95
	r.n, r.x, r.y = keep*r.n+1, keep*r.x+x, keep*r.y+y
	r.xx, r.xy = keep*r.xx+x*x, keep*r.xy+x*y
}

// slope is the fit's slope (0 until the passes seen differ enough in rows).
func (r *rowFit) slope() float64 {
	den := r.n*r.xx - r.x*r.x
	if r.n < 3 || den <= 1e-9*r.n*r.n {
		return 0
	}
	return max(0, (r.n*r.xy-r.x*r.y)/den)
}

// maxTiles is how many kernel tiles of verify rows are timed.
const maxTiles = 4

// tileTimes are decayed counts and time sums of verify passes by how many
// kernel tiles their rows took (index k: k+1 tiles).
type tileTimes struct{ n, t [maxTiles]float64 }

// add records a verify pass of rows rows that took `took` seconds.
func (tt *tileTimes) add(rows int, took float64) {
	k := (rows+quant.TileRows-1)/quant.TileRows - 1
	if k < 0 || k >= maxTiles {
		return
	}
	const keep = 0.9
	for i := range tt.n {
		tt.n[i] *= keep
		tt.t[i] *= keep
	}
	tt.n[k]++
	tt.t[k] += took
}

// steps is, per number of tiles k+1, what a pass took more with one tile
// more (0 where not seen enough of both to tell).
func (tt *tileTimes) steps() []float64 {
	var out []float64
	for k := 0; k+1 < maxTiles; k++ {
		step := 0.0
		if tt.n[k] >= 1 && tt.n[k+1] >= 1 {
			step = max(0, tt.t[k+1]/tt.n[k+1]-tt.t[k]/tt.n[k])
		}
		out = append(out, step)
	}
	return out
}
