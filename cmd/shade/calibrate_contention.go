package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync/atomic"
	"time"

	"shade/calib"
	"shade/elastic"
	"shade/engine"
)

// The contention calibration: the sensor's quiet-machine baseline of every
// draft layer at every batch size, and PI gains by Ziegler–Nichols from a
// relay experiment against a real contention source.
func init() {
	var passes, cpu, streamMiB *int
	var relaySec *float64
	calibrators = append(calibrators, calibrator{
		name:    "contention",
		summary: "elastic speculation: draft-layer baselines on a quiet machine and PI gains by Ziegler–Nichols (needs --draft)",
		flags: func(fs flagSet) func() error {
			passes = fs.Int("passes", 30, "with --contention: passes per draft batch size (medians are kept)")
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
			return calibrateContention(ctx, a, *passes, *cpu, *relaySec, *streamMiB, stdout, stderr)
		},
	})
}

func calibrateContention(ctx context.Context, a *calibrateArgs, passes, cpu int, relaySec float64, streamMiB int, stdout, stderr io.Writer) error {
	if a.draft == "" {
		return errors.New("--contention needs the draft model (--draft FILE): its layers are the contention sensor")
	}
	threads := a.threads
	if threads <= 0 {
		threads = 1 // the way shade bench qos runs the LLM: one thread on one core
	}
	e, err := loadEngine(a.model, a.draft, threads)
	if err != nil {
		return err
	}
	defer e.Close()
	e.Repack()
	other := -1
	if cpu >= 0 {
		restore, err := pinProcess(cpu)
		if err != nil {
			return err
		}
		defer restore()
		if runtime.NumCPU() > 1 {
			other = (cpu + 1) % runtime.NumCPU()
		}
	}
	fmt.Fprintf(stderr, "calibrate: draft-layer baselines, %d passes per batch size %v (keep the machine quiet)\n", passes, elastic.StartupRows)
	base, err := elastic.MeasureBaselines(ctx, e.Draft, elastic.MeasureOptions{Rows: elastic.StartupRows, Passes: passes})
	if err != nil {
		return err
	}
	draftKey, err := calib.KeyFor(modelFile(a.draft))
	if err != nil {
		return err
	}
	c := &elastic.Calibration{Draft: draftKey, Baselines: *base, Passes: passes, Pinned: cpu >= 0,
		Gains: elastic.DefaultGains, GainsFrom: "default"}
	switch {
	case relaySec == 0:
		c.GainsFrom = "default (relay experiment skipped)"
	case other < 0:
		c.GainsFrom = "default (no second core for the contention source)"
	default:
		res, err := relayAgainstStreamer(ctx, e, base, other, streamMiB, time.Duration(relaySec*float64(time.Second)), stderr)
		if err != nil {
			fmt.Fprintf(stderr, "calibrate: relay experiment: %v: keeping default gains\n", err)
			c.GainsFrom = "default (relay experiment failed: " + err.Error() + ")"
		} else {
			c.Gains, c.Ku, c.TuSeconds = res.Gains, res.Ku, res.Tu
			c.GainsFrom = "ziegler-nichols relay"
			fmt.Fprintf(stderr, "calibrate: relay: %d readings, CS amplitude %.3f, Ku %.3g, Tu %.1f ms\n",
				res.Readings, res.Amplitude, res.Ku, 1000*res.Tu)
		}
	}
	path, err := elastic.SaveCalibration(modelFile(a.model), c)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "contention calibration of %s with draft %s → %s\n", a.model, a.draft, path)
	fmt.Fprintf(stdout, "baselines (ms) by draft layer × batch %v:\n", base.Rows)
	for l, ns := range base.NS {
		fmt.Fprintf(stdout, "  layer %2d:", l)
		for _, v := range ns {
			fmt.Fprintf(stdout, " %7.3f", v/1e6)
		}
		fmt.Fprintln(stdout)
	}
	fmt.Fprintf(stdout, "PI gains: Kp %.3g, Ki %.3g /s (%s)\n", c.Gains.Kp, c.Gains.Ki, c.GainsFrom)
	return nil
}

// relayAgainstStreamer runs the relay experiment with a memory-streaming
// thread pinned to core other as the contention source.
func relayAgainstStreamer(ctx context.Context, e *engine.Engine, base *elastic.Baselines, other, mib int, d time.Duration, stderr io.Writer) (elastic.RelayResult, error) {
	var on, stop atomic.Bool
	buf := make([]uint64, mib<<20/8)
	for i := range buf {
		buf[i] = uint64(i)
	}
	errc := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		errc <- pinThread(other)
		const chunk = 1 << 17 // 1 MiB of words between checks of the switch
		var acc uint64
		for i := 0; !stop.Load(); {
			if !on.Load() {
				time.Sleep(100 * time.Microsecond)
				continue
			}
			end := min(i+chunk, len(buf))
			for j := i; j < end; j++ {
				acc += buf[j]
				buf[j] = acc
			}
			if i = end; i == len(buf) {
				i = 0
			}
		}
		buf[0] = acc
	}()
	defer func() { stop.Store(true); <-done }()
	if err := <-errc; err != nil {
		return elastic.RelayResult{}, err
	}
	fmt.Fprintf(stderr, "calibrate: relay experiment for %v: a %d MiB memory stream on CPU %d, switched on and off by the draft's contention score\n", d, mib, other)
	return elastic.RunRelay(ctx, elastic.RelayOptions{Draft: e.Draft, Baselines: base, Duration: d, Source: on.Store})
}
