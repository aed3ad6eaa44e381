package qos

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"time"
)

// Experiment is a `shade bench qos` run: every profile beside every
// policy's background, repeated.
type Experiment struct {
	Profiles []string
	Policies []Policy
	// StartAt, if set, is called before each run with its round: every
	// policy of a round then decodes the same prompts (speculation's
	// speed depends on how well the draft guesses the text).
	StartAt  func(round int)
	Reps     int
	Duration time.Duration // of each foreground run
	Hz       float64
	FgCPU    int // the foreground child's CPU
	BgCPU    int // the background's (this process's) CPU; < 0: no pinning
	Seed     uint64
	// Duty in (0, 1) makes the background sporadic: on for Duty × Period
	// at the start of each Period (0 or 1: continuous).
	Duty   float64
	Period time.Duration
	// MaxStolenPct, if positive, runs a (profile, policy) run again, up to
	// Retries times, when other processes held the foreground's core for
	// more than this percentage of it (see ForegroundReport.RunqueueWaitMs):
	// on a shared machine, noise that has nothing to do with the
	// background. The last attempt counts whatever it measured.
	MaxStolenPct float64
	Retries      int
	// Window is the correlation window (default 100 ms).
	Window time.Duration
	// Units fixes the foreground work per frame for every profile (0:
	// calibrate each profile once, alone, before its runs).
	Units float64
	// BufferBytes is the foreground's burst buffer (0: BufferLLCMultiple ×
	// the LLC).
	BufferBytes int64
	// WarmUp: see Pair.WarmUp (0: the foreground starts with the background).
	WarmUp   time.Duration
	Command  func(ctx context.Context, args []string) (*exec.Cmd, error) // default ForegroundCommand
	Progress func(what string)
	// Keep, if set, is called with every run's result (to save frames and
	// samples: SaveRun); an error stops the experiment.
	Keep func(profile, policy string, rep int, r *PairResult) error
}

// Run is one repetition of one (profile, policy) cell.
type Run struct {
	Summary          Summary     `json:"summary"`
	TokPerS          float64     `json:"tok_per_s"`
	EffectiveTokPerS float64     `json:"effective_tok_per_s"`
	BusyFraction     float64     `json:"busy_fraction"` // background busy time ÷ wall time
	SleepFraction    float64     `json:"sleep_fraction"`
	Samples          int         `json:"samples"`
	MeanScore        float64     `json:"mean_score"` // mean contention sample
	Correlation      Correlation `json:"correlation"`
	// Windows are the run's per-window means (see Windows) behind the
	// correlation, for plotting over time.
	Windows      []Window `json:"windows,omitempty"`
	MeanSlowdown float64  `json:"mean_slowdown"` // frames' time ÷ their native time
	// StolenPct is the share of the run the foreground waited for its
	// core (other processes on it): noise, not memory contention.
	StolenPct float64            `json:"stolen_pct"`
	Notes     map[string]float64 `json:"notes,omitempty"`
}

// Row is a (profile, policy) cell: medians over repetitions.
type Row struct {
	Profile          string  `json:"profile"`
	Policy           string  `json:"policy"`
	JankPct          float64 `json:"jank_pct"`
	P95Ms            float64 `json:"p95_ms"`
	P99Ms            float64 `json:"p99_ms"`
	Slow             float64 `json:"slow_frames"`
	LongestStreak    float64 `json:"longest_streak"`
	TokPerS          float64 `json:"tok_per_s"`
	EffectiveTokPerS float64 `json:"effective_tok_per_s"`
	MeanSlowdown     float64 `json:"mean_slowdown"`
	StolenPct        float64 `json:"stolen_pct"`
	// R is the median Pearson r of contention score and slowdown over the
	// repetitions that had one (RValid false: none had).
	R      float64 `json:"r"`
	RValid bool    `json:"r_valid"`
	Runs   []Run   `json:"runs"`
}

// Report is what an experiment measured.
type Report struct {
	Hz          float64                 `json:"hz"`
	Seconds     float64                 `json:"seconds_per_run"`
	Reps        int                     `json:"reps"`
	Duty        float64                 `json:"duty,omitempty"`
	PeriodS     float64                 `json:"period_s,omitempty"`
	WindowMs    float64                 `json:"window_ms"`
	Units       map[string]float64      `json:"units"`
	Calibration map[string]*Calibration `json:"calibration,omitempty"`
	Rows        []Row                   `json:"rows"`
}

