package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"shade/qos"
)

func cmdFg(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var names []string
	for _, p := range qos.Profiles() {
		names = append(names, p.Name)
	}
	fs := newFlagSet("fg", "fg --profile "+strings.Join(names, "|")+" [--hz 120] [--seconds S] [--cpu N] [--units U] [--json] [--frames FILE]", stderr)
	profile := fs.String("profile", "scroll", "foreground profile: "+strings.Join(names, ", "))
	hz := fs.Float64("hz", 120, "refresh rate: a frame's deadline is one period (8.33 ms at 120 Hz)")
	seconds := fs.Float64("seconds", 10, "length of the measured run")
	cpu := fs.Int("cpu", qos.LastCPU(), "pin every thread to this CPU (-1: no pinning)")
	nice := fs.Int("nice", -10, "run at this nice value, as a UI thread does (Android: −10), when permitted; 0 leaves it")
	units := fs.Float64("units", 0, "work units per frame (0: calibrate on this core first so that alone about --jank-target % of frames are janky)")
	target := fs.Float64("jank-target", 5, "calibration's target jank `percent`")
	calibrateOnly := fs.Bool("calibrate-only", false, "calibrate, print the units and stop")
	framesPath := fs.String("frames", "", "write every frame's start and end (CLOCK_MONOTONIC ns) and the CPU time of its work as CSV to `file`")
	bufMiB := fs.Int("buffer-mib", 0, "size of the composition bursts' buffer in MiB (0: 16× the last-level cache)")
	seed := fs.Uint64("seed", 1, "seed of the frame-to-frame work variation")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		fs.Usage()
		return errUsage
	}
	if *bufMiB < 0 || *bufMiB > 64<<10 {
		return fmt.Errorf("--buffer-mib %d: want 1 to 65536 (0: the default)", *bufMiB)
	}
	prof, err := qos.LookupProfile(*profile)
	if err != nil {
		return err
	}
	if !(*seconds > 0 && *seconds <= 86400) {
		return fmt.Errorf("--seconds %v: want a duration in (0, 86400]", *seconds)
	}
	if *units < 0 {
		return fmt.Errorf("--units %v: want a positive number (0: calibrate)", *units)
	}
	rep, err := qos.RunForeground(ctx, qos.ForegroundOptions{Profile: prof, Hz: *hz,
		Duration: time.Duration(*seconds * float64(time.Second)), CPU: *cpu, Nice: *nice, Units: *units,
		TargetJankPct: *target, Seed: *seed, BufferBytes: int64(*bufMiB) << 20, CalibrateOnly: *calibrateOnly})
	if err != nil {
		return err
	}
	if *framesPath != "" && !*calibrateOnly {
		if err := qos.WriteFramesFile(*framesPath, rep.Frames); err != nil {
			return err
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	printForeground(stdout, &rep)
	return nil
}

func printForeground(w io.Writer, r *qos.ForegroundReport) {
	where := fmt.Sprintf("CPU %d", r.CPU)
	if r.CPU < 0 {
		where = "no pinned CPU"
	}
	llc := "from sysfs"
	if !r.LLCFromSysfs {
		llc = "assumed"
	}
	if r.Nice != 0 {
		where += fmt.Sprintf(" at nice %d", r.Nice)
	}
	fmt.Fprintf(w, "profile     %s at %g Hz on %s, burst buffer %s (%d× the %s LLC, %s)\n", r.Profile, r.Hz, where,
		human(uint64(r.BufferBytes)), r.BufferBytes/max(r.LLCBytes, 1), human(uint64(r.LLCBytes)), llc)
	if p, err := qos.LookupProfile(r.Profile); err == nil {
		gestures := "every frame composes"
		if p.FlingFrames > 0 {
			gestures = fmt.Sprintf("flings of ~%d frames, rests of ~%d (no composition, %.0f%% of the compute)", p.FlingFrames, p.RestFrames, 100*p.RestCompute)
		}
		fmt.Fprintf(w, "composes    %d layers into the frame buffer (%d streams); %s\n", p.Layers, p.Layers+1, gestures)
	}
	if c := r.Calibration; c != nil {
		fmt.Fprintf(w, "calibrated  %.0f units/frame: %.2f ns/unit alone, check run %.1f%% jank, median frame %.0f%% of the period (%.1f s)\n",
			c.Units, c.NsPerUnit, c.MeasuredJankPct, 100*c.MedianFraction, c.Seconds)
	} else {
		fmt.Fprintf(w, "units       %.0f per frame (given)\n", r.Units)
	}
	s := r.Summary
	if s.Frames == 0 {
		return
	}
	fmt.Fprintf(w, "frames      %d in %.1f s (%.1f fps), %d vsyncs missed; other processes held this core %.0f ms (%.1f%%)\n",
		s.Frames, s.Seconds, s.FPS, s.MissedVsyncs, r.RunqueueWaitMs, r.RunqueueWaitMs/10/max(s.Seconds, 1e-9))
	fmt.Fprintf(w, "jank        %.1f%% (%d frames over %.2f ms), %d slow (over two periods), longest janky streak %d\n",
		s.JankPct, s.Janky, s.PeriodMs, s.Slow, s.LongestStreak)
	fmt.Fprintf(w, "frame time  mean %.2f  p50 %.2f  p95 %.2f  p99 %.2f  max %.2f ms\n", s.MeanMs, s.P50Ms, s.P95Ms, s.P99Ms, s.MaxMs)
}
