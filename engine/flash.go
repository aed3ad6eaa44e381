package engine

import (
	"fmt"
	"io"

	"shade/calib"
	"shade/cost"
	"shade/flash"
	"shade/speculate"
)

// Calibration kinds the engine reads from beside the target model.
const (
	CalibCost   = "cost"
	CalibPruner = "pruner"
	// CalibAcceptance is the draft's acceptance profile against the
	// target (speculate.RankProfile), stored by shade calibrate --pruner.
	CalibAcceptance = "acceptance"
)

// loadDraftProfile starts DraftRanks from the acceptance profile stored
// beside the target for this draft, if there is one, and says what it did.
// A profile that cannot be read or used is not an error: drafting then
// learns from nothing, as without one.
func (e *Engine) loadDraftProfile() string {
	if e.Path == "" || e.DraftPath == "" {
		return "none"
	}
	var p speculate.RankProfile
	ok, err := calib.Load(e.Path, CalibAcceptance, &p)
	switch {
	case err != nil:
		return fmt.Sprintf("not used: %v", err)
	case !ok:
		return "none stored (shade calibrate --pruner)"
	}
	key, err := calib.KeyFor(e.DraftPath)
	if err != nil {
		return fmt.Sprintf("not used: %v", err)
	}
	if p.Draft != key.Model {
		return "none stored for this draft (shade calibrate --pruner)"
	}
	if err := e.DraftRanks.SetProfile(p); err != nil {
		return fmt.Sprintf("stored one refused: %v", err)
	}
	return fmt.Sprintf("stored (%.0f verified nodes)", p.Nodes())
}

// SaveDraftProfile stores what drafting has learned of the draft's
// acceptance beside the target, for later engines of this pair to start
// from; it returns the file written.
func (e *Engine) SaveDraftProfile() (string, error) {
	if e.Draft == nil || e.DraftPath == "" || e.Path == "" {
		return "", fmt.Errorf("engine: no draft loaded from a file")
	}
	key, err := calib.KeyFor(e.DraftPath)
	if err != nil {
		return "", err
	}
	p := e.DraftRanks.Profile()
	p.Draft = key.Model
	return calib.Save(e.Path, CalibAcceptance, p)
}

// FlashResources are what flash mode (package flash) needs from
// calibration, resolved once per engine: the cost model (the device
// profile, Engine.Profile) and the pruning predictor (stored, or none).
type FlashResources struct {
	Cost       *cost.Model
	CostSource string // where the device profile came from (Engine.Profile)
	Pruner     *flash.Pruner
	PrunerNote string // why there is none, or where it came from
}

// FlashResources resolves (once) and returns what the engine's flash mode
// runs with. log, if not nil, is told what was loaded or measured.
func (e *Engine) FlashResources(log io.Writer) (*FlashResources, error) {
	e.flashMu.Lock()
	defer e.flashMu.Unlock()
	if e.flash != nil {
		return e.flash, nil
	}
	p, source, err := e.Profile(log)
	if err != nil {
		return nil, err
	}
	c := *p // flash mode sets what streams on its copy
	ls := &FlashResources{Cost: &c, CostSource: source}
	ls.PrunerNote = "none stored (shade calibrate --pruner)"
	if e.Path != "" {
		var p flash.Pruner
		ok, err := calib.Load(e.Path, CalibPruner, &p)
		if err != nil {
			return nil, err
		}
		if ok {
			if err := p.Validate(e.Model.Config.Layers); err != nil {
				ls.PrunerNote = fmt.Sprintf("stored one refused: %v", err)
			} else {
				ls.Pruner, ls.PrunerNote = &p, fmt.Sprintf("stored (layer %d, %d training nodes)", p.Layer, p.Samples)
			}
		}
	}
	if log != nil {
		fmt.Fprintf(log, "flash: cost model from the %s (measured in %v); pruning predictor: %s; acceptance profile: %s\n", ls.CostSource, ls.Cost.Took.Round(1e6), ls.PrunerNote, e.DraftProfileNote)
	}
	e.flash = ls
	return ls, nil
}

// applyFlash gives a flash-mode config its strategy's setup: the request's
// own (a *flash.Setup in Deps.Flash) with what it leaves unset filled from
// the engine's resources, the cost model told what streams now, and the
// cost estimator of cfg's estimates. It runs after the estimates are set.
func (e *Engine) applyFlash(cfg *speculate.Config) error {
	if cfg.Mode != speculate.ModeFlash {
		return nil
	}
	ls, err := e.FlashResources(nil)
	if err != nil {
		return err
	}
	var su flash.Setup
	if own, ok := cfg.Deps.Flash.(*flash.Setup); ok && own != nil {
		su = *own
	} else if cfg.Deps.Flash != nil {
		return nil // a strategy of the caller's own making
	}
	if su.Cost == nil {
		c := *ls.Cost
		e.streamedCost(&c)
		su.Cost = &c
	}
	if su.Pruner == nil && !cfg.Ablation.NoPrune {
		su.Pruner = ls.Pruner
	}
	// What flash mode learns of the machine goes into the estimator auto
	// mode uses too, shared by the engine's requests for this pair.
	if su.Estimator == nil && cfg.Deps.Estimates != nil {
		su.Estimator = cfg.Deps.Estimates.Costs()
	}
	cfg.Deps.Flash = &su
	return nil
}

// streamedCost tells a cost model which target layers stream under the
// engine's DRAM budget now, and the streamer's own read rate once it has
// read enough to measure it.
func (e *Engine) streamedCost(c *cost.Model) {
	c.StreamedLayers, c.Streamed, c.StreamBps, c.PrereadLayers = 0, nil, 0, 0
	if e.DRAMPlan == nil || len(e.DRAMPlan.Streamed) == 0 {
		return
	}
	c.StreamedLayers = len(e.DRAMPlan.Streamed)
	if e.Stream != nil {
		c.PrereadLayers = e.Stream.PrereadLayers()
	}
	c.Streamed = make([]bool, c.Layers)
	for _, l := range e.DRAMPlan.Streamed {
		if l >= 0 && l < c.Layers {
			c.Streamed[l] = true
		}
	}
	if e.Stream != nil {
		if st := e.Stream.Stats(); st.BytesRead >= 256<<20 && st.ReadGBps > 0 {
			c.StreamBps = st.ReadGBps * 1e9
		}
	}
}
