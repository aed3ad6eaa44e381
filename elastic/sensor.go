package elastic

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// Baselines are the quiet-machine latencies of each draft layer at each
// batch size (rows in the pass). Rows not measured are interpolated
// linearly between the nearest measured ones (and extrapolated in
// proportion beyond the largest).
type Baselines struct {
	Rows []int       `json:"rows"` // measured batch sizes, ascending
	NS   [][]float64 `json:"ns"`   // NS[layer][i]: median latency at Rows[i], in ns
}

// Validate checks shapes and values.
func (b *Baselines) Validate() error {
	if len(b.Rows) == 0 || len(b.NS) == 0 {
		return errors.New("elastic: baselines: no rows or no layers")
	}
	if len(b.Rows) > 1024 || len(b.NS) > 4096 {
		return fmt.Errorf("elastic: baselines: %d rows × %d layers is too many", len(b.Rows), len(b.NS))
	}
	for i, r := range b.Rows {
		if r < 1 || r > 1<<16 || (i > 0 && r <= b.Rows[i-1]) {
			return fmt.Errorf("elastic: baselines: rows must be ascending and in [1, 65536], got %v", b.Rows)
		}
	}
	for l, ns := range b.NS {
		if len(ns) != len(b.Rows) {
			return fmt.Errorf("elastic: baselines: layer %d has %d latencies for %d batch sizes", l, len(ns), len(b.Rows))
		}
		for _, v := range ns {
			if !(v > 0) || math.IsInf(v, 0) {
				return fmt.Errorf("elastic: baselines: layer %d: latency %v ns is not positive", l, v)
			}
		}
	}
	return nil
}

// Lookup is the baseline of layer at rows, in ns; false when the layer is
// not covered.
func (b *Baselines) Lookup(layer, rows int) (float64, bool) {
	if b == nil || layer < 0 || layer >= len(b.NS) || rows < 1 {
		return 0, false
	}
	ns := b.NS[layer]
	i, found := slices.BinarySearch(b.Rows, rows)
	switch {
	case found:
		return ns[i], true
	case i == 0:
		return ns[0], true // fewer rows than measured: no cheaper than the smallest
	case i == len(b.Rows):
		last := len(b.Rows) - 1
		if last == 0 {
			return ns[0], true
		}
		slope := (ns[last] - ns[last-1]) / float64(b.Rows[last]-b.Rows[last-1])
		return ns[last] + max(slope, 0)*float64(rows-b.Rows[last]), true
	}
	r0, r1 := float64(b.Rows[i-1]), float64(b.Rows[i])
	f := (float64(rows) - r0) / (r1 - r0)
	return ns[i-1] + f*(ns[i]-ns[i-1]), true
}

// Sample is one sensor reading in the log.
type Sample struct {
	T     int64   `json:"t_ns"` // CLOCK_MONOTONIC (see Monotonic)
	Layer int32   `json:"layer"`
	Rows  int32   `json:"rows"`
	CS    float32 `json:"cs"`
	// Target marks a target-model layer (verify or prefill), scored
	// against a baseline learned online; otherwise a draft layer.
	Target bool `json:"target,omitempty"`
}

// sampleLog is a ring of the latest samples.
type sampleLog struct {
	buf   []Sample
	next  int
	total int
}

func (l *sampleLog) add(s Sample) {
	if len(l.buf) == 0 {
		return
	}
	l.buf[l.next] = s
	l.next = (l.next + 1) % len(l.buf)
	l.total++
}

// since appends to dst the samples with T ≥ t, oldest first.
func (l *sampleLog) since(dst []Sample, t int64) []Sample {
	n := min(l.total, len(l.buf))
	for i := range n {
		s := l.buf[(l.next-n+i+len(l.buf))%len(l.buf)]
		if s.T >= t {
			dst = append(dst, s)
		}
	}
	return dst
}

// Sensor turns draft-layer latencies into contention scores,
// CS = (T − T_base) / T_base, and says when the machine is contended: only
// after Need consecutive readings above the threshold (and it stays so
// until Need consecutive readings at or below it), so one noisy reading
// never triggers an action.
type Sensor struct {
	Need int // consecutive readings to change state (default 3)

	base    *Baselines
	learned map[[2]int]float64 // (layer, rows) → baseline learned online, where base has none
	seen    map[[2]int]int     // readings of a learned key
	above   int
	below   int
	on      bool
}

// NewSensor returns a sensor over the given baselines (nil: learned online
// from the fastest readings seen, a poorer sensor that says so in stats).
func NewSensor(base *Baselines) *Sensor {
	return &Sensor{Need: 3, base: base, learned: make(map[[2]int]float64), seen: make(map[[2]int]int)}
}

// warmup is how many readings of an unmeasured (layer, rows) are taken to
// learn its baseline before it yields scores.
const warmup = 4

// Score is the contention score of one reading; ok is false while the
// reading's baseline is still being learned.
func (s *Sensor) Score(layer, rows int, took time.Duration) (cs float64, ok bool) {
	t := float64(took)
	if t <= 0 {
		return 0, false
	}
	if b, ok := s.base.Lookup(layer, rows); ok {
		if t < 0.8*b {
			// Clearly faster than the baseline: it is stale (a cooler
			// chip, a faster build); follow it down slowly.
			s.base.NS[layer][s.nearest(rows)] += 0.05 * (t - b)
		}
		return (t - b) / b, true
	}
	k := [2]int{layer, rows}
	b, have := s.learned[k]
	if !have || t < b {
		s.learned[k] = t
		b = t
	}
	s.seen[k]++
	if s.seen[k] <= warmup {
		return 0, false
	}
	return (t - b) / b, true
}

// nearest is the index of the measured batch size closest to rows.
func (s *Sensor) nearest(rows int) int {
	i, _ := slices.BinarySearch(s.base.Rows, rows)
	if i == len(s.base.Rows) || (i > 0 && rows-s.base.Rows[i-1] < s.base.Rows[i]-rows) {
		i--
	}
	return i
}

// Observe feeds one score through the hysteresis against threshold and
// returns whether the machine counts as contended.
func (s *Sensor) Observe(cs, threshold float64) bool {
	need := max(s.Need, 1)
	if cs > threshold {
		s.above++
		s.below = 0
		if s.above >= need {
			s.on = true
		}
	} else {
		s.below++
		s.above = 0
		if s.below >= need {
			s.on = false
		}
	}
	return s.on
}

// Contended is the hysteresis state.
func (s *Sensor) Contended() bool { return s.on }

// Reset forgets the hysteresis state.
func (s *Sensor) Reset() { s.above, s.below, s.on = 0, 0, false }
