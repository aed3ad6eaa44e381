package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"shade/bench"
	"shade/calibrate"
	"shade/cost"
	"shade/engine"
	"shade/speculate"
)

// calibrateArgs are the flags every calibration shares.
type calibrateArgs struct {
	model   string
	draft   string
	threads int
	prompts string // a prompt file ("": built-in prompts)
}

// calibration is one kind of per-device measurement `shade calibrate`
// makes (package calibrate) and stores beside the model (package calib):
// its flags, and how to run it and print what it found.
type calibration struct {
	name    string // selected by --NAME; "cost" is what runs without one
	summary string
	// flags adds the calibration's own flags and returns their check.
	flags func(fs flagSet) func() error
	run   func(ctx context.Context, a *calibrateArgs, stdout, stderr io.Writer) error
}

// flagSet is the part of flag.FlagSet calibrations use.
type flagSet interface {
	String(name, value, usage string) *string
	Int(name string, value int, usage string) *int
	Float64(name string, value float64, usage string) *float64
	Bool(name string, value bool, usage string) *bool
}

// calibrations are every calibration the command runs, in the order it
// runs them.
var calibrations = []calibration{costCalibration(), prunerCalibration(), contentionCalibration()}

func cmdCalibrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var kinds []string
	for _, c := range calibrations {
		if c.name != "cost" { // the default, without a flag
			kinds = append(kinds, c.name)
		}
	}
	fs := newFlagSet("calibrate", "calibrate -m MODEL.gguf [--draft DRAFT.gguf] [--"+strings.Join(kinds, " | --")+"] [flags]\n       (without a --KIND flag: the device profile)", stderr)
	a := &calibrateArgs{}
	fs.StringVar(&a.model, "m", "", "target model `file`")
	fs.StringVar(&a.draft, "draft", "", "draft model `file`")
	fs.IntVar(&a.threads, "threads", 0, "worker threads (0: every CPU)")
	fs.StringVar(&a.prompts, "prompts", "", "prompt `file`, "+bench.PromptFormat+" (default: built-in prompts)")
	selected := make([]*bool, len(calibrations))
	checks := make([]func() error, len(calibrations))
	for i, c := range calibrations {
		if c.name != "cost" {
			selected[i] = fs.Bool(c.name, false, c.summary)
		}
		if c.flags != nil {
			checks[i] = c.flags(fs)
		}
	}
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if err := needModelOnly(fs, pos, a.model); err != nil {
		return err
	}
	var run []calibration
	for i, c := range calibrations {
		if selected[i] != nil && *selected[i] {
			run = append(run, c)
		}
	}
	if len(run) == 0 {
		run = append(run, calibrations[0]) // cost
	}
	for _, check := range checks {
		if check != nil {
			if err := check(); err != nil {
				return err
			}
		}
	}
	for _, c := range run {
		if err := c.run(ctx, a, stdout, stderr); err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
	}
	return nil
}

// calibrateProgress prints a calibration's progress on stderr.
func calibrateProgress(stderr io.Writer) func(string) {
	return func(s string) { fmt.Fprintf(stderr, "calibrate: %s\n", s) }
}

// The "cost" calibration: the device profile (cost.Model), stored beside
// the target: flash mode prices its trees by it, elastic speculation's
// sensor takes its draft layers as baselines. Without one that fits, an
// engine that needs it measures a quicker one at start-up.
func costCalibration() calibration {
	var batches *string
	var layers, reps *int
	return calibration{
		name:    "cost",
		summary: "measure the device profile: draft layers, target layer and heads per batch size, storage reads (the default)",
		flags: func(fs flagSet) func() error {
			batches = fs.String("batches", "1,2,4,8,16,32,64", "batch sizes to time (cost)")
			layers = fs.Int("cost-layers", 4, "target layers timed per pass (cost; a few representative ones)")
			reps = fs.Int("reps", 3, "repetitions of each target timing, the fastest kept; the draft layers take reps+1 passes (at least 3), medians kept (cost)")
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
			// Panels are built by the measurement, which times them in place.
			e, err := openEngine(ctx, a.model, engine.Options{Threads: a.threads, Draft: a.draft, NoRepack: true}, stderr)
			if err != nil {
				return err
			}
			defer e.Close()
			r, err := calibrate.Cost(e, cost.Options{Batches: bs, Layers: *layers, Reps: *reps, Progress: calibrateProgress(stderr)})
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "device profile of %s", a.model)
			if a.draft != "" {
				fmt.Fprintf(stdout, " with draft %s", a.draft)
			}
			fmt.Fprintf(stdout, " (measured in %v)\n%s\nsaved to %s\n", r.Model.Took.Round(1e6), r.Model.Summary(), r.Path)
			if a.draft == "" {
				fmt.Fprintln(stdout, "no --draft: draft costs are zero (a run with a draft measures its own profile at start-up)")
			}
			return nil
		},
	}
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

