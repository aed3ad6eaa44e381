package elastic

import (
	"context"
	"fmt"

	"shade/model"
)

// StartupRows are the batch sizes measured at start-up without a
// calibration: a draft catch-up pass has accepted+1 rows, an expansion as
// many rows as the tree is wide.
var StartupRows = []int{1, 2, 4, 8, 16}

// StartupPasses is how many passes per batch size the start-up
// measurement of the baselines takes: a few, since the foreground is
// waiting.
const StartupPasses = 3

// Start is what a governor starts from for one target and draft: the
// sensor's quiet-machine baselines and the PI gains, and where they came
// from. Governors made from one Start share its baselines (read-only).
type Start struct {
	Baselines *Baselines
	Gains     Gains
	Source    string // "calibrated" or "measured at start-up"
	threads   int
	calib     *Calibration // nil when measured
}

// StartFor finds the start of governors for a target and its draft: the
// calibration stored for them on this machine, or without one, baselines
// measured now (StartupPasses passes: run it before the foreground gets
// busy) and DefaultGains.
func StartFor(ctx context.Context, targetPath, draftPath string, draft *model.Model) (*Start, error) {
	if draft == nil || draftPath == "" {
		return nil, fmt.Errorf("elastic: a governor needs a draft model: its layers are the contention sensor and its drafts the work that can be cut")
	}
	c, err := LoadCalibration(targetPath, draftPath)
	if err != nil {
		return nil, err
	}
	if c != nil {
		return &Start{Baselines: &c.Baselines, Gains: c.Gains, Source: "calibrated", threads: draft.Pool.Threads(), calib: c}, nil
	}
	b, err := MeasureBaselines(ctx, draft, MeasureOptions{Rows: StartupRows, Passes: StartupPasses})
	if err != nil {
		return nil, err
	}
	return &Start{Baselines: b, Gains: DefaultGains, Source: "measured at start-up", threads: draft.Pool.Threads()}, nil
}

// Governor makes a governor under policy p from the start.
func (s *Start) Governor(p Policy) *Governor {
	return New(Config{Policy: p, Baselines: s.Baselines, BaselineSource: s.Source, Gains: s.Gains,
		CPUTime: ProcessCPUTime, Threads: s.threads})
}

// Note says, for the user, where a governor under policy p made from the
// start has its baselines and gains from.
func (s *Start) Note(p Policy) string {
	if c := s.calib; c != nil {
		return fmt.Sprintf("elastic %v: calibrated baselines (%d layers × batch %v), gains Kp %.3g Ki %.3g (%s)",
			p, len(c.Baselines.NS), c.Baselines.Rows, c.Gains.Kp, c.Gains.Ki, c.GainsFrom)
	}
	return fmt.Sprintf("elastic %v: no contention calibration for these models on this machine (shade calibrate --contention): baselines measured at start-up, default gains Kp %.3g Ki %.3g",
		p, DefaultGains.Kp, DefaultGains.Ki)
}
