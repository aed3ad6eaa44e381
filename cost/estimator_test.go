package cost

import (
	"math"
	"testing"
	"time"
)

// TestTileSteps: verify passes timed by how many kernel tiles their rows
// took give what one more tile costs, once both sizes were seen.
func TestTileSteps(t *testing.T) {
	var lv tileTimes
	if steps := lv.steps(); steps[0] != 0 {
		t.Fatalf("nothing seen: steps %v", steps)
	}
	for range 3 {
		lv.add(9, 0.7)  // one tile
		lv.add(16, 0.7) // one tile, full
		lv.add(17, 1.0) // two tiles
	}
	steps := lv.steps()
	if math.Abs(steps[0]-0.3) > 1e-9 || steps[1] != 0 {
		t.Fatalf("steps %v, want [0.3 0 …]", steps)
	}
	// A pass of more tiles than are kept is not counted.
	lv.add(1000, 5)
	if got := lv.steps(); math.Abs(got[0]-0.3) > 1e-9 {
		t.Fatalf("an oversized pass moved the steps: %v", got)
	}
}

// TestEstimatorStepCosts: plain steps give the one-row step cost, drafted
// ones the cost per extra row and per drafted token; a long catch-up is
// not taken for drafting's cost.
func TestEstimatorStepCosts(t *testing.T) {
	var e Estimator
	ms := time.Millisecond
	e.ObserveStep(0, false, 0, 10*ms, 0)
	e.ObserveStep(4, false, 8*ms, 14*ms, 1)
	e.ObserveStep(2, false, 100*ms, 12*ms, 30) // a catch-up of 30 tokens
	e.ObserveStep(3, true, ms, 13*ms, 0)
	got := e.StepCosts()
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-12 }
	if !near(got.Verify1, 0.010) || !near(got.VerifyRow, 0.001) || !near(got.DraftToken, 0.002) || !near(got.NgramLookup, 0.001) {
		t.Errorf("step costs %+v", got)
	}
	// Per drafted length: 4 → 4 ms, 2 → 2 ms, 3 → 3 ms beyond one row.
	if !near(got.VerifyExtra[4], 0.004) || !near(got.VerifyExtra[2], 0.002) || !near(got.VerifyExtra[3], 0.003) || got.Longest() != 4 {
		t.Errorf("verify extras %v, longest %d", got.VerifyExtra[:6], got.Longest())
	}
	var nilEst *Estimator
	nilEst.ObserveStep(1, false, ms, ms, 0)
	if nilEst.StepCosts() != (StepCosts{}) || nilEst.RowFloor() != 0 {
		t.Error("a nil estimator estimated something")
	}
}

// TestEstimatorScales: a draft twice as slow as measured moves the draft
// scale towards 2, and Apply gives it to another copy of the table.
func TestEstimatorScales(t *testing.T) {
	m := &Model{Batches: []int{1, 64}, Layers: 4, DraftPass: []float64{1e-3, 4e-3}, TargetLayer: []float64{1e-3, 8e-3}, TargetHead: []float64{1e-4, 1e-3}}
	var e Estimator
	for range 20 {
		e.ObserveDraft(m, []int{1, 1}, 4*time.Millisecond)
	}
	if math.Abs(m.DraftScale-2) > 0.01 {
		t.Fatalf("draft scale %v, want 2", m.DraftScale)
	}
	c := &Model{}
	e.Apply(c)
	if c.DraftScale != m.DraftScale || c.ComputeScale != 0 {
		t.Errorf("applied scales %v, %v", c.DraftScale, c.ComputeScale)
	}
}

// TestStepCostsExtra: the verify cost of a drafted length is the one
// observed, else interpolated between the observed lengths around it (0
// rows cost 0), else extended at the last observed stretch's slope, else
// linear in VerifyRow.
func TestStepCostsExtra(t *testing.T) {
	var c StepCosts
	c.VerifyRow = 0.5
	if got := c.Extra(3); got != 1.5 || c.Longest() != 0 {
		t.Fatalf("nothing observed: Extra(3) = %v, longest %d", got, c.Longest())
	}
	c.VerifyExtra[2] = 6 // memory-bound to compute-bound: a steep start
	c.VerifyExtra[4] = 7
	for _, tc := range []struct {
		k    int
		want float64
	}{{0, 0}, {1, 3}, {2, 6}, {3, 6.5}, {4, 7}, {6, 8}, {MaxStepDraft + 10, 7 + 0.5*float64(MaxStepDraft+6)}} {
		if got := c.Extra(tc.k); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("Extra(%d) = %v, want %v", tc.k, got, tc.want)
		}
	}
	if c.Longest() != 4 {
		t.Errorf("longest %d", c.Longest())
	}
	c.VerifyExtra[MaxStepDraft] = 100
	if got := c.Extra(MaxStepDraft + 1); math.Abs(got-100-93.0/float64(MaxStepDraft-4)) > 1e-9 {
		t.Errorf("past the table: %v", got)
	}
}
