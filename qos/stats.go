package qos

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Frame is one simulated frame: the vsync tick it started on and the time
// its work ended, both CLOCK_MONOTONIC nanoseconds (see Now). Its deadline
// is Start plus the frame period.
type Frame struct {
	Start int64 `json:"start_ns"`
	End   int64 `json:"end_ns"`
	// CPU is the CPU time the frame's work took on its thread (0: not
	// measured): its duration less the time other processes held the
	// core, memory stalls included.
	CPU int64 `json:"cpu_ns,omitempty"`
}

// Duration is the frame's time from its vsync tick to the end of its work.
func (f Frame) Duration() time.Duration { return time.Duration(f.End - f.Start) }

// Work is the time the frame's work took: its CPU time when measured (the
// time other processes held the core left out: on a shared machine that
// is noise, not the memory contention being measured), else its duration.
func (f Frame) Work() time.Duration {
	if f.CPU > 0 {
		return time.Duration(f.CPU)
	}
	return f.Duration()
}

// Summary is what a frame list says about the foreground's smoothness.
type Summary struct {
	Frames        int     `json:"frames"`
	Janky         int     `json:"janky"`             // frames that ended after their deadline
	JankPct       float64 `json:"jank_pct"`          // 100 × Janky ÷ Frames
	Slow          int     `json:"slow"`              // frames longer than two periods
	LongestStreak int     `json:"longest_streak"`    // most janky frames in a row
	MissedVsyncs  int     `json:"missed_vsyncs"`     // vsync ticks no frame started on (taken by overruns)
	MeanMs        float64 `json:"mean_ms"`           // frame times, ms
	P50Ms         float64 `json:"p50_ms"`            //
	P95Ms         float64 `json:"p95_ms"`            //
	P99Ms         float64 `json:"p99_ms"`            //
	MaxMs         float64 `json:"max_ms"`            //
	PeriodMs      float64 `json:"period_ms"`         // the deadline
	Seconds       float64 `json:"seconds"`           // first start to last end
	FPS           float64 `json:"frames_per_second"` // frames ÷ Seconds
}

// Summarize computes the statistics of frames (in start order) at the
// given frame period. Percentiles interpolate linearly between the
// nearest ranks.
func Summarize(frames []Frame, period time.Duration) Summary {
	s := Summary{Frames: len(frames), PeriodMs: ms(period)}
	if len(frames) == 0 || period <= 0 {
		return s
	}
	times := make([]float64, len(frames))
	streak := 0
	sum := 0.0
	for i, f := range frames {
		d := f.Duration()
		times[i] = ms(d)
		sum += times[i]
		if d > period {
			s.Janky++
			streak++
			s.LongestStreak = max(s.LongestStreak, streak)
		} else {
			streak = 0
		}
		if d > 2*period {
			s.Slow++
		}
		if i > 0 {
			// Ticks strictly between the previous frame's tick and this one's.
			s.MissedVsyncs += max(0, int(math.Round(float64(f.Start-frames[i-1].Start)/float64(period)))-1)
		}
	}
	s.JankPct = 100 * float64(s.Janky) / float64(len(frames))
	s.MeanMs = sum / float64(len(frames))
	slices.Sort(times)
	s.P50Ms = Percentile(times, 50)
	s.P95Ms = Percentile(times, 95)
	s.P99Ms = Percentile(times, 99)
	s.MaxMs = times[len(times)-1]
	s.Seconds = float64(frames[len(frames)-1].End-frames[0].Start) / 1e9
	if s.Seconds > 0 {
		s.FPS = float64(len(frames)) / s.Seconds
	}
	return s
}

// Percentile returns the p-th percentile (0–100) of sorted values,
// interpolating linearly between the nearest ranks; 0 for no values.
func Percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	p = min(max(p, 0), 100)
	pos := p / 100 * float64(len(sorted)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(sorted)-1)
	return sorted[lo] + (pos-float64(lo))*(sorted[hi]-sorted[lo])
}

// NextStart is the vsync rule: the frame after one that ended at end
// starts on the first tick of the grid origin + k·period that is at or
// after end, and never before the tick after prevStart. A frame that
// overruns its deadline thus delays the next one to the next tick after it
// ends, as a real UI thread does; the ticks in between are missed.
func NextStart(origin, prevStart, end int64, period time.Duration) int64 {
	p := int64(period)
	next := prevStart + p
	if end > next {
		k := (end - origin + p - 1) / p
		next = origin + k*p
	}
	return next
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// framesHeader is the first line of a frames file.
const framesHeader = "start_ns,end_ns,cpu_ns"

// framesHeaderV1 is the header of frames files written before frames
// carried their CPU time.
const framesHeaderV1 = "start_ns,end_ns"

// WriteFrames writes frames as CSV: a header line, then one
// "start_ns,end_ns" line per frame (CLOCK_MONOTONIC nanoseconds).
func WriteFrames(w io.Writer, frames []Frame) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, framesHeader)
	for _, f := range frames {
		fmt.Fprintf(bw, "%d,%d,%d\n", f.Start, f.End, f.CPU)
	}
	return bw.Flush()
}

// maxFrames bounds a frames file: a day of frames at 240 Hz.
const maxFrames = 240 * 86400

// ReadFrames reads what WriteFrames wrote. Frames must be in start order
// and end after they start.
func ReadFrames(r io.Reader) ([]Frame, error) {
	sc := bufio.NewScanner(r)
	if !sc.Scan() {
		if err := sc.Err(); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("qos: frames file is empty (want a %q header)", framesHeader)
	}
	header := strings.TrimSpace(sc.Text())
	if header != framesHeader && header != framesHeaderV1 {
		return nil, fmt.Errorf("qos: frames file starts with %q, want %q", truncate(sc.Text()), framesHeader)
	}
	columns := strings.Count(header, ",") + 1
	var out []Frame
	for line := 2; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		fields := strings.Split(text, ",")
		var v [3]int64
		ok := len(fields) == columns
		for i := 0; ok && i < columns; i++ {
			var err error
			v[i], err = strconv.ParseInt(fields[i], 10, 64)
			ok = err == nil
		}
		if !ok {
			return nil, fmt.Errorf("qos: frames line %d: %q is not %s", line, truncate(text), header)
		}
		start, end, cpu := v[0], v[1], v[2]
		if cpu < 0 || (cpu > 0 && end > start && cpu > 2*(end-start)) {
			return nil, fmt.Errorf("qos: frames line %d: CPU time %d ns outside [0, 2 × the frame's %d ns]", line, cpu, end-start)
		}
		if end < start || (len(out) > 0 && start < out[len(out)-1].Start) {
			return nil, fmt.Errorf("qos: frames line %d: frame ends before it starts or starts before the previous one", line)
		}
		if len(out) >= maxFrames {
			return nil, fmt.Errorf("qos: more than %d frames", maxFrames)
		}
		out = append(out, Frame{Start: start, End: end, CPU: cpu})
	}
	return out, sc.Err()
}

func truncate(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
