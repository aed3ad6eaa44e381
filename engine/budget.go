package engine

import (
	"shade/weights"
)

// SetDRAMBudget keeps at most budget bytes of weights resident: the draft
// (if loaded), the target's embedding, head and norms, and as many target
// layers as fit; the other target layers are streamed from the model file
// for every forward pass (see package weights). A budget that holds every
// layer streams nothing. It replaces any budget set before, and LoadDraft
// plans again with the same budget, since the draft's bytes count against
// it. It must not be called while a generation runs. The returned plan's
// Warning says when the budget cannot be met.
func (e *Engine) SetDRAMBudget(budget int64, o weights.Options) (weights.Plan, error) {
	if e.Stream != nil {
		if err := e.Stream.Close(); err != nil {
			return weights.Plan{}, err
		}
		e.Stream = nil
	}
	var draftBytes int64
	if e.Draft != nil {
		draftBytes = e.Draft.WeightBytes()
	}
	plan, st, err := weights.Apply(e.Model, draftBytes, budget, o)
	if err != nil {
		return plan, err
	}
	e.Stream, e.DRAMPlan = st, &plan
	e.budget, e.budgetOpts = budget, o
	return plan, nil
}

// streamStats returns the streamer's counters, or nil without one.
func (e *Engine) streamStats() *weights.Stats {
	if e.Stream == nil {
		return nil
	}
	s := e.Stream.Stats()
	return &s
}