// Run runs the experiment: for each profile, a calibration (unless Units
// is set), then Reps rounds in which every policy runs once, in the order
// given (so that a shared machine's changing load falls on all alike, and
// native's frames of the round are the reference of its slowdowns).
func (e *Experiment) Run(ctx context.Context) (Report, error) {
	if len(e.Profiles) == 0 || len(e.Policies) == 0 {
		return Report{}, errors.New("qos: an experiment needs profiles and policies")
	}
	if e.Reps <= 0 {
		e.Reps = 1
	}
	if e.Hz == 0 {
		e.Hz = 120
	}
	if e.Window <= 0 {
		e.Window = 100 * time.Millisecond
	}
	if e.Duration <= 0 {
		return Report{}, errors.New("qos: an experiment needs a positive run duration")
	}
	sporadic := e.Duty > 0 && e.Duty < 1
	if sporadic && e.Period <= 0 {
		return Report{}, errors.New("qos: a sporadic background needs a period")
	}
	// Policies without a model run first in each round: their frames are
	// the round's native reference.
	e.Policies = slices.Clone(e.Policies)
	slices.SortStableFunc(e.Policies, func(a, b Policy) int {
		switch {
		case a.Native == b.Native:
			return 0
		case a.Native:
			return -1
		}
		return 1
	})
	// Build every policy's workload once before any run, so that one that
	// cannot run (no model loaded) fails before minutes of measurements.
	for _, p := range e.Policies {
		if _, err := p.New(); err != nil {
			return Report{}, fmt.Errorf("qos: policy %s: %w", p.Name, err)
		}
	}
	rep := Report{Hz: e.Hz, Seconds: e.Duration.Seconds(), Reps: e.Reps, WindowMs: float64(e.Window) / 1e6,
		Units: map[string]float64{}, Calibration: map[string]*Calibration{}}
	if sporadic {
		rep.Duty, rep.PeriodS = e.Duty, e.Period.Seconds()
	}
	for _, prof := range e.Profiles {
		if _, err := LookupProfile(prof); err != nil {
			return rep, err
		}
		pair := Pair{Profile: prof, Hz: e.Hz, Duration: e.Duration, Units: e.Units, Seed: e.Seed,
			FgCPU: e.FgCPU, BgCPU: e.BgCPU, Command: e.Command, BufferBytes: e.BufferBytes, WarmUp: e.WarmUp}
		nativeMedian := time.Duration(0)
		if pair.Units == 0 {
			e.progress("%s: calibrating the foreground alone on CPU %d", prof, e.FgCPU)
			fg, err := pair.Calibrate(ctx)
			if err != nil {
				return rep, err
			}
			pair.Units = fg.Units
			rep.Calibration[prof] = fg.Calibration
			if c := fg.Calibration; c != nil {
				nativeMedian = time.Duration(c.MedianFraction * float64(time.Second) / e.Hz)
			}
		}
		rep.Units[prof] = pair.Units
		runs := make([][]Run, len(e.Policies))
		for r := range e.Reps {
			var native []Frame
			for i, pol := range e.Policies {
				res, err := e.runOnce(ctx, &pair, pol, r)
				if err != nil {
					return rep, err
				}
				if e.Keep != nil {
					if err := e.Keep(prof, pol.Name, r, &res); err != nil {
						return rep, err
					}
				}
				if pol.Native && native == nil {
					native = res.Foreground.Frames
				}
				runs[i] = append(runs[i], e.summarize(&res, native, nativeMedian))
			}
		}
		for i, pol := range e.Policies {
			rep.Rows = append(rep.Rows, aggregate(prof, pol.Name, runs[i]))
		}
	}
	return rep, nil
}

