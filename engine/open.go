package engine

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strings"

	"shade/elastic"
	"shade/panelcache"
	"shade/speculate"
	"shade/weights"
)

// Options configure Open: everything about an engine that is decided once,
// before its first request. The zero value opens the target alone, every
// layer resident, with no elastic governor.
type Options struct {
	// Threads is the number of worker threads (≤ 0: one per CPU).
	Threads int
	// Draft is a draft model file for speculative decoding ("": none).
	Draft string
	// Spec is the speculative mode the engine's requests will use. Open
	// checks that a mode needing a draft has one, and resolves what the
	// mode needs from calibration (Lever's cost model and predictor) while
	// every layer is still resident, so that a cost model measured then
	// times compute, not reads.
	Spec speculate.Mode
	// Ctx is the context size requests will use (≤ 0: the model's, at most
	// DefaultCtx); Open checks that its KV caches fit (CheckContext).
	Ctx int
	// DRAMBudget keeps at most this much of the weights in DRAM: a
	// percentage of the target's weight bytes ("40%") or a size ("2GiB",
	// "512MiB", "1.5GB", bytes). The draft, the target's embedding, head
	// and norms and as many target layers as fit stay resident; the others
	// are streamed from the model file for every forward pass (see
	// SetDRAMBudget). "" keeps everything resident.
	DRAMBudget string
	// Stream configures the streaming of the layers over the budget. Its
	// zero value reads each layer only when a pass needs it;
	// weights.DefaultOptions() reads ahead, as the command line does.
	Stream weights.Options
	// Policy is the elastic-speculation policy: anything but Off builds
	// Governor, which yields memory bandwidth to the foreground by pacing
	// speculation. It needs a draft model (its layers are the contention
	// sensor) and a speculative mode that drafts with it.
	Policy elastic.Policy
	// Switchable builds Governor even under Policy Off, whenever the
	// engine drafts with a model, so that its policy can be switched on
	// at run time (Governor.SetPolicy; the server's policy endpoint). It
	// then has the balanced policy's baselines and starts off.
	Switchable bool
	// Panels says where the row panels of both models live (nil:
	// model.DefaultPanels).
	Panels *panelcache.Options
	// NoRepack leaves the row panels to be built by the first forward
	// pass instead of by Open.
	NoRepack bool
	// Note, if set, is told what the set-up did, one line at a time: which
	// calibration Lever uses, what stays resident and what streams, where
	// the governor's baselines come from, and warnings ("warning: …").
	Note func(line string)
}

// Check validates the options without loading anything, so that a mistake
// is reported before minutes of loading.
func (o *Options) Check() error {
	if needsDraft(o.Spec) && o.Draft == "" {
		return fmt.Errorf("engine: speculative mode %v needs a draft model", o.Spec)
	}
	if o.Policy != elastic.Off && (o.Draft == "" || !draftsWithModel(o.Spec)) {
		return fmt.Errorf("engine: policy %v needs speculation with a draft model: its layers are the contention sensor", o.Policy)
	}
	if o.DRAMBudget != "" {
		// Any total will do to check the syntax: percentages scale it.
		if _, err := weights.ParseBudget(o.DRAMBudget, math.MaxInt32); err != nil {
			return err
		}
	}
	if o.Stream.ReadAhead < 0 || o.Stream.ReadAhead > 64 {
		return fmt.Errorf("engine: read-ahead %d outside [0, 64]", o.Stream.ReadAhead)
	}
	if o.Ctx < 0 {
		return fmt.Errorf("engine: context size %d is negative (0: the model's)", o.Ctx)
	}
	return nil
}

// needsDraft says whether a mode cannot run without a draft model.
func needsDraft(m speculate.Mode) bool {
	return m == speculate.ModeChain || m == speculate.ModeTree || m == speculate.ModeFlash
}

// draftsWithModel says whether a mode runs the draft model when there is
// one: the governor's sensor reads its layers.
func draftsWithModel(m speculate.Mode) bool {
	return m != speculate.ModeOff && m != speculate.ModeNgram
}

// Open loads a model and sets an engine up for its requests, in the one
// order that works: the draft (its bytes count against the DRAM budget),
// Lever's calibration (timed while every layer is resident), the DRAM
// budget, the elastic governor (its baselines measured on the quiet
// draft), and last the row panels of what stays resident (a layer
// repacked and then streamed would only have cost time). ctx bounds the
// measurements Open may make.
func Open(ctx context.Context, path string, o Options) (*Engine, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	note := o.Note
	if note == nil {
		note = func(string) {}
	}
	e, err := Load(path, o.Threads)
	if err != nil {
		return nil, err
	}
	if err := e.setUp(ctx, o, note); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

func (e *Engine) setUp(ctx context.Context, o Options, note func(string)) error {
	if o.Panels != nil {
		p := *o.Panels
		e.Panels = &p
		e.Model.Panels = e.Panels
	}
	if o.Draft != "" {
		if err := e.LoadDraft(o.Draft); err != nil {
			return err
		}
	}
	if err := e.CheckContext(o.Ctx); err != nil {
		return err
	}
	if o.Spec == speculate.ModeFlash {
		var log bytes.Buffer
		_, err := e.FlashResources(&log)
		for _, l := range strings.Split(strings.TrimSpace(log.String()), "\n") {
			if l != "" {
				note(l)
			}
		}
		if err != nil {
			return err
		}
	}
	if o.DRAMBudget != "" {
		n, err := weights.ParseBudget(o.DRAMBudget, e.Model.WeightBytes())
		if err != nil {
			return err
		}
		so := o.Stream
		if so.Warn == nil {
			so.Warn = func(s string) { note("warning: " + s) }
		}
		plan, err := e.SetDRAMBudget(n, so)
		if err != nil {
			return err
		}
		note(plan.String())
		if w := plan.Warning(); w != "" {
			note("warning: " + w)
		}
	}
	if e.Draft != nil && draftsWithModel(o.Spec) && (o.Policy != elastic.Off || o.Switchable) {
		st, err := e.ElasticStart(ctx)
		if err != nil {
			return err
		}
		p := o.Policy
		if p == elastic.Off {
			p = elastic.Balanced // the flavour a switch to "on" gets
		}
		e.Governor = st.Governor(p)
		note(st.Note(p))
		if o.Policy == elastic.Off {
			e.Governor.SetPolicy(elastic.Off)
		}
	}
	if !o.NoRepack {
		e.Repack()
	}
	return nil
}

// ElasticStart returns (finding or measuring it once per engine and
// draft) what elastic governors of this engine start from: the contention
// calibration stored for its models, or baselines of its draft's layers
// measured now. Measure before the foreground gets busy.
func (e *Engine) ElasticStart(ctx context.Context) (*elastic.Start, error) {
	e.elasticMu.Lock()
	defer e.elasticMu.Unlock()
	if e.elasticStart != nil {
		return e.elasticStart, nil
	}
	if e.Draft == nil {
		return nil, fmt.Errorf("engine: elastic speculation needs a draft model: its layers are the contention sensor")
	}
	p, source, err := e.Profile(nil)
	if err != nil {
		return nil, err
	}
	st, err := elastic.StartFor(e.Path, e.DraftPath, e.Draft, p, source)
	if err != nil {
		return nil, err
	}
	e.elasticStart = st
	return st, nil
}

// Governed returns cfg run under the engine's elastic governor, if it has
// one (and cfg no governor of its own).
func (e *Engine) Governed(cfg speculate.Config) speculate.Config {
	if cfg.Deps.Governor == nil && e.Governor != nil {
		cfg.Deps.Governor = e.Governor
	}
	return cfg
}
