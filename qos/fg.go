package qos

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"time"
)

// ForegroundOptions configure RunForeground.
type ForegroundOptions struct {
	Profile  Profile
	Hz       float64       // default 120
	Duration time.Duration // default 10 s
	CPU      int           // pin to this CPU; < 0: no pinning
	// Nice, if not 0, is set on every thread (see SetProcessNice); when
	// not permitted the run goes on at the current priority and
	// ForegroundReport.Nice says so.
	Nice          int
	Units         float64       // work units per frame; 0: calibrate first
	TargetJankPct float64       // calibration target (default 5)
	CheckFor      time.Duration // calibration check run (default 1.5 s; four fling–rest cycles with gestures)
	BufferBytes   int64         // default BufferLLCMultiple × LLCSize
	Seed          uint64
	// CalibrateOnly stops after calibration (no measured run).
	CalibrateOnly bool
}

// ForegroundReport is what one foreground run measured.
type ForegroundReport struct {
	Profile      string       `json:"profile"`
	Hz           float64      `json:"hz"`
	CPU          int          `json:"cpu"`
	Nice         int          `json:"nice"`
	LLCBytes     int64        `json:"llc_bytes"`
	LLCFromSysfs bool         `json:"llc_from_sysfs"`
	BufferBytes  int64        `json:"buffer_bytes"`
	Units        float64      `json:"units"`
	Calibration  *Calibration `json:"calibration,omitempty"`
	Summary      Summary      `json:"summary"`
	// RunqueueWaitMs is how long the loop was runnable but not running
	// during the measured run: its core taken by other processes, noise
	// that memory contention does not explain.
	RunqueueWaitMs float64 `json:"runqueue_wait_ms"`
	Frames         []Frame `json:"-"`
}

// RunForeground pins the process, sets up the frame loop, calibrates it
// unless units are given, and runs it.
func RunForeground(ctx context.Context, o ForegroundOptions) (ForegroundReport, error) {
	if o.Hz == 0 {
		o.Hz = 120
	}
	if o.Duration == 0 {
		o.Duration = 10 * time.Second
	}
	if o.TargetJankPct == 0 {
		o.TargetJankPct = 5
	}
	if o.CheckFor == 0 {
		o.CheckFor = 1500 * time.Millisecond
		// A profile with gestures needs several fling–rest cycles in the
		// check run, or one long fling (or rest) skews it.
		if p := o.Profile; p.FlingFrames > 0 {
			o.CheckFor = max(o.CheckFor, time.Duration(4*float64(p.FlingFrames+p.RestFrames)/o.Hz*float64(time.Second)))
		}
	}
	rep := ForegroundReport{Profile: o.Profile.Name, Hz: o.Hz, CPU: o.CPU}
	rep.LLCBytes, rep.LLCFromSysfs = LLCSize(SysCacheDir)
	if o.BufferBytes == 0 {
		o.BufferBytes = BufferLLCMultiple * rep.LLCBytes
	}
	rep.BufferBytes = o.BufferBytes
	if o.CPU >= 0 {
		if err := PinProcess(o.CPU); err != nil {
			return rep, err
		}
	}
	if o.Nice != 0 && SetProcessNice(o.Nice) == nil {
		rep.Nice = o.Nice
	}
	sim, err := NewSim(o.Profile, o.Hz, o.BufferBytes, o.Seed)
	if err != nil {
		return rep, err
	}
	if o.Units > 0 {
		if err := sim.SetUnits(o.Units); err != nil {
			return rep, err
		}
	} else {
		c, err := sim.Calibrate(ctx, o.TargetJankPct, o.CheckFor)
		if err != nil {
			return rep, err
		}
		rep.Calibration = &c
	}
	rep.Units = sim.Units()
	if o.CalibrateOnly {
		return rep, nil
	}
	// The loop stays on one OS thread, so that the run-queue wait read
	// before and after is the loop's own (not the runtime's other threads').
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	wait0 := RunqueueWait()
	frames, err := sim.Run(ctx, o.Duration)
	rep.RunqueueWaitMs = float64(RunqueueWait()-wait0) / 1e6
	rep.Frames = frames
	rep.Summary = Summarize(frames, sim.Period())
	return rep, err
}

// WriteFramesFile writes frames to path (see WriteFrames).
func WriteFramesFile(path string, frames []Frame) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := WriteFrames(f, frames); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ReadFramesFile reads a frames file (see ReadFrames).
func ReadFramesFile(path string) ([]Frame, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fr, err := ReadFrames(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return fr, nil
}