// The "pruner" calibration: Lever's verification-pruning predictor and the
// pair's acceptance profile (calibrate.Pruner).
func prunerCalibration() calibration {
	var layer, tokens *int
	var recall *float64
	return calibration{
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
			if a.draft == "" {
				return errors.New("--pruner needs a draft model (--draft FILE): it learns from speculative runs")
			}
			var ps []string
			if a.prompts != "" {
				var err error
				if ps, err = bench.ReadPrompts(a.prompts); err != nil {
					return err
				}
			}
			e, err := openEngine(ctx, a.model, engine.Options{Threads: a.threads, Draft: a.draft, Spec: speculate.ModeFlash}, stderr)
			if err != nil {
				return err
			}
			defer e.Close()
			r, err := calibrate.Pruner(ctx, e, calibrate.PrunerOptions{Layer: *layer, Tokens: *tokens, Recall: *recall, Prompts: ps,
				Progress: calibrateProgress(stderr)})
			if err != nil {
				return err
			}
			p, rep := r.Pruner, r.Report
			fmt.Fprintf(stdout, "pruning predictor for %s after layer %d of %d: %d tree nodes from %d steps (%d to train, %d held out)\n",
				a.model, r.Layer, r.Layers, r.Nodes, r.Steps, rep.Train, rep.Test)
			fmt.Fprintf(stdout, "held-out steps, \"survives verification\" at threshold %.3f:\n", p.Threshold)
			fmt.Fprintf(stdout, "  precision %.3f  recall %.3f  (base rate %.3f survive)\n", rep.Precision, rep.Recall, rep.Positives)
			fmt.Fprintf(stdout, "  nodes below the threshold %.1f%%; survivors among them %.1f%% of all survivors\n", 100*rep.PrunedShare, 100*rep.PrunedAccepted)
			fmt.Fprintf(stdout, "weights (standardised features: lens share, log share, lens margin, lens top, log draft prob, depth): %.3f, bias %.3f\n", p.Weights, p.Bias)
			fmt.Fprintf(stdout, "saved to %s\n", r.Path)
			first, others := r.Profile.Acceptance()
			fmt.Fprintf(stdout, "acceptance profile of the draft (%.0f verified nodes, first-ranked %.2f accepted, others %.2f) saved to %s\n",
				r.Profile.Nodes(), first, others, r.ProfilePath)
			return nil
		},
	}
}

// The "contention" calibration: elastic speculation's PI gains; its
// sensor baselines are the device profile's draft layers, measured first
// when none is stored (calibrate.Contention).
func contentionCalibration() calibration {
	var passes, cpu, streamMiB *int
	var relaySec *float64
	return calibration{
		name:    "contention",
		summary: "elastic speculation: PI gains by Ziegler–Nichols against the device profile's draft-layer baselines, measuring the profile first if none is stored (needs --draft)",
		flags: func(fs flagSet) func() error {
			passes = fs.Int("passes", 30, "with --contention: passes per draft batch size when the device profile is measured (medians are kept)")
			cpu = fs.Int("cpu", 0, "with --contention: the core the LLM is pinned to (the contention source runs on another; -1: no pinning)")
			relaySec = fs.Float64("relay-seconds", 8, "with --contention: length of the relay experiment (0: skip it, keep default gains)")
			streamMiB = fs.Int("stream-mib", 512, "with --contention: buffer the contention source streams over, in MiB")
			return func() error {
				if *passes < 1 || *passes > 10000 || *relaySec < 0 || *relaySec > 600 || *streamMiB < 16 || *streamMiB > 16384 {
					return errors.New("--passes must be in [1, 10000], --relay-seconds in [0, 600], --stream-mib in [16, 16384]")
				}
				return nil
			}
		},
		run: func(ctx context.Context, a *calibrateArgs, stdout, stderr io.Writer) error {
			if a.draft == "" {
				return errors.New("--contention needs the draft model (--draft FILE): its layers are the contention sensor")
			}
			// The threads of the runs the gains are for: a device profile
			// measured here (when none is stored) serves them too.
			e, err := openEngine(ctx, a.model, engine.Options{Threads: a.threads, Draft: a.draft}, stderr)
			if err != nil {
				return err
			}
			defer e.Close()
			r, err := calibrate.Contention(ctx, e, calibrate.ContentionOptions{Passes: *passes, CPU: *cpu,
				Relay: time.Duration(*relaySec * float64(time.Second)), StreamBytes: int64(*streamMiB) << 20, Progress: calibrateProgress(stderr)})
			if err != nil {
				return err
			}
			c := r.Calibration
			if rr := r.Relay; rr != nil {
				fmt.Fprintf(stderr, "calibrate: relay: %d readings, CS amplitude %.3f, Ku %.3g, Tu %.1f ms\n", rr.Readings, rr.Amplitude, rr.Ku, 1000*rr.Tu)
			}
			fmt.Fprintf(stdout, "contention calibration of %s with draft %s → %s\n", a.model, a.draft, r.Path)
			if r.ProfilePath != "" {
				fmt.Fprintf(stdout, "device profile (none was stored) → %s\n", r.ProfilePath)
			}
			fmt.Fprintf(stdout, "sensor baselines, the device profile's draft layers (ms) by layer × batch %v:\n", r.Profile.Batches)
			for l, secs := range r.Profile.DraftLayers {
				fmt.Fprintf(stdout, "  layer %2d:", l)
				for _, v := range secs {
					fmt.Fprintf(stdout, " %7.3f", v*1e3)
				}
				fmt.Fprintln(stdout)
			}
			fmt.Fprintf(stdout, "PI gains: Kp %.3g, Ki %.3g /s (%s)\n", c.Gains.Kp, c.Gains.Ki, c.GainsFrom)
			return nil
		},
	}
}
