package qos

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The harness runs the foreground as a child process. In tests the child
// is this test binary, which with QOS_TEST_FOREGROUND set behaves like
// `shade fg` (the flags the harness passes) on a small burst buffer.
func TestMain(m *testing.M) {
	// Also on "fg" alone: a test that reaches ForegroundCommand must not
	// start the whole test suite again in a child.
	if os.Getenv("QOS_TEST_FOREGROUND") == "1" || (len(os.Args) > 1 && os.Args[1] == "fg") {
		os.Exit(testForeground(os.Args[1:]))
	}
	os.Exit(m.Run())
}

func testForeground(args []string) int {
	if len(args) == 0 || args[0] != "fg" {
		fmt.Fprintln(os.Stderr, "test child: want fg ARGS")
		return 2
	}
	fs := flag.NewFlagSet("fg", flag.ContinueOnError)
	profile := fs.String("profile", "", "")
	hz := fs.Float64("hz", 120, "")
	seconds := fs.Float64("seconds", 1, "")
	cpu := fs.Int("cpu", -1, "")
	units := fs.Float64("units", 0, "")
	seed := fs.Uint64("seed", 1, "")
	frames := fs.String("frames", "", "")
	fs.Bool("json", true, "")
	fs.Int("buffer-mib", 0, "")
	calibrateOnly := fs.Bool("calibrate-only", false, "")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	prof, err := LookupProfile(*profile)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	rep, err := RunForeground(context.Background(), ForegroundOptions{Profile: prof, Hz: *hz,
		Duration: time.Duration(*seconds * float64(time.Second)), CPU: *cpu, Units: *units, Seed: *seed,
		BufferBytes: 16 << 20, CheckFor: 200 * time.Millisecond, CalibrateOnly: *calibrateOnly})
	if ms := os.Getenv("QOS_TEST_STOLEN_MS"); ms != "" && err == nil {
		fmt.Sscan(ms, &rep.RunqueueWaitMs) // pretend another process took the core
	}
	if err == nil && *frames != "" {
		err = WriteFramesFile(*frames, rep.Frames)
	}
	if err == nil {
		err = json.NewEncoder(os.Stdout).Encode(rep)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func testCommand(ctx context.Context, args []string) (*exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, exe, append([]string{"fg"}, args...)...)
	cmd.Env = append(os.Environ(), "QOS_TEST_FOREGROUND=1")
	return cmd, nil
}

// memoryHog is a fake background: it streams through a buffer and reports
// each pass's time as a sample.
func memoryHog(buf []uint64) Background {
	for i := range buf {
		buf[i] = uint64(i)
	}
	return BackgroundFunc(func(ctx context.Context) (BackgroundResult, error) {
		var r BackgroundResult
		t0 := time.Now()
		for ctx.Err() == nil {
			a := Now()
			streamRW(buf, 1)
			r.Tokens++
			r.Samples = append(r.Samples, Sample{T: Now(), Value: float64(Now() - a)})
		}
		r.Busy = time.Since(t0)
		return r, nil
	})
}

func cpus() (fg, bg int) {
	if fg = LastCPU(); fg > 0 {
		return fg, 0
	}
	return 0, -1 // one CPU: no pinning of the background
}

func TestPairEndToEnd(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the harness pins CPUs: Linux only")
	}
	fgCPU, bgCPU := cpus()
	pair := Pair{Profile: "scroll", Duration: time.Second, Units: 1500, FgCPU: fgCPU, BgCPU: bgCPU,
		Command: testCommand, TempDir: t.TempDir()}
	before, _ := ProcessAffinity()
	res, err := pair.Run(context.Background(), memoryHog(make([]uint64, 8<<20)))
	if err != nil {
		t.Fatal(err)
	}
	if after, _ := ProcessAffinity(); after != before {
		t.Errorf("the harness left this process's affinity changed")
	}
	fg, bg := res.Foreground, res.Background
	if fg.Profile != "scroll" || fg.Units != 1500 || fg.CPU != fgCPU || fg.Calibration != nil {
		t.Errorf("foreground report %+v", fg)
	}
	if len(fg.Frames) < 30 || fg.Summary.Frames != len(fg.Frames) {
		t.Fatalf("%d frames in the file, %d in the summary", len(fg.Frames), fg.Summary.Frames)
	}
	if bg.Tokens == 0 || len(bg.Samples) == 0 || bg.Wall < time.Second || bg.Active != bg.Wall {
		t.Errorf("background result: %d passes, %d samples, wall %v, active %v", bg.Tokens, len(bg.Samples), bg.Wall, bg.Active)
	}
	// The background ran around the child: its samples cover the frames.
	first, last := fg.Frames[0].Start, fg.Frames[len(fg.Frames)-1].End
	if bg.Samples[0].T > first || bg.Samples[len(bg.Samples)-1].T < last-int64(500*time.Millisecond) {
		t.Errorf("samples [%d, %d] do not cover frames [%d, %d]", bg.Samples[0].T, bg.Samples[len(bg.Samples)-1].T, first, last)
	}

	cal, err := pair.Calibrate(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if cal.Calibration == nil || cal.Units <= 0 || len(cal.Frames) != 0 {
		t.Errorf("calibration report %+v", cal)
	}

	bad := pair
	bad.Profile = "doom"
	if _, err := bad.Run(context.Background(), Idle()); err == nil || !strings.Contains(err.Error(), "doom") {
		t.Errorf("a failing child: err = %v, want its message", err)
	}
}

func TestExperimentEndToEnd(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the harness pins CPUs: Linux only")
	}
	fgCPU, bgCPU := cpus()
	var kept atomic.Int32
	dir := t.TempDir()
	hog := Policy{Name: "hog", Summary: "a memory-streaming loop", New: func() (Background, error) {
		return memoryHog(make([]uint64, 8<<20)), nil
	}}
	e := Experiment{Profiles: []string{"social"}, Policies: []Policy{hog, Native()}, Reps: 1,
		Duration: 700 * time.Millisecond, FgCPU: fgCPU, BgCPU: bgCPU, Seed: 3, Command: testCommand,
		Keep: func(prof, pol string, r int, res *PairResult) error {
			kept.Add(1)
			return SaveRun(dir, prof, pol, r, res)
		}}
	rep, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != 2 || rep.Rows[0].Policy != "native" || rep.Rows[1].Policy != "hog" || kept.Load() != 2 {
		t.Fatalf("rows %+v, %d kept", rep.Rows, kept.Load())
	}
	if fr, err := ReadFramesFile(filepath.Join(dir, "frames-social-hog-0.csv")); err != nil || len(fr) != rep.Rows[1].Runs[0].Summary.Frames {
		t.Errorf("saved frames: %v, %d", err, len(fr))
	}
	if b, err := os.ReadFile(filepath.Join(dir, "samples-social-hog-0.csv")); err != nil || strings.Count(string(b), "\n") != rep.Rows[1].Runs[0].Samples+1 {
		t.Errorf("saved samples: %v", err)
	}
	if rep.Units["social"] <= 0 || rep.Calibration["social"] == nil {
		t.Errorf("no calibration: %+v", rep.Units)
	}
	nat, h := rep.Rows[0], rep.Rows[1]
	if nat.TokPerS != 0 || nat.RValid || math0(nat.MeanSlowdown-1) > 1e-9 {
		t.Errorf("native row: %+v", nat)
	}
	if h.TokPerS <= 0 || h.Runs[0].Samples == 0 || h.Runs[0].Correlation.Windows == 0 || h.MeanSlowdown <= 0 {
		t.Errorf("hog row: %+v", h)
	}
	cannot := Policy{Name: "needs-llm", New: func() (Background, error) { return nil, errors.New("no LLM loaded") }}
	noLLM := Experiment{Profiles: []string{"scroll"}, Policies: []Policy{Native(), cannot}, Duration: time.Second, Command: testCommand}
	if _, err := noLLM.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "no LLM loaded") {
		t.Errorf("a policy that cannot run: %v", err)
	}
}

