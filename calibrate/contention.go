package calibrate

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"shade/calib"
	"shade/cost"
	"shade/elastic"
	"shade/engine"
	"shade/qos"
)

// ContentionOptions configure Contention.
type ContentionOptions struct {
	// Passes is how many passes per draft batch size the device profile
	// takes when none is stored and Contention measures it (default 30).
	Passes int
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
	// Profile is the device profile whose draft layers are the sensor's
	// baselines, and ProfilePath the file it was stored in when
	// Contention measured it ("" when it was stored already).
	Profile     *cost.Model
	ProfilePath string
	// Relay is the relay experiment's outcome (nil when it did not run
	// or failed: Calibration.GainsFrom says which).
	Relay *elastic.RelayResult
}

// Contention calibrates elastic speculation for the engine's target and
// draft on this machine: PI gains by Ziegler–Nichols from a relay
// experiment against a real contention source (a thread streaming over
// memory on another core, switched on and off by the draft's contention
// score), stored beside the target (calib.Contention). The sensor's
// quiet-machine baselines are the device profile's draft layers: the
// stored profile's, or, without one, a profile measured first and stored
// (calib.Cost, as Cost does). Keep the machine quiet while it runs.
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
	r := &ContentionResult{}
	profile, why, err := e.StoredProfile()
	if err != nil {
		return nil, err
	}
	if profile == nil {
		progress(o.Progress, "device profile: %s: measuring it, %d passes per draft batch size (keep the machine quiet)", why, o.Passes)
		res, err := Cost(e, cost.Options{DraftPasses: o.Passes, CPUTime: elastic.ProcessCPUTime, Progress: o.Progress})
		if err != nil {
			return nil, err
		}
		profile, r.ProfilePath = res.Model, res.Path
	}
	r.Profile = profile
	base, err := elastic.BaselinesFrom(profile)
	if err != nil {
		return nil, err
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
	draftKey, err := calib.KeyFor(e.DraftPath)
	if err != nil {
		return nil, err
	}
	c := &elastic.Calibration{Draft: draftKey, Pinned: o.CPU >= 0, Gains: elastic.DefaultGains, GainsFrom: "default"}
	r.Calibration = c
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
