package elastic

import (
	"fmt"

	"shade/calib"
	"shade/cost"
	"shade/model"
)

// StartupRows are the draft batch sizes the sensor needs covered: a draft
// catch-up pass has accepted+1 rows, an expansion as many rows as the tree
// is wide.
var StartupRows = []int{1, 2, 4, 8, 16}

// Start is what a governor starts from for one target and draft: the
// sensor's quiet-machine baselines and the PI gains, and where they came
// from. Governors made from one Start share its baselines (read-only).
type Start struct {
	Baselines *Baselines
	Gains     Gains
	Source    string // where the baselines came from ("calibrated device profile", …)
	threads   int
	calib     *Calibration // nil: default gains
	stale     bool         // a calibration by another build's kernels is stored
}

// StartFor finds the start of governors for a target and its draft: the
// baselines are the device profile's draft layers (profile, from shade
// calibrate or measured at start-up; source says which), the gains the
// contention calibration stored for the pair on this machine, or
// DefaultGains.
func StartFor(targetPath, draftPath string, draft *model.Model, profile *cost.Model, source string) (*Start, error) {
	if draft == nil || draftPath == "" {
		return nil, fmt.Errorf("elastic: a governor needs a draft model: its layers are the contention sensor and its drafts the work that can be cut")
	}
	b, err := BaselinesFrom(profile)
	if err != nil {
		return nil, err
	}
	if len(b.NS) != draft.Config.Layers {
		return nil, fmt.Errorf("elastic: the device profile has %d draft layers, the draft %d", len(b.NS), draft.Config.Layers)
	}
	c, err := LoadCalibration(targetPath, draftPath)
	if err != nil {
		return nil, err
	}
	st := &Start{Baselines: b, Gains: DefaultGains, Source: source, threads: draft.Pool.Threads()}
	if c != nil {
		st.Gains, st.calib = c.Gains, c
	} else if st.stale, err = calib.Stale(targetPath, CalibKind); err != nil {
		return nil, err
	}
	return st, nil
}

// Governor makes a governor under policy p from the start.
func (s *Start) Governor(p Policy) *Governor {
	return New(Config{Policy: p, Baselines: s.Baselines, BaselineSource: s.Source, Gains: s.Gains,
		CPUTime: ProcessCPUTime, Threads: s.threads})
}

// Note says, for the user, where a governor under policy p made from the
// start has its baselines and gains from.
func (s *Start) Note(p Policy) string {
	base := fmt.Sprintf("baselines from the %s (%d draft layers × batch %v)", s.Source, len(s.Baselines.NS), s.Baselines.Rows)
	if c := s.calib; c != nil {
		return fmt.Sprintf("elastic %v: %s, gains Kp %.3g Ki %.3g (%s)", p, base, c.Gains.Kp, c.Gains.Ki, c.GainsFrom)
	}
	none := "no contention calibration for these models on this machine"
	if s.stale {
		none = "the contention calibration stored was measured by another build's kernels"
	}
	return fmt.Sprintf("elastic %v: %s; %s (shade calibrate --contention): default gains Kp %.3g Ki %.3g",
		p, base, none, DefaultGains.Kp, DefaultGains.Ki)
}
