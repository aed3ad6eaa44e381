package qos

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const p8 = 8333333 * time.Nanosecond // 120 Hz

// frames builds frames on a grid from durations in ms, starting each on
// the tick the vsync rule gives.
func framesOf(durMs ...float64) []Frame {
	var out []Frame
	start := int64(1_000_000_000)
	origin := start
	for _, d := range durMs {
		end := start + int64(d*1e6)
		out = append(out, Frame{Start: start, End: end})
		start = NextStart(origin, start, end, p8)
	}
	return out
}

func TestSummarize(t *testing.T) {
	tests := []struct {
		name                          string
		durs                          []float64
		janky, slow, streak, missed   int
		jankPct, p50, p95, p99, maxMs float64
	}{
		{name: "all on time", durs: []float64{5, 5, 5, 5}, p50: 5, p95: 5, p99: 5, maxMs: 5},
		{name: "one janky, one slow, streak of two",
			durs: []float64{5, 9, 17, 5, 9, 5}, janky: 3, slow: 1, streak: 2, missed: 1 + 2 + 1,
			jankPct: 50, p50: 7, p95: 15, p99: 16.6, maxMs: 17},
		{name: "exactly the deadline is on time", durs: []float64{8.333333, 8.333333}, p50: 8.333333, p95: 8.333333, p99: 8.333333, maxMs: 8.333333},
		{name: "single frame", durs: []float64{10}, janky: 1, streak: 1, jankPct: 100, p50: 10, p95: 10, p99: 10, maxMs: 10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := Summarize(framesOf(tc.durs...), p8)
			if s.Frames != len(tc.durs) || s.Janky != tc.janky || s.Slow != tc.slow || s.LongestStreak != tc.streak || s.MissedVsyncs != tc.missed {
				t.Errorf("frames %d janky %d slow %d streak %d missed %d, want %d %d %d %d %d",
					s.Frames, s.Janky, s.Slow, s.LongestStreak, s.MissedVsyncs, len(tc.durs), tc.janky, tc.slow, tc.streak, tc.missed)
			}
			for _, c := range []struct {
				name      string
				got, want float64
			}{{"jank %", s.JankPct, tc.jankPct}, {"p50", s.P50Ms, tc.p50}, {"p95", s.P95Ms, tc.p95}, {"p99", s.P99Ms, tc.p99}, {"max", s.MaxMs, tc.maxMs}} {
				if math.Abs(c.got-c.want) > 1e-6 {
					t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
				}
			}
		})
	}
	if s := Summarize(nil, p8); s.Frames != 0 || s.JankPct != 0 {
		t.Errorf("empty: %+v", s)
	}
}

func TestNextStart(t *testing.T) {
	const origin, p = int64(1000), int64(100)
	tests := []struct {
		name                 string
		prevStart, end, want int64
	}{
		{"ends before the next tick: starts on it", 1000, 1050, 1100},
		{"ends exactly on the next tick: starts on it", 1000, 1100, 1100},
		{"overruns by a little: waits for the tick after", 1000, 1101, 1200},
		{"overruns two periods", 1100, 1350, 1400},
		{"ends on a later tick exactly", 1100, 1400, 1400},
	}
	for _, tc := range tests {
		if got := NextStart(origin, tc.prevStart, tc.end, time.Duration(p)); got != tc.want {
			t.Errorf("%s: NextStart(%d, %d) = %d, want %d", tc.name, tc.prevStart, tc.end, got, tc.want)
		}
	}
}

func TestPercentile(t *testing.T) {
	x := []float64{1, 2, 3, 4, 5}
	for _, c := range []struct{ p, want float64 }{{0, 1}, {50, 3}, {25, 2}, {90, 4.6}, {100, 5}, {-5, 1}, {200, 5}} {
		if got := Percentile(x, c.p); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("Percentile(%v) = %v, want %v", c.p, got, c.want)
		}
	}
	if Percentile(nil, 50) != 0 {
		t.Error("empty percentile")
	}
}