// runOnce runs one policy once, again (up to Retries times) while other
// processes hold the foreground's core for more than MaxStolenPct of it.
func (e *Experiment) runOnce(ctx context.Context, pair *Pair, pol Policy, r int) (PairResult, error) {
	for attempt := 0; ; attempt++ {
		e.progress("%s: %s, repetition %d of %d (%.0f s)", pair.Profile, pol.Name, r+1, e.Reps, e.Duration.Seconds())
		bg, err := pol.New()
		if err != nil {
			return PairResult{}, fmt.Errorf("qos: policy %s: %w", pol.Name, err)
		}
		if e.Duty > 0 && e.Duty < 1 && !pol.Native {
			if bg, err = Sporadic(bg, e.Duty, e.Period); err != nil {
				return PairResult{}, err
			}
		}
		if e.StartAt != nil {
			e.StartAt(r)
		}
		res, err := pair.Run(ctx, bg)
		if err != nil {
			return res, fmt.Errorf("qos: %s with %s: %w", pair.Profile, pol.Name, err)
		}
		stolen := 0.0
		if s := res.Foreground.Summary.Seconds; s > 0 {
			stolen = res.Foreground.RunqueueWaitMs / 10 / s
		}
		if e.MaxStolenPct <= 0 || stolen <= e.MaxStolenPct || attempt >= e.Retries {
			return res, nil
		}
		e.progress("%s: %s: other processes held the foreground's core %.0f%% of the run (over %g%%): once more",
			pair.Profile, pol.Name, stolen, e.MaxStolenPct)
	}
}

func (e *Experiment) progress(format string, args ...any) {
	if e.Progress != nil {
		e.Progress(fmt.Sprintf(format, args...))
	}
}

// summarize reduces one run, its slowdowns taken against native's frames
// of the same round when there are some, else the calibration's median.
func (e *Experiment) summarize(res *PairResult, native []Frame, nativeMedian time.Duration) Run {
	fg, bg := &res.Foreground, &res.Background
	run := Run{Summary: fg.Summary, TokPerS: bg.TokPerS(), EffectiveTokPerS: bg.EffectiveTokPerS(),
		Samples: len(bg.Samples), Notes: bg.Notes}
	if fg.Summary.Seconds > 0 {
		run.StolenPct = fg.RunqueueWaitMs / 10 / fg.Summary.Seconds
	}
	if bg.Wall > 0 {
		run.BusyFraction = bg.Busy.Seconds() / bg.Wall.Seconds()
		run.SleepFraction = bg.Sleep.Seconds() / bg.Wall.Seconds()
	}
	for _, s := range bg.Samples {
		run.MeanScore += s.Value / float64(len(bg.Samples))
	}
	var slow []float64
	switch {
	case len(native) > 0:
		slow = Slowdowns(fg.Frames, native)
	case nativeMedian > 0:
		slow = MedianSlowdowns(fg.Frames, nativeMedian)
	}
	if slow != nil {
		// Time-weighted, as in Windows: resting frames are tiny.
		var took, native float64
		for i, s := range slow {
			if s > 0 {
				took += float64(fg.Frames[i].Work())
				native += float64(fg.Frames[i].Work()) / s
			}
		}
		if native > 0 {
			run.MeanSlowdown = took / native
		}
		run.Correlation = WindowCorrelation(fg.Frames, slow, bg.Samples, e.Window)
		run.Windows = Windows(fg.Frames, slow, bg.Samples, e.Window)
	}
	return run
}

func aggregate(profile, policy string, runs []Run) Row {
	row := Row{Profile: profile, Policy: policy, Runs: runs}
	pick := func(f func(Run) float64) float64 {
		var v []float64
		for _, r := range runs {
			v = append(v, f(r))
		}
		return medianOf(v)
	}
	row.JankPct = pick(func(r Run) float64 { return r.Summary.JankPct })
	row.P95Ms = pick(func(r Run) float64 { return r.Summary.P95Ms })
	row.P99Ms = pick(func(r Run) float64 { return r.Summary.P99Ms })
	row.Slow = pick(func(r Run) float64 { return float64(r.Summary.Slow) })
	row.LongestStreak = pick(func(r Run) float64 { return float64(r.Summary.LongestStreak) })
	row.TokPerS = pick(func(r Run) float64 { return r.TokPerS })
	row.EffectiveTokPerS = pick(func(r Run) float64 { return r.EffectiveTokPerS })
	row.MeanSlowdown = pick(func(r Run) float64 { return r.MeanSlowdown })
	row.StolenPct = pick(func(r Run) float64 { return r.StolenPct })
	var rs []float64
	for _, r := range runs {
		if r.Correlation.Valid {
			rs = append(rs, r.Correlation.R)
		}
	}
	if len(rs) > 0 {
		row.R, row.RValid = medianOf(rs), true
	}
	return row
}

func medianOf(x []float64) float64 {
	if len(x) == 0 {
		return 0
	}
	s := slices.Clone(x)
	slices.Sort(s)
	return Percentile(s, 50)
}
