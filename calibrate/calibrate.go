// Package calibrate runs the per-device measurements that `shade
// calibrate` stores beside a model (package calib keeps them): the cost
// model of speculative steps, Lever's verification-pruning predictor with
// the draft's acceptance profile, and elastic speculation's contention
// baselines and PI gains. Each procedure takes an opened engine
// (engine.Open), stores what it measured and returns it with the file it
// wrote; the command line only parses flags and prints.
package calibrate

import (
	"fmt"

	"shade/calib"
	"shade/cost"
	"shade/elastic"
	"shade/engine"
)

// CostResult is what Cost measured and where it stored it.
type CostResult struct {
	Model *cost.Model
	Path  string
}

// Cost measures the engine's device profile — every draft layer's and a
// target layer's time per batch size, the LM heads' times, and the model
// file's O_DIRECT read rate — and stores it beside the target (calib.Cost).
// Flash mode prices its trees by it; elastic speculation's sensor takes
// the draft layers as its baselines. Without a draft the draft costs are
// zero. Open the engine with every layer resident: the timings must be
// compute, not reads.
func Cost(e *engine.Engine, o cost.Options) (*CostResult, error) {
	if e.Stream != nil {
		return nil, fmt.Errorf("calibrate: cost: layers are streamed: measure with every layer resident")
	}
	if o.CPUTime == nil {
		o.CPUTime = elastic.ProcessCPUTime // draft layers timed as the sensor reads them
	}
	m, err := cost.Measure(e.Model, e.Draft, e.Path, o)
	if err != nil {
		return nil, err
	}
	if e.Draft != nil && e.DraftPath != "" {
		key, err := calib.KeyFor(e.DraftPath)
		if err != nil {
			return nil, err
		}
		m.DraftModel = key.Model
	}
	path, err := calib.Save(e.Path, calib.Cost, m)
	if err != nil {
		return nil, err
	}
	return &CostResult{Model: m, Path: path}, nil
}

// progress calls f, if set, with a formatted line.
func progress(f func(string), format string, a ...any) {
	if f != nil {
		f(fmt.Sprintf(format, a...))
	}
}