func math0(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

func TestSporadic(t *testing.T) {
	var bursts atomic.Int32
	work := BackgroundFunc(func(ctx context.Context) (BackgroundResult, error) {
		bursts.Add(1)
		t0 := time.Now()
		<-ctx.Done()
		return BackgroundResult{Tokens: 10, Busy: time.Since(t0)}, nil
	})
	bg, err := Sporadic(work, 0.25, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	r, err := bg.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r.Wall = 700 * time.Millisecond
	// Bursts at 0, 200, 400, 600 ms, each 50 ms long (a loaded machine
	// may start the last one too late to fit).
	n := int(bursts.Load())
	if (n != 4 && n != 3) || r.Tokens != 10*n {
		t.Errorf("%d bursts, %d tokens; want 4 and 40", n, r.Tokens)
	}
	// Active counts the bursts and not the idle time between them. A
	// loaded machine fires the bursts' deadlines late, so the bound is the
	// bursts' own time as the work measured it (Busy), not 50 ms each.
	if on := time.Duration(n) * 50 * time.Millisecond; r.Busy < on*8/10 || r.Active < r.Busy || r.Active > r.Busy+time.Duration(n)*30*time.Millisecond {
		t.Errorf("active %v, busy %v over %d bursts of 50 ms", r.Active, r.Busy, n)
	}
	if r.EffectiveTokPerS() >= r.TokPerS() {
		t.Errorf("effective %v tok/s not below %v", r.EffectiveTokPerS(), r.TokPerS())
	}
	for _, c := range []struct {
		duty float64
		p    time.Duration
	}{{0, time.Second}, {1.5, time.Second}, {0.5, 0}} {
		if _, err := Sporadic(work, c.duty, c.p); err == nil {
			t.Errorf("Sporadic(%v, %v) accepted", c.duty, c.p)
		}
	}
}

func TestLookupPolicies(t *testing.T) {
	idle := func() (Background, error) { return Idle(), nil }
	all := []Policy{Native(), {Name: "ar", New: idle}, {Name: "spec", New: idle}}
	ps, err := LookupPolicies("ar,native,ar", all)
	if err != nil || len(ps) != 2 || ps[0].Name != "ar" || ps[1].Name != "native" {
		t.Fatalf("LookupPolicies = %v, %v", ps, err)
	}
	if _, err := LookupPolicies("ar,bogus", all); err == nil || !strings.Contains(err.Error(), "bogus") || !strings.Contains(err.Error(), "spec") {
		t.Errorf("unknown policy: %v", err)
	}
	for _, list := range []string{"", "all"} {
		if got, err := LookupPolicies(list, all); err != nil || len(got) != len(all) {
			t.Errorf("%q: %d policies, %v", list, len(got), err)
		}
	}
}

// Runs whose foreground lost its core to other processes are run again.
func TestExperimentRetriesNoisyRuns(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the harness pins CPUs: Linux only")
	}
	fgCPU, bgCPU := cpus()
	t.Setenv("QOS_TEST_STOLEN_MS", "200") // 200 ms of a 0.4 s run: 50%
	var log []string
	e := Experiment{Profiles: []string{"scroll"}, Policies: []Policy{Native()}, Reps: 1, Units: 800,
		Duration: 400 * time.Millisecond, FgCPU: fgCPU, BgCPU: bgCPU, Command: testCommand,
		MaxStolenPct: 20, Retries: 2, Progress: func(s string) { log = append(log, s) }}
	rep, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(strings.Join(log, "\n"), "once more"); n != 2 {
		t.Errorf("%d retries, want 2:\n%s", n, strings.Join(log, "\n"))
	}
	if st := rep.Rows[0].StolenPct; st < 40 {
		t.Errorf("stolen %.0f%%, want the last attempt's ≈50%%", st)
	}
	e.MaxStolenPct, log = 60, nil
	if _, err := e.Run(context.Background()); err != nil || strings.Contains(strings.Join(log, "\n"), "once more") {
		t.Errorf("a run under the threshold was retried: %v\n%s", err, strings.Join(log, "\n"))
	}
}

// streamRW reads and writes every word of region once: one stream, the
// simplest out-of-cache burst (memoryHog's load on a core's memory path).
func streamRW(region []uint64, salt uint64) uint64 {
	var acc uint64
	n := len(region) &^ 7
	for i := 0; i < n; i += 8 {
		p := (*[8]uint64)(region[i : i+8])
		p[0] = p[0]*0x9E3779B97F4A7C15 + salt
		p[1] = p[1]*0x9E3779B97F4A7C15 + salt
		p[2] = p[2]*0x9E3779B97F4A7C15 + salt
		p[3] = p[3]*0x9E3779B97F4A7C15 + salt
		p[4] = p[4]*0x9E3779B97F4A7C15 + salt
		p[5] = p[5]*0x9E3779B97F4A7C15 + salt
		p[6] = p[6]*0x9E3779B97F4A7C15 + salt
		p[7] = p[7]*0x9E3779B97F4A7C15 + salt
		acc ^= p[0] ^ p[7]
	}
	return acc
}
