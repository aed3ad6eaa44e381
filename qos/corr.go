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

// Slowdowns returns each frame's time divided by its native time: the time
// of the same frame (same index, hence the same work: runs with one seed
// do the same work frame by frame) in a run without background, or, past
// the end of native, the native median.
func Slowdowns(frames, native []Frame) []float64 {
	out := make([]float64, len(frames))
	if len(native) == 0 {
		return out
	}
	times := make([]float64, len(native))
	for i, f := range native {
		times[i] = float64(f.Duration())
	}
	slices.Sort(times)
	med := Percentile(times, 50)
	for i, f := range frames {
		base := med
		if i < len(native) && native[i].Duration() > 0 {
			base = float64(native[i].Duration())
		}
		if base > 0 {
			out[i] = float64(f.Duration()) / base
		}
	}
	return out
}

// MedianSlowdowns is Slowdowns against a native median frame time alone.
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

// WindowCorrelation cuts the time both cover into windows of length window,
// takes in each the mean sample value and the mean slowdown of the frames
// that ended in it (slowdown[i] belongs to frames[i]), and correlates the
// two over the windows that have both.
func WindowCorrelation(frames []Frame, slowdown []float64, samples []Sample, window time.Duration) Correlation {
	c := Correlation{Window: window}
	if window <= 0 || len(frames) == 0 || len(samples) == 0 || len(slowdown) != len(frames) {
		return c
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
		return c
	}
	n := int((hi-lo)/int64(window)) + 1
	if n > 10_000_000 {
		return c // a window far too small for the span: refuse rather than allocate
	}
	type acc struct {
		sum float64
		n   int
	}
	fs, ss := make([]acc, n), make([]acc, n)
	for i, f := range frames {
		if f.End < lo || f.End > hi {
			continue
		}
		w := &fs[(f.End-lo)/int64(window)]
		w.sum += slowdown[i]
		w.n++
	}
	for _, s := range samples {
		if s.T < lo || s.T > hi {
			continue
		}
		w := &ss[(s.T-lo)/int64(window)]
		w.sum += s.Value
		w.n++
	}
	var x, y []float64
	for i := range n {
		if fs[i].n > 0 && ss[i].n > 0 {
			x = append(x, ss[i].sum/float64(ss[i].n))
			y = append(y, fs[i].sum/float64(fs[i].n))
		}
	}
	c.Windows = len(x)
	if len(x) >= 3 {
		c.R, c.Valid = Pearson(x, y)
	}
	return c
}