func TestFramesFileRoundTrip(t *testing.T) {
	in := framesOf(5, 9, 17, 5)
	var buf bytes.Buffer
	if err := WriteFrames(&buf, in); err != nil {
		t.Fatal(err)
	}
	out, err := ReadFrames(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(in) {
		t.Fatalf("%d frames back, want %d", len(out), len(in))
	}
	for i := range in {
		if in[i] != out[i] {
			t.Errorf("frame %d: %v, want %v", i, out[i], in[i])
		}
	}
	path := filepath.Join(t.TempDir(), "f.csv")
	if err := WriteFramesFile(path, in); err != nil {
		t.Fatal(err)
	}
	if back, err := ReadFramesFile(path); err != nil || len(back) != len(in) {
		t.Fatalf("file round trip: %v, %d frames", err, len(back))
	}
}

// Frames carry their CPU time; files written before they did still read.
func TestFramesFileCPUColumn(t *testing.T) {
	in := []Frame{{Start: 10, End: 30, CPU: 18}, {Start: 40, End: 45}}
	var buf bytes.Buffer
	if err := WriteFrames(&buf, in); err != nil {
		t.Fatal(err)
	}
	out, err := ReadFrames(&buf)
	if err != nil || len(out) != 2 || out[0] != in[0] || out[1] != in[1] {
		t.Fatalf("round trip: %v, %v", out, err)
	}
	old, err := ReadFrames(strings.NewReader("start_ns,end_ns\n10,30\n40,45\n"))
	if err != nil || len(old) != 2 || old[0].CPU != 0 || old[1].End != 45 {
		t.Fatalf("old file: %v, %v", old, err)
	}
	if w := in[0].Work(); w != 18 {
		t.Errorf("Work with CPU time = %v, want 18ns", w)
	}
	if w := in[1].Work(); w != 5 {
		t.Errorf("Work without = %v, want 5ns", w)
	}
}

func TestReadFramesErrors(t *testing.T) {
	for _, in := range []string{
		"",
		"start,end\n1,2\n",
		"start_ns,end_ns\n1;2\n",
		"start_ns,end_ns\n5,4\n",
		"start_ns,end_ns\n5,9\n4,10\n",
		"start_ns,end_ns\nx,1\n",
		"start_ns,end_ns\n1,99999999999999999999\n",
		"start_ns,end_ns,cpu_ns\n1,2\n",            // a column short
		"start_ns,end_ns\n1,2,1\n",                 // a column too many
		"start_ns,end_ns,cpu_ns\n1,20,-1\n",        // negative CPU time
		"start_ns,end_ns,cpu_ns\n1000,2000,9000\n", // far more CPU than wall time
	} {
		if _, err := ReadFrames(strings.NewReader(in)); err == nil {
			t.Errorf("ReadFrames(%q) accepted", in)
		}
	}
}

func FuzzReadFrames(f *testing.F) {
	f.Add("start_ns,end_ns\n1,2\n3,5\n")
	f.Add("start_ns,end_ns\n\n")
	f.Add("start_ns,end_ns\n-1,0\n")
	f.Add("start_ns,end_ns,cpu_ns\n1,20,15\n30,50,0\n")
	f.Fuzz(func(t *testing.T, in string) {
		frames, err := ReadFrames(strings.NewReader(in))
		if err != nil {
			return
		}
		for i, fr := range frames {
			if fr.End < fr.Start || (i > 0 && fr.Start < frames[i-1].Start) {
				t.Fatalf("accepted frame %d: %v", i, fr)
			}
		}
		var buf bytes.Buffer
		if err := WriteFrames(&buf, frames); err != nil {
			t.Fatal(err)
		}
		again, err := ReadFrames(&buf)
		if err != nil || len(again) != len(frames) {
			t.Fatalf("round trip: %v, %d of %d frames", err, len(again), len(frames))
		}
	})
}

func TestParseCacheSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
	}{
		{"32768K\n", 32 << 20}, {"1M", 1 << 20}, {"512", 512}, {"1G", 1 << 30},
		{"", 0}, {"K", 0}, {"-4K", 0}, {"0K", 0}, {"2G", 0}, {"12Q", 0}, {"99999999999999999999K", 0},
	}
	for _, tc := range tests {
		got, err := ParseCacheSize(tc.in)
		if tc.want == 0 {
			if err == nil {
				t.Errorf("ParseCacheSize(%q) = %d, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseCacheSize(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}

func FuzzParseCacheSize(f *testing.F) {
	for _, s := range []string{"32768K", "1M", "512", "1G", "-1K", "9223372036854775807K"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseCacheSize(s)
		if err == nil && (n <= 0 || n > maxCacheBytes) {
			t.Fatalf("ParseCacheSize(%q) = %d", s, n)
		}
	})
}

func TestLLCSize(t *testing.T) {
	write := func(dir, index, level, typ, size string) {
		d := filepath.Join(dir, index)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, v := range map[string]string{"level": level, "type": typ, "size": size} {
			if v != "" {
				if err := os.WriteFile(filepath.Join(d, name), []byte(v+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	dir := t.TempDir()
	write(dir, "index0", "1", "Data", "48K")
	write(dir, "index1", "1", "Instruction", "32K")
	write(dir, "index2", "2", "Unified", "2048K")
	write(dir, "index3", "3", "Unified", "32768K")
	if got, ok := LLCSize(dir); !ok || got != 32<<20 {
		t.Errorf("LLCSize = %d, %v; want 32 MiB from sysfs", got, ok)
	}
	noL3 := t.TempDir()
	write(noL3, "index0", "1", "Data", "64K")
	write(noL3, "index2", "2", "Unified", "bogus")
	write(noL3, "index3", "2", "Unified", "1M")
	if got, ok := LLCSize(noL3); !ok || got != 1<<20 {
		t.Errorf("LLCSize without L3 = %d, %v; want the 1 MiB L2", got, ok)
	}
	for _, d := range []string{t.TempDir(), filepath.Join(dir, "missing")} {
		if got, ok := LLCSize(d); ok || got != DefaultLLCBytes {
			t.Errorf("LLCSize(%s) = %d, %v; want the default and false", d, got, ok)
		}
	}
	if got, ok := LLCSize(SysCacheDir); ok && got <= 0 {
		t.Errorf("this machine's LLC: %d", got)
	}
}
