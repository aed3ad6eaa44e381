package qos

import (
	"math"
	"slices"
	"time"
)

// Sample is one reading of a background workload's contention sensor at a
// CLOCK_MONOTONIC time (see Now): for example a contention score
// CS = (T_actual − T_baseline) / T_baseline of one layer.
type Sample struct {
	T     int64   `json:"t_ns"`
	Value float64 `json:"value"`
}

// Pearson returns the correlation coefficient of x and y, and false when it
// is undefined (different lengths, fewer than two pairs, or a constant
// series).
func Pearson(x, y []float64) (float64, bool) {
	if len(x) != len(y) || len(x) < 2 {
		return 0, false
	}
	n := float64(len(x))
	var mx, my float64
	for i := range x {
		mx += x[i]
		my += y[i]
	}
	mx, my = mx/n, my/n
	var sxy, sxx, syy float64
	for i := range x {
		dx, dy := x[i]-mx, y[i]-my
		sxy += dx * dy
		sxx += dx * dx
		syy += dy * dy
	}
	if sxx == 0 || syy == 0 || math.IsNaN(sxy) {
		return 0, false
	}
	return max(-1, min(1, sxy/math.Sqrt(sxx*syy))), true
}

// Slowdowns returns each frame's work time (see Frame.Work) divided by its
// native work time: that of the same frame (same index, hence the same
// work: runs with one seed do the same work frame by frame) in a run
// without background, or, past the end of native, the native median.
// CPU times are compared when both frames have them, durations otherwise.
func Slowdowns(frames, native []Frame) []float64 {
	out := make([]float64, len(frames))
	if len(native) == 0 {
		return out
	}
	times := make([]float64, len(native))
	for i, f := range native {
		times[i] = float64(f.Work())
	}
	slices.Sort(times)
	med := Percentile(times, 50)
	for i, f := range frames {
		took, base := float64(f.Work()), med
		if i < len(native) {
			if n := native[i]; n.CPU > 0 && f.CPU > 0 {
				base = float64(n.CPU)
			} else if n.Duration() > 0 {
				took, base = float64(f.Duration()), float64(n.Duration())
			}
		}
		if base > 0 {
			out[i] = took / base
		}
	}
	return out
}

// MedianSlowdowns is Slowdowns against a native median frame time alone
// (a duration: it compares frame durations).
func MedianSlowdowns(frames []Frame, nativeMedian time.Duration) []float64 {
	out := make([]float64, len(frames))
	for i, f := range frames {
		if nativeMedian > 0 {
			out[i] = float64(f.Duration()) / float64(nativeMedian)
		}
	}
	return out
}

// Correlation is how a background's contention samples track the
// foreground's slowdown over time windows.
type Correlation struct {
	Window  time.Duration `json:"window_ns"`
	Windows int           `json:"windows"` // windows holding both frames and samples
	R       float64       `json:"r"`       // Pearson r over those windows
	Valid   bool          `json:"valid"`   // false: too few windows or a constant series
}

// Window is one time window of a run: the mean contention sample and the
// slowdown of the frames that ended in it (their time ÷ their native
// time); Samples and Frames count each (a mean over nothing is 0).
type Window struct {
	T        float64 `json:"t_s"` // start, seconds after the first window
	Score    float64 `json:"score"`
	Slowdown float64 `json:"slowdown"`
	Samples  int     `json:"samples"`
	Frames   int     `json:"frames"`
}

// maxWindows bounds Windows' output (a window far too small for the span
// is refused rather than allocated).
const maxWindows = 10_000_000

// Windows cuts the time that frames and samples both cover into windows of
// length window and averages each (slowdown[i] belongs to frames[i]).
func Windows(frames []Frame, slowdown []float64, samples []Sample, window time.Duration) []Window {
	if window <= 0 || len(frames) == 0 || len(samples) == 0 || len(slowdown) != len(frames) {
		return nil
	}
	lo, hi := frames[0].Start, frames[0].End
	for _, f := range frames {
		lo, hi = min(lo, f.Start), max(hi, f.End)
	}
	slo, shi := samples[0].T, samples[0].T
	for _, s := range samples {
		slo, shi = min(slo, s.T), max(shi, s.T)
	}
	lo, hi = max(lo, slo), min(hi, shi)
	if hi <= lo {
		return nil
	}
	n := (hi-lo)/int64(window) + 1
	if n > maxWindows {
		return nil
	}
	ws := make([]Window, n)
	for i := range ws {
		ws[i].T = float64(int64(i)*int64(window)) / 1e9
	}
	// A window's slowdown is its frames' time over their native time (the
	// time-weighted mean of their slowdowns): a frame that rests between
	// flings takes a fraction of a millisecond, and its ratio, noisy at
	// that scale, must not weigh as much as a frame that composes.
	native := make([]float64, len(ws))
	for i, f := range frames {
		if f.End >= lo && f.End <= hi && slowdown[i] > 0 {
			k := (f.End - lo) / int64(window)
			w := &ws[k]
			w.Slowdown += float64(f.Work())
			native[k] += float64(f.Work()) / slowdown[i]
			w.Frames++
		}
	}
	for _, s := range samples {
		if s.T >= lo && s.T <= hi {
			w := &ws[(s.T-lo)/int64(window)]
			w.Score += s.Value
			w.Samples++
		}
	}
	for i := range ws {
		if w := &ws[i]; native[i] > 0 {
			w.Slowdown /= native[i]
		}
		if w := &ws[i]; w.Samples > 0 {
			w.Score /= float64(w.Samples)
		}
	}
	return ws
}

// WindowCorrelation correlates, over the windows (see Windows) that hold
// both frames and samples, the mean contention sample with the mean
// slowdown.
func WindowCorrelation(frames []Frame, slowdown []float64, samples []Sample, window time.Duration) Correlation {
	c := Correlation{Window: window}
	var x, y []float64
	for _, w := range Windows(frames, slowdown, samples, window) {
		if w.Frames > 0 && w.Samples > 0 {
			x = append(x, w.Score)
			y = append(y, w.Slowdown)
		}
	}
	c.Windows = len(x)
	if len(x) >= 3 {
		c.R, c.Valid = Pearson(x, y)
	}
	return c
}
