package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"shade/bench"
	"shade/calib"
	"shade/engine"
	"shade/flash"
	"shade/sample"
	"shade/spec"
)

// The "pruner" calibration: trains Lever's verification-pruning predictor
// from greedy speculative runs (--spec lever, pruning off) over a prompt
// set, stores it beside the target (calib kind "pruner") and reports its
// precision and recall of "survives verification" on held-out steps. The
// same runs give the draft's acceptance profile against the target
// (spec.RankProfile, calib kind "acceptance"), stored too: lever starts
// from it.
func init() {
	var layer, tokens *int
	var recall *float64
	calibrators = append(calibrators, calibrator{
		name:    "pruner",
		summary: "train the verification-pruning predictor of --spec lever and store the pair's acceptance profile (needs --draft)",
		flags: func(fs flagSet) func() error {
			layer = fs.Int("prune-layer", 0, "target layers run before pruning (pruner; 0: 60% of the target's depth)")
			tokens = fs.Int("pruner-tokens", 128, "tokens generated per prompt while collecting training nodes (pruner)")
			recall = fs.Float64("pruner-recall", 0.98, "share of surviving nodes the threshold must keep on the training steps (pruner)")
			return func() error {
				if *layer < 0 || *tokens < 1 || *tokens > 1<<16 || *recall <= 0 || *recall > 1 {
					return fmt.Errorf("--prune-layer must be ≥ 0, --pruner-tokens in [1, 65536], --pruner-recall in (0, 1]")
				}
				return nil
			}
		},
		run: func(ctx context.Context, a *calibrateArgs, stdout, stderr io.Writer) error {
			return calibratePruner(ctx, a, *layer, *tokens, *recall, stdout, stderr)
		},
	})
}

// readPromptLines reads a file of prompts, one per line (blank lines skipped).
func readPromptLines(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" {
			out = append(out, strings.ReplaceAll(line, `\n`, "\n"))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no prompts", path)
	}
	return out, nil
}

func calibratePruner(ctx context.Context, a *calibrateArgs, layer, tokens int, recall float64, stdout, stderr io.Writer) error {
	if a.draft == "" {
		return errors.New("--pruner needs a draft model (--draft FILE): it learns from speculative runs")
	}
	prompts := bench.DefaultPrompts
	if a.prompts != "" {
		var err error
		if prompts, err = readPromptLines(a.prompts); err != nil {
			return err
		}
	}
	e, err := loadEngine(a.model, a.draft, a.threads)
	if err != nil {
		return err
	}
	defer e.Close()
	e.Repack()
	L := e.Model.Config.Layers
	if L < 2 {
		return fmt.Errorf("the target has %d layer: nothing to prune after", L)
	}
	if layer == 0 {
		layer = flash.DefaultPruneLayer(L)
	}
	if layer >= L {
		return fmt.Errorf("--prune-layer %d: the target has %d layers", layer, L)
	}
	ls, err := e.FlashResources(stderr)
	if err != nil {
		return err
	}
	// Trees as large as streaming every layer makes them: the predictor
	// sees the deep and wide branches it will have to judge, and more of them.
	cm := *ls.Cost
	cm.StreamedLayers = L
	var samples []flash.PruneSample
	step := 0
	cfg := spec.Config{Mode: spec.ModeFlash, PruneLayer: layer, Ablation: spec.Ablation{NoPrune: true},
		Deps: spec.Deps{Flash: &flash.Setup{Cost: &cm, Trace: func(s []flash.PruneSample) {
			step++
			for _, x := range s {
				x.Step = step
				samples = append(samples, x)
			}
		}}}}
	for i, p := range prompts {
		fmt.Fprintf(stderr, "calibrate: pruner: prompt %d of %d\n", i+1, len(prompts))
		if _, err := e.Generate(ctx, engine.Request{Prompt: p, MaxTokens: tokens, Sampling: sample.Params{Temp: 0}, IgnoreEOS: true, Spec: cfg},
			func(string) error { return nil }); err != nil {
			return err
		}
	}
	// The same runs taught the drafter how often the target accepts its
	// proposals: stored, lever starts from it instead of from nothing.
	profile, err := e.SaveDraftProfile()
	if err != nil {
		return err
	}
	p, rep, err := flash.TrainPruner(samples, flash.TrainOptions{Layer: layer, Layers: L, Recall: recall})
	if err != nil {
		return fmt.Errorf("%w (from %d steps over %d prompts: more prompts or --pruner-tokens may help)", err, step, len(prompts))
	}
	path, err := calib.Save(modelFile(a.model), engine.CalibPruner, p)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "pruning predictor for %s after layer %d of %d: %d tree nodes from %d steps (%d to train, %d held out)\n",
		a.model, layer, L, len(samples), step, rep.Train, rep.Test)
	fmt.Fprintf(stdout, "held-out steps, \"survives verification\" at threshold %.3f:\n", p.Threshold)
	fmt.Fprintf(stdout, "  precision %.3f  recall %.3f  (base rate %.3f survive)\n", rep.Precision, rep.Recall, rep.Positives)
	fmt.Fprintf(stdout, "  nodes below the threshold %.1f%%; survivors among them %.1f%% of all survivors\n", 100*rep.PrunedShare, 100*rep.PrunedAccepted)
	fmt.Fprintf(stdout, "weights (standardised features: lens share, log share, lens margin, lens top, log draft prob, depth): %.3f, bias %.3f\n", p.Weights, p.Bias)
	fmt.Fprintf(stdout, "saved to %s\n", path)
	pr := e.DraftRanks.Profile()
	first, others := pr.Acceptance()
	fmt.Fprintf(stdout, "acceptance profile of the draft (%.0f verified nodes, first-ranked %.2f accepted, others %.2f) saved to %s\n",
		pr.Nodes(), first, others, profile)
	return nil
}
