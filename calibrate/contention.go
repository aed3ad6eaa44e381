package calibrate

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"shade/calib"
	"shade/elastic"
	"shade/engine"
	"shade/qos"
)

// ContentionOptions configure Contention.
type ContentionOptions struct {
	Passes int // passes per draft batch size, medians kept (default 30)
	// CPU is the core the LLM is pinned to during the measurement; the
	// contention source runs on the next one. < 0: no pinning (and no
	// relay experiment, which needs the second core).
	CPU int
	// Relay is the length of the relay experiment (0: skip it and keep
	// elastic.DefaultGains).
	Relay time.Duration
	// StreamBytes is the buffer the contention source streams over
	// (default 512 MiB).
	StreamBytes int64
	Progress    func(string)
}

// ContentionResult is what Contention stored.
type ContentionResult struct {
	Calibration *elastic.Calibration
	Path        string
	// Relay is the relay experiment's outcome (nil when it did not run
	// or failed: Calibration.GainsFrom says which).
	Relay *elastic.RelayResult
}

// Contention calibrates elastic speculation for the engine's target and
// draft on this machine: the sensor's quiet-machine baseline of every
// draft layer at every batch size (elastic.StartupRows), and PI gains by
// Ziegler–Nichols from a relay experiment against a real contention source
// (a thread streaming over memory on another core, switched on and off by
// the draft's contention score). It stores them beside the target
// (calib.Contention). Keep the machine quiet while it runs.
func Contention(ctx context.Context, e *engine.Engine, o ContentionOptions) (*ContentionResult, error) {
	if e.Draft == nil {
		return nil, errors.New("calibrate: contention needs the draft model: its layers are the contention sensor")
	}
	if o.Passes == 0 {
		o.Passes = 30
	}
	if o.StreamBytes == 0 {
		o.StreamBytes = 512 << 20
	}
	if o.Passes < 1 || o.Passes > 10000 || o.Relay < 0 || o.Relay > 10*time.Minute || o.StreamBytes < 16<<20 || o.StreamBytes > 16<<30 {
		return nil, fmt.Errorf("calibrate: contention: %d passes, relay %v, stream %d bytes: want passes in [1, 10000], a relay of at most 10 min, a stream of 16 MiB to 16 GiB", o.Passes, o.Relay, o.StreamBytes)
	}
	other := -1
	if o.CPU >= 0 {
		restore, err := qos.PinProcessTemporarily(o.CPU)
		if err != nil {
			return nil, err
		}
		defer restore()
		if runtime.NumCPU() > 1 {
			other = (o.CPU + 1) % runtime.NumCPU()
		}
	}
	progress(o.Progress, "draft-layer baselines, %d passes per batch size %v (keep the machine quiet)", o.Passes, elastic.StartupRows)
	base, err := elastic.MeasureBaselines(ctx, e.Draft, elastic.MeasureOptions{Rows: elastic.StartupRows, Passes: o.Passes})
	if err != nil {
		return nil, err
	}
	draftKey, err := calib.KeyFor(e.DraftPath)
	if err != nil {
		return nil, err
	}
	c := &elastic.Calibration{Draft: draftKey, Baselines: *base, Passes: o.Passes, Pinned: o.CPU >= 0,
		Gains: elastic.DefaultGains, GainsFrom: "default"}
	r := &ContentionResult{Calibration: c}
	switch {
	case o.Relay == 0:
		c.GainsFrom = "default (relay experiment skipped)"
	case other < 0:
		c.GainsFrom = "default (no second core for the contention source)"
	default:
		res, err := relayAgainstStreamer(ctx, e, base, other, o.StreamBytes, o.Relay, o.Progress)
		if err != nil {
			progress(o.Progress, "relay experiment: %v: keeping default gains", err)
			c.GainsFrom = "default (relay experiment failed: " + err.Error() + ")"
		} else {
			c.Gains, c.Ku, c.TuSeconds = res.Gains, res.Ku, res.Tu
			c.GainsFrom = "ziegler-nichols relay"
			r.Relay = &res
		}
	}
	if r.Path, err = elastic.SaveCalibration(e.Path, c); err != nil {
		return nil, err
	}
	return r, nil
}

// relayAgainstStreamer runs the relay experiment with a memory-streaming
// thread pinned to core other as the contention source.
func relayAgainstStreamer(ctx context.Context, e *engine.Engine, base *elastic.Baselines, other int, size int64, d time.Duration, report func(string)) (elastic.RelayResult, error) {
	var on, stop atomic.Bool
	buf := make([]uint64, size/8)
	for i := range buf {
		buf[i] = uint64(i)
	}
	errc := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		errc <- qos.PinThread(other)
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
	progress(report, "relay experiment for %v: a %d MiB memory stream on CPU %d, switched on and off by the draft's contention score", d, size>>20, other)
	return elastic.RunRelay(ctx, elastic.RelayOptions{Draft: e.Draft, Baselines: base, Duration: d, Source: on.Store})
}
