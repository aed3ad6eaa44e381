package calibrate

import (
	"context"
	"errors"
	"fmt"

	"shade/bench"
	"shade/calib"
	"shade/engine"
	"shade/flash"
	"shade/sample"
	"shade/speculate"
)

// PrunerOptions configure Pruner.
type PrunerOptions struct {
	Layer    int      // target layers run before pruning (0: flash.DefaultPruneLayer)
	Tokens   int      // generated per prompt while collecting nodes (default 128)
	Recall   float64  // share of surviving nodes the threshold must keep (default 0.98)
	Prompts  []string // default: bench.DefaultPrompts
	Progress func(string)
}

// PrunerResult is what Pruner trained and stored.
type PrunerResult struct {
	Pruner  *flash.Pruner
	Report  flash.PruneReport
	Layer   int // the layer pruning runs after
	Layers  int // the target's layers
	Nodes   int // tree nodes collected
	Steps   int // speculative steps they came from
	Prompts int
	Path    string // where the predictor is stored
	// Profile is the draft's acceptance profile learned by the same runs,
	// stored at ProfilePath.
	Profile     speculate.RankProfile
	ProfilePath string
}

// Pruner trains Lever's verification-pruning predictor from greedy
// speculative runs (Lever mode, pruning off) over a prompt set and stores
// it beside the target (calib.Pruner), with its precision and recall of
// "survives verification" on held-out steps. The same runs teach the
// drafter how often the target accepts the draft's proposals: that
// acceptance profile is stored too (calib.Acceptance), and lever starts
// from it instead of from nothing. The engine needs a draft.
func Pruner(ctx context.Context, e *engine.Engine, o PrunerOptions) (*PrunerResult, error) {
	if e.Draft == nil {
		return nil, errors.New("calibrate: the pruner needs a draft model: it learns from speculative runs")
	}
	if o.Tokens <= 0 {
		o.Tokens = 128
	}
	if o.Recall == 0 {
		o.Recall = 0.98
	}
	if o.Layer < 0 || o.Tokens > 1<<16 || o.Recall < 0 || o.Recall > 1 {
		return nil, fmt.Errorf("calibrate: pruner layer %d, %d tokens, recall %v: want a layer ≥ 0, tokens in [1, 65536], recall in (0, 1]", o.Layer, o.Tokens, o.Recall)
	}
	prompts := o.Prompts
	if len(prompts) == 0 {
		prompts = bench.DefaultPrompts
	}
	L := e.Model.Config.Layers
	if L < 2 {
		return nil, fmt.Errorf("calibrate: the target has %d layer: nothing to prune after", L)
	}
	layer := o.Layer
	if layer == 0 {
		layer = flash.DefaultPruneLayer(L)
	}
	if layer >= L {
		return nil, fmt.Errorf("calibrate: prune layer %d: the target has %d layers", layer, L)
	}
	ls, err := e.FlashResources(nil)
	if err != nil {
		return nil, err
	}
	// Trees as large as streaming every layer makes them: the predictor
	// sees the deep and wide branches it will have to judge, and more of them.
	cm := *ls.Cost
	cm.StreamedLayers = L
	var samples []flash.PruneSample
	step := 0
	cfg := speculate.Config{Mode: speculate.ModeFlash, PruneLayer: layer, Ablation: speculate.Ablation{NoPrune: true},
		Deps: speculate.Deps{Flash: &flash.Setup{Cost: &cm, Trace: func(s []flash.PruneSample) {
			step++
			for _, x := range s {
				x.Step = step
				samples = append(samples, x)
			}
		}}}}
	for i, p := range prompts {
		progress(o.Progress, "pruner: prompt %d of %d", i+1, len(prompts))
		if _, err := e.Generate(ctx, engine.Request{Prompt: p, MaxTokens: o.Tokens, Sampling: sample.Params{Temp: 0}, IgnoreEOS: true, Spec: cfg},
			func(string) error { return nil }); err != nil {
			return nil, err
		}
	}
	r := &PrunerResult{Layer: layer, Layers: L, Nodes: len(samples), Steps: step, Prompts: len(prompts)}
	if r.ProfilePath, err = e.SaveDraftProfile(); err != nil {
		return nil, err
	}
	r.Profile = e.DraftRanks.Profile()
	p, rep, err := flash.TrainPruner(samples, flash.TrainOptions{Layer: layer, Layers: L, Recall: o.Recall})
	if err != nil {
		return nil, fmt.Errorf("%w (from %d steps over %d prompts: more prompts or tokens per prompt may help)", err, step, len(prompts))
	}
	r.Pruner, r.Report = p, rep
	if r.Path, err = calib.Save(e.Path, calib.Pruner, p); err != nil {
		return nil, err
	}
	return r, nil
}
