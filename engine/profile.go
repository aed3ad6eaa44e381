package engine

import (
	"fmt"
	"io"

	"shade/calib"
	"shade/cost"
	"shade/elastic"
)

// Where a device profile came from (Engine.Profile's source).
const (
	ProfileCalibrated = "calibrated device profile"
	ProfileMeasured   = "device profile measured at start-up"
)

// Profile returns the engine's device profile, resolving it once: the cost
// model `shade calibrate` stored beside the target for this machine (and
// this draft), or, without a usable one, a quick measurement now
// (cost.Quick). It is the one measurement of step costs on this device:
// flash mode prices its trees by it and elastic speculation takes its
// sensor baselines from its draft layers. source says where it came from;
// log, if not nil, is told why a stored profile was not used.
func (e *Engine) Profile(log io.Writer) (p *cost.Model, source string, err error) {
	e.profileMu.Lock()
	defer e.profileMu.Unlock()
	if e.profile != nil {
		return e.profile, e.profileSource, nil
	}
	p, why, err := e.StoredProfile()
	if err != nil {
		return nil, "", err
	}
	source = ProfileCalibrated
	if p == nil {
		if log != nil {
			fmt.Fprintf(log, "device profile: %s: measuring a quick one now\n", why)
		}
		o := cost.Quick()
		o.CPUTime = elastic.ProcessCPUTime
		if p, err = cost.Measure(e.Model, e.Draft, e.Path, o); err != nil {
			return nil, "", fmt.Errorf("engine: measuring the device profile: %w", err)
		}
		if p.DraftModel, err = e.draftKey(); err != nil {
			return nil, "", err
		}
		source = ProfileMeasured
	}
	e.profile, e.profileSource = p, source
	return p, source, nil
}

// StoredProfile loads the device profile stored beside the target if it
// fits the engine's models (and this machine); nil and the reason when
// none does.
func (e *Engine) StoredProfile() (*cost.Model, string, error) {
	if e.Path == "" {
		return nil, "the model was not loaded from a file", nil
	}
	var p cost.Model
	ok, err := calib.Load(e.Path, CalibCost, &p)
	if err != nil {
		return nil, "", err
	}
	if !ok {
		if stale, err := calib.Stale(e.Path, CalibCost); err != nil {
			return nil, "", err
		} else if stale {
			return nil, "the stored one was measured by another build's kernels (run shade calibrate again)", nil
		}
		return nil, "none stored for this machine (shade calibrate)", nil
	}
	if err := p.Validate(); err != nil {
		return nil, "", fmt.Errorf("engine: stored device profile for %s: %w (run shade calibrate again)", e.Path, err)
	}
	if p.Layers != e.Model.Config.Layers {
		return nil, "the stored one is of another model", nil
	}
	if th := e.Model.Pool.Threads(); p.Threads != 0 && p.Threads != th {
		return nil, fmt.Sprintf("the stored one was measured on %d threads, this engine runs %d (shade calibrate --threads %d)", p.Threads, th, th), nil
	}
	if e.Draft != nil {
		key, err := e.draftKey()
		if err != nil {
			return nil, "", err
		}
		switch {
		case len(p.DraftLayers) == 0 || p.Draft(1) == 0:
			return nil, "the stored one was measured without a draft, or by an older shade (run shade calibrate with --draft)", nil
		case len(p.DraftLayers) != e.Draft.Config.Layers || (p.DraftModel != "" && p.DraftModel != key):
			return nil, "the stored one was measured with another draft (run shade calibrate with this --draft)", nil
		}
	}
	return &p, "", nil
}

// draftKey identifies the loaded draft's file ("" without one).
func (e *Engine) draftKey() (string, error) {
	if e.Draft == nil || e.DraftPath == "" {
		return "", nil
	}
	k, err := calib.KeyFor(e.DraftPath)
	return k.Model, err
}
