package qos

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// BackgroundResult is what a background workload did during a run.
type BackgroundResult struct {
	Tokens int           `json:"tokens"`    // LLM tokens generated (0 for other workloads)
	Busy   time.Duration `json:"busy_ns"`   // time spent working (generating, not idle)
	Sleep  time.Duration `json:"sleep_ns"`  // time the workload's pacing slept within Busy
	Active time.Duration `json:"active_ns"` // wall time it was switched on (sporadic: the duty part)
	Wall   time.Duration `json:"wall_ns"`   // wall time of the whole run, idle included
	// Samples are its contention sensor's readings, if it has one.
	Samples []Sample `json:"-"`
	// Notes carry workload-specific counters (preemptions, filled nodes…).
	Notes map[string]float64 `json:"notes,omitempty"`
}

// TokPerS is the generation rate while the workload was on.
func (r BackgroundResult) TokPerS() float64 { return rate(r.Tokens, r.Active) }

// EffectiveTokPerS counts idle time too (sporadic workloads).
func (r BackgroundResult) EffectiveTokPerS() float64 { return rate(r.Tokens, r.Wall) }

func rate(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// add folds another result (a later burst) into r.
func (r *BackgroundResult) add(o BackgroundResult) {
	r.Tokens += o.Tokens
	r.Busy += o.Busy
	r.Sleep += o.Sleep
	r.Samples = append(r.Samples, o.Samples...)
	for k, v := range o.Notes {
		if r.Notes == nil {
			r.Notes = map[string]float64{}
		}
		r.Notes[k] += v
	}
}

// Background is a workload run beside the foreground. Run works until ctx
// is done and then returns what it did; ending because ctx is done is not
// an error. Run may be called again for a new burst (Sporadic does).
type Background interface {
	Run(ctx context.Context) (BackgroundResult, error)
}

// BackgroundFunc adapts a function to Background.
type BackgroundFunc func(ctx context.Context) (BackgroundResult, error)

// Run calls f.
func (f BackgroundFunc) Run(ctx context.Context) (BackgroundResult, error) { return f(ctx) }

// readyKey keys the harness's readiness in a background's context.
type readyKey struct{}

// readiness is closed when the background says it is ready.
type readiness struct {
	once sync.Once
	ch   chan struct{}
	at   time.Time
}

// Ready tells the harness, through the context a Background's Run was
// given, that the workload has reached its steady state (an LLM: its
// prompt is in and it is generating), so that the foreground's measured
// run starts now (see Pair.WarmUp). It reports whether this call was the
// one that started it: then the workload's measured result should count
// only what it does from here on. Later calls, and calls outside a
// waiting harness, return false.
func Ready(ctx context.Context) bool {
	r, ok := ctx.Value(readyKey{}).(*readiness)
	if !ok {
		return false
	}
	first := false
	r.once.Do(func() {
		r.at = time.Now()
		close(r.ch)
		first = true
	})
	return first
}

// Idle is the empty workload: the foreground runs alone ("native").
func Idle() Background {
	return BackgroundFunc(func(ctx context.Context) (BackgroundResult, error) {
		Ready(ctx)
		<-ctx.Done()
		return BackgroundResult{}, nil
	})
}

// Sporadic runs bg for duty × period at the start of every period and
// leaves the machine idle for the rest, as background requests that come
// and go do. Active is the time bg was on; Wall (set by the harness)
// includes the idle time, so EffectiveTokPerS counts it.
func Sporadic(bg Background, duty float64, period time.Duration) (Background, error) {
	if !(duty > 0 && duty <= 1) || period <= 0 {
		return nil, fmt.Errorf("qos: sporadic duty %v must be in (0, 1] and period %v positive", duty, period)
	}
	on := time.Duration(duty * float64(period))
	return BackgroundFunc(func(ctx context.Context) (BackgroundResult, error) {
		var total BackgroundResult
		for {
			start := time.Now()
			burstCtx, cancel := context.WithTimeout(ctx, on)
			r, err := bg.Run(burstCtx)
			cancel()
			total.add(r)
			total.Active += time.Since(start)
			if err != nil && ctx.Err() == nil {
				return total, err
			}
			select {
			case <-ctx.Done():
				return total, nil
			case <-time.After(time.Until(start.Add(period))):
			}
		}
	}), nil
}

// Pair configures one run of the foreground beside a background workload.
type Pair struct {
	Profile  string
	Hz       float64       // default 120
	Duration time.Duration // of the foreground's measured run
	Units    float64       // work units per frame (0: the child calibrates)
	Seed     uint64        // the foreground's work sequence
	FgCPU    int           // the child's CPU
	BgCPU    int           // this process's CPU while the background runs; < 0: no pinning
	// Command starts the foreground child with the given `shade fg`
	// arguments; default ForegroundCommand (this executable's fg).
	Command func(ctx context.Context, args []string) (*exec.Cmd, error)
	// TempDir holds the frames file (default os.TempDir()).
	TempDir string
	// BufferBytes is the foreground's burst buffer (0: the child's
	// default, BufferLLCMultiple × the LLC).
	BufferBytes int64
	// WarmUp, if positive, holds the foreground back until the background
	// calls Ready (an LLM once its prompt is in: a prefill is not the
	// steady state being measured), for at most WarmUp; the background's
	// result then counts from that moment. 0: the foreground starts at once.
	WarmUp time.Duration
}

// ForegroundCommand runs `EXECUTABLE fg ARGS…`: this very program, which
// works for a built shade binary and for `go run`.
func ForegroundCommand(ctx context.Context, args []string) (*exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("qos: finding this executable to run the foreground: %w", err)
	}
	return exec.CommandContext(ctx, exe, append([]string{"fg"}, args...)...), nil
}

