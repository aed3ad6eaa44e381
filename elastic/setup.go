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

// ForModels builds a governor for a target and its draft: baselines and
// gains from the calibration stored for them on this machine, or without
// one, baselines measured now (a few passes: run it before the foreground
// gets busy) and DefaultGains. note says which, for the user.
func ForModels(ctx context.Context, targetPath, draftPath string, draft *model.Model, p Policy) (g *Governor, note string, err error) {
	if draft == nil || draftPath == "" {
		return nil, "", fmt.Errorf("elastic: policy %v needs a draft model (--draft): its layers are the contention sensor and its drafts the work that can be cut", p)
	}
	c, err := LoadCalibration(targetPath, draftPath)
	if err != nil {
		return nil, "", err
	}
	if c != nil {
		g = New(Config{Policy: p, Baselines: &c.Baselines, BaselineSource: "calibrated", Gains: c.Gains,
			CPUTime: ProcessCPUTime, Threads: draft.Pool.Threads()})
		return g, fmt.Sprintf("elastic %v: calibrated baselines (%d layers × batch %v), gains Kp %.3g Ki %.3g (%s)",
			p, len(c.Baselines.NS), c.Baselines.Rows, c.Gains.Kp, c.Gains.Ki, c.GainsFrom), nil
	}
	b, err := MeasureBaselines(ctx, draft, MeasureOptions{Rows: StartupRows, Passes: 3})
	if err != nil {
		return nil, "", err
	}
	g = New(Config{Policy: p, Baselines: b, BaselineSource: "measured at start-up",
		CPUTime: ProcessCPUTime, Threads: draft.Pool.Threads()})
	return g, fmt.Sprintf("elastic %v: no contention calibration for these models on this machine (shade calibrate --contention): baselines measured at start-up, default gains Kp %.3g Ki %.3g",
		p, DefaultGains.Kp, DefaultGains.Ki), nil
}
