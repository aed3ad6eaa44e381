package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"shade/calib"
	"shade/cost"
	"shade/engine"
	"shade/model"
)

// The "cost" calibration: the device's cost model for Lever mode — draft
// pass and target layer time per batch size, LM head time, and the model
// file's O_DIRECT read rate — stored beside the target (calib kind "cost").
// Without it, an engine running --spec lever measures a quicker one at
// start-up.
func init() {
	var batches *string
	var layers, reps *int
	calibrators = append(calibrators, calibrator{
		name:    "cost",
		summary: "measure the cost model of speculative steps (the default)",
		flags: func(fs flagSet) func() error {
			batches = fs.String("batches", "1,2,4,8,16,32,64", "batch sizes to time (cost)")
			layers = fs.Int("cost-layers", 4, "target layers timed per pass (cost; a few representative ones)")
			reps = fs.Int("reps", 3, "repetitions of each timing, the fastest kept (cost)")
			return func() error {
				if *layers < 1 || *layers > 4096 || *reps < 1 || *reps > 100 {
					return fmt.Errorf("--cost-layers must be in [1, 4096] and --reps in [1, 100]")
				}
				_, err := parseBatches(*batches)
				return err
			}
		},
		run: func(ctx context.Context, a *calibrateArgs, stdout, stderr io.Writer) error {
			bs, _ := parseBatches(*batches)
			return calibrateCost(a, cost.Options{Batches: bs, Layers: *layers, Reps: *reps,
				Progress: func(what string) { fmt.Fprintf(stderr, "calibrate: %s\n", what) }}, stdout)
		},
	})
}

// parseBatches reads a comma-separated list of batch sizes in [1, 512].
func parseBatches(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		b, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || b < 1 || b > 512 {
			return nil, fmt.Errorf("--batches: %q is not a batch size in [1, 512]", f)
		}
		out = append(out, b)
	}
	return out, nil
}

func calibrateCost(a *calibrateArgs, o cost.Options, stdout io.Writer) error {
	target, err := model.Open(modelFile(a.model), a.threads)
	if err != nil {
		return err
	}
	defer target.Close()
	var draft *model.Model
	if a.draft != "" {
		if draft, err = model.Open(modelFile(a.draft), 1); err != nil {
			return err
		}
		draft.Pool.Close()
		draft.Pool = target.Pool // like the engine: the draft shares the target's workers
		defer draft.File.Close()
	}
	m, err := cost.Measure(target, draft, modelFile(a.model), o)
	if err != nil {
		return err
	}
	path, err := calib.Save(modelFile(a.model), engine.CalibCost, m)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "cost model of %s", a.model)
	if a.draft != "" {
		fmt.Fprintf(stdout, " with draft %s", a.draft)
	}
	fmt.Fprintf(stdout, " (measured in %v)\n%s\nsaved to %s\n", m.Took.Round(1e6), m.Summary(), path)
	if a.draft == "" {
		fmt.Fprintln(stdout, "no --draft: draft costs are zero; --spec lever will measure them at start-up")
	}
	return nil
}