// PairResult is one run's outcome.
type PairResult struct {
	Foreground ForegroundReport `json:"foreground"`
	Background BackgroundResult `json:"background"`
}

// foregroundArgs are the `shade fg` flags of a run.
func (p *Pair) foregroundArgs(framesPath string, calibrateOnly bool) []string {
	hz := p.Hz
	if hz == 0 {
		hz = 120
	}
	args := []string{"--profile", p.Profile, "--hz", strconv.FormatFloat(hz, 'g', -1, 64),
		"--cpu", strconv.Itoa(p.FgCPU), "--seed", strconv.FormatUint(p.Seed, 10), "--json"}
	if p.BufferBytes > 0 {
		args = append(args, "--buffer-mib", strconv.FormatInt(max(1, p.BufferBytes>>20), 10))
	}
	if calibrateOnly {
		return append(args, "--calibrate-only")
	}
	args = append(args, "--seconds", strconv.FormatFloat(p.Duration.Seconds(), 'g', -1, 64))
	if p.Units > 0 {
		args = append(args, "--units", strconv.FormatFloat(p.Units, 'g', -1, 64))
	}
	if framesPath != "" {
		args = append(args, "--frames", framesPath)
	}
	return args
}

// runChild runs the foreground child and decodes its JSON report.
func (p *Pair) runChild(ctx context.Context, args []string) (ForegroundReport, error) {
	command := p.Command
	if command == nil {
		command = ForegroundCommand
	}
	cmd, err := command(ctx, args)
	if err != nil {
		return ForegroundReport{}, err
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return ForegroundReport{}, fmt.Errorf("qos: foreground %v: %w: %s", args, err, bytes.TrimSpace(stderr.Bytes()))
	}
	var rep ForegroundReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		return rep, fmt.Errorf("qos: foreground printed no JSON report: %w", err)
	}
	return rep, nil
}

// Calibrate runs the foreground child alone to calibrate its work units
// (see Sim.Calibrate) and returns its report (Units, Calibration).
func (p *Pair) Calibrate(ctx context.Context) (ForegroundReport, error) {
	return p.runChild(ctx, p.foregroundArgs("", true))
}

// Run runs the foreground as a child process on FgCPU for Duration while bg
// runs in this process pinned to BgCPU, from just before the child starts
// until it exits; then collects the child's frames and bg's result.
func (p *Pair) Run(ctx context.Context, bg Background) (PairResult, error) {
	var res PairResult
	if p.Duration <= 0 {
		return res, errors.New("qos: a run needs a positive duration")
	}
	dir := p.TempDir
	if dir == "" {
		dir = os.TempDir()
	}
	f, err := os.CreateTemp(dir, "shade-frames-*.csv")
	if err != nil {
		return res, err
	}
	framesPath := f.Name()
	f.Close()
	defer os.Remove(framesPath)

	if p.BgCPU >= 0 {
		restore, err := PinProcessTemporarily(p.BgCPU)
		if err != nil {
			return res, err
		}
		defer restore()
	}
	rd := &readiness{ch: make(chan struct{})}
	bgCtx, stopBg := context.WithCancel(context.WithValue(ctx, readyKey{}, rd))
	defer stopBg()
	var wg sync.WaitGroup
	var bgErr error
	bgStart := time.Now()
	bgDone := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(bgDone)
		res.Background, bgErr = bg.Run(bgCtx)
		res.Background.Wall = time.Since(bgStart)
	}()
	if p.WarmUp > 0 {
		select {
		case <-rd.ch:
		case <-bgDone:
		case <-time.After(p.WarmUp):
		case <-ctx.Done():
		}
	}
	fg, fgErr := p.runChild(ctx, p.foregroundArgs(framesPath, false))
	stopBg()
	wg.Wait()
	if p.WarmUp > 0 {
		select {
		case <-rd.ch: // the measured run began when the background was ready
			if !rd.at.IsZero() && rd.at.After(bgStart) {
				res.Background.Wall -= rd.at.Sub(bgStart)
			}
		default:
		}
	}
	if res.Background.Active == 0 || res.Background.Active > res.Background.Wall {
		res.Background.Active = res.Background.Wall
	}
	if fgErr != nil {
		return res, fgErr
	}
	if bgErr != nil && !errors.Is(bgErr, context.Canceled) {
		return res, fmt.Errorf("qos: background: %w", bgErr)
	}
	if fg.Frames, err = ReadFramesFile(framesPath); err != nil {
		return res, err
	}
	res.Foreground = fg
	return res, ctx.Err()
}

// SaveRun writes a run's frames (frames-PROFILE-POLICY-REP.csv, see
// WriteFrames) and its background's samples (samples-….csv: t_ns,value)
// into dir, for analysis beyond the report.
func SaveRun(dir, profile, policy string, rep int, r *PairResult) error {
	name := fmt.Sprintf("%s-%s-%d.csv", profile, policy, rep)
	if err := WriteFramesFile(filepath.Join(dir, "frames-"+name), r.Foreground.Frames); err != nil {
		return err
	}
	var b bytes.Buffer
	b.WriteString("t_ns,value\n")
	for _, s := range r.Background.Samples {
		fmt.Fprintf(&b, "%d,%g\n", s.T, s.Value)
	}
	return os.WriteFile(filepath.Join(dir, "samples-"+name), b.Bytes(), 0o644)
}
