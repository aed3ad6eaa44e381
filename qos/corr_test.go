package qos

import (
	"math"
	"testing"
	"time"
)

func TestPearson(t *testing.T) {
	tests := []struct {
		name string
		x, y []float64
		want float64
		ok   bool
	}{
		{"perfect", []float64{1, 2, 3, 4}, []float64{2, 4, 6, 8}, 1, true},
		{"inverse", []float64{1, 2, 3, 4}, []float64{8, 6, 4, 2}, -1, true},
		{"known value", []float64{1, 2, 3, 4, 5}, []float64{2, 1, 4, 3, 5}, 0.8, true},
		{"constant x", []float64{1, 1, 1}, []float64{1, 2, 3}, 0, false},
		{"one pair", []float64{1}, []float64{1}, 0, false},
		{"length mismatch", []float64{1, 2, 3}, []float64{1, 2}, 0, false},
	}
	for _, tc := range tests {
		r, ok := Pearson(tc.x, tc.y)
		if ok != tc.ok || math.Abs(r-tc.want) > 1e-12 {
			t.Errorf("%s: Pearson = %v, %v; want %v, %v", tc.name, r, ok, tc.want, tc.ok)
		}
	}
}

func TestSlowdowns(t *testing.T) {
	native := framesOf(4, 6, 5)
	run := framesOf(8, 6, 10, 5)
	got := Slowdowns(run, native)
	want := []float64{2, 1, 2, 1} // the last against native's median, 5
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-9 {
			t.Errorf("Slowdowns = %v, want %v", got, want)
			break
		}
	}
	if m := MedianSlowdowns(run, 5*time.Millisecond); math.Abs(m[0]-1.6) > 1e-9 {
		t.Errorf("MedianSlowdowns[0] = %v, want 1.6", m[0])
	}
}

// With CPU times on both sides, time another process held the core does
// not count as slowdown.
func TestSlowdownsUseCPUTime(t *testing.T) {
	native := []Frame{{Start: 0, End: 10, CPU: 4}, {Start: 20, End: 25, CPU: 5}}
	run := []Frame{{Start: 0, End: 30, CPU: 6}, {Start: 40, End: 50}}
	got := Slowdowns(run, native)
	if math.Abs(got[0]-1.5) > 1e-9 || math.Abs(got[1]-2) > 1e-9 {
		t.Errorf("Slowdowns = %v, want [1.5 2] (CPU times, then durations)", got)
	}
}

// A run whose contention comes and goes in 200 ms phases: frames slow down
// in the contended phases and the samples rise with them.
func TestWindowCorrelation(t *testing.T) {
	const period = int64(8_333_333)
	contended := func(t int64) bool { return (t/200_000_000)%2 == 1 }
	var frames []Frame
	var slow []float64
	for i := range 240 {
		start := int64(i) * period
		d := int64(4_000_000)
		if contended(start) {
			d = 5_000_000
		}
		frames = append(frames, Frame{Start: start, End: start + d})
		slow = append(slow, float64(d)/4e6)
	}
	var follows, unrelated []Sample
	for ts := int64(0); ts < 240*period; ts += 3_000_000 {
		v := 0.02 * float64((ts/3_000_000)%5) // noise in both
		if contended(ts) {
			v += 0.3
		}
		follows = append(follows, Sample{T: ts, Value: v})
		unrelated = append(unrelated, Sample{T: ts, Value: float64((ts / 7_000_000) % 3)})
	}
	c := WindowCorrelation(frames, slow, follows, 50*time.Millisecond)
	if !c.Valid || c.Windows < 35 || c.R < 0.95 {
		t.Errorf("samples that follow the slowdown: %+v, want r > 0.95 over ~40 windows", c)
	}
	c = WindowCorrelation(frames, slow, unrelated, 50*time.Millisecond)
	if !c.Valid || math.Abs(c.R) > 0.4 {
		t.Errorf("unrelated samples: %+v, want |r| small", c)
	}
	ws := Windows(frames, slow, follows, 100*time.Millisecond)
	if len(ws) != 20 || ws[0].T != 0 || ws[1].T != 0.1 || ws[0].Frames == 0 || ws[0].Samples == 0 {
		t.Fatalf("windows: %d, first %+v", len(ws), ws[:min(2, len(ws))])
	}
	if ws[0].Slowdown != 1 || ws[2].Slowdown < 1.2 || ws[2].Score < 0.3 || ws[0].Score > 0.1 {
		t.Errorf("window means: %+v, %+v", ws[0], ws[2])
	}
	late := []Sample{{T: 10 * 240 * period, Value: 1}, {T: 11 * 240 * period, Value: 2}}
	if c := WindowCorrelation(frames, slow, late, 50*time.Millisecond); c.Valid || c.Windows != 0 {
		t.Errorf("no overlap: %+v", c)
	}
	if c := WindowCorrelation(frames, slow[:3], follows, 50*time.Millisecond); c.Valid {
		t.Errorf("mismatched slowdowns accepted: %+v", c)
	}
	if c := WindowCorrelation(frames, slow, follows, time.Nanosecond); c.Valid {
		t.Errorf("a 1 ns window over 2 s: %+v, want a refusal", c)
	}
}

func TestLayerScores(t *testing.T) {
	var ts []LayerTiming
	for i := range 40 {
		took := 10 * time.Millisecond
		if i%4 == 0 {
			took = 15 * time.Millisecond
		}
		ts = append(ts, LayerTiming{T: int64(i), Layer: 0, Rows: 1, Took: took})
		ts = append(ts, LayerTiming{T: int64(i), Draft: true, Layer: 0, Rows: 1, Took: 2 * took})
	}
	ts = append(ts, LayerTiming{T: 99, Layer: 5, Rows: 9, Took: time.Second}) // too few to score
	s := LayerScores(ts)
	if len(s) != 80 {
		t.Fatalf("%d samples, want 80", len(s))
	}
	for i, x := range s {
		want := 0.0
		if (i/2)%4 == 0 {
			want = 0.5
		}
		if math.Abs(x.Value-want) > 1e-9 {
			t.Fatalf("sample %d = %v, want %v", i, x.Value, want)
		}
	}
}
