package qos

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// Profile is a kind of foreground app: what one work unit of its frames
// is, and how frame work varies from frame to frame. A frame does
// units × multiplier work units: first the compute part (ComputeIters per
// unit of register-only work: layout, input, logic), then the composition
// burst (MemBytes per unit streamed read+write through a buffer far larger
// than the last-level cache). The multiplier is lognormal with median 1
// and log-standard-deviation Jitter (content changes from frame to frame),
// times HeavyFactor on every HeavyEvery-th frame (an image decoded, a
// level loaded). On the machine shade is measured on one unit is about a
// microsecond of work; the units per frame are calibrated (Calibrate).
type Profile struct {
	Name         string
	Summary      string
	MemBytes     int     // streamed (read and written) per unit
	ComputeIters int     // compute rounds per unit
	Jitter       float64 // σ of the log of the per-frame multiplier
	HeavyEvery   int     // 0: no heavy frames
	HeavyFactor  float64
}

// profiles: the compute/memory split is set for a machine where a core
// streams ≈19 GB/s read+write and runs a compute round in ≈2 ns: scroll
// and social spend ≈45% of a frame in the memory burst (≈2 ms at 120 Hz),
// video ≈50% in steadier frames, game ≈65% in compute with a large burst
// as well.
var profiles = []Profile{
	{Name: "scroll", Summary: "scrolling a list: light compute, a ~2 ms composition burst, frame-to-frame variety",
		MemBytes: 8 << 10, ComputeIters: 256, Jitter: 0.3},
	{Name: "video", Summary: "video playback: steady moderate compute and memory every frame",
		MemBytes: 9 << 10, ComputeIters: 230, Jitter: 0.2},
	{Name: "game", Summary: "a game: heavy compute and a large burst every frame",
		MemBytes: 6 << 10, ComputeIters: 320, Jitter: 0.2},
	{Name: "social", Summary: "a social feed: scroll-like, with an image decoded (1.6× the work) every 8th frame",
		MemBytes: 8 << 10, ComputeIters: 256, Jitter: 0.25, HeavyEvery: 8, HeavyFactor: 1.6},
}

// Profiles returns the built-in foreground profiles.
func Profiles() []Profile { return slices.Clone(profiles) }

// LookupProfile returns the profile with the given name.
func LookupProfile(name string) (Profile, error) {
	for _, p := range profiles {
		if p.Name == name {
			return p, nil
		}
	}
	var names []string
	for _, p := range profiles {
		names = append(names, p.Name)
	}
	return Profile{}, fmt.Errorf("qos: unknown profile %q (want %s)", name, strings.Join(names, ", "))
}

func (p Profile) validate() error {
	if p.MemBytes < 0 || p.ComputeIters < 0 || p.MemBytes+p.ComputeIters == 0 || p.MemBytes > 1<<20 || p.ComputeIters > 1<<20 {
		return fmt.Errorf("qos: profile %q: work per unit must be positive and under 1 Mi", p.Name)
	}
	if p.Jitter < 0 || p.Jitter > 1 || p.HeavyEvery < 0 || (p.HeavyEvery > 0 && (p.HeavyFactor < 1 || p.HeavyFactor > 10)) {
		return fmt.Errorf("qos: profile %q: jitter in [0, 1], heavy factor in [1, 10]", p.Name)
	}
	return nil
}

// multipliers returns the work multipliers of frames 0, 1, … n−1 drawn
// from rng.
func (p Profile) multiplier(rng *rand.Rand, frame int) float64 {
	m := math.Exp(p.Jitter * rng.NormFloat64())
	if p.HeavyEvery > 0 && frame%p.HeavyEvery == p.HeavyEvery-1 {
		m *= p.HeavyFactor
	}
	return m
}

// Limits on the simulator's inputs.
const (
	MinHz    = 10
	MaxHz    = 480
	MaxUnits = 1e6
	// BufferLLCMultiple is how many times the last-level cache the burst
	// buffer is: a frame's burst then always reads lines evicted long ago.
	BufferLLCMultiple = 16
)

// Sim is the foreground frame loop of one profile.
type Sim struct {
	prof   Profile
	period time.Duration
	units  float64
	seed   uint64
	buf    []uint64
	cursor int
	sink   uint64
}

// NewSim allocates the burst buffer (bufBytes, normally
// BufferLLCMultiple × LLCSize) and touches every page of it, so that
// bursts hit DRAM and not the kernel's zero page.
func NewSim(prof Profile, hz float64, bufBytes int64, seed uint64) (*Sim, error) {
	if err := prof.validate(); err != nil {
		return nil, err
	}
	if !(hz >= MinHz && hz <= MaxHz) {
		return nil, fmt.Errorf("qos: refresh rate %v Hz outside [%d, %d]", hz, MinHz, MaxHz)
	}
	if bufBytes < 1<<20 || bufBytes > 64<<30 {
		return nil, fmt.Errorf("qos: burst buffer of %d bytes outside [1 MiB, 64 GiB]", bufBytes)
	}
	s := &Sim{prof: prof, period: time.Duration(float64(time.Second) / hz), seed: seed,
		buf: make([]uint64, bufBytes/8)}
	for i := range s.buf {
		s.buf[i] = uint64(i)
	}
	return s, nil
}

// Period is the frame period (the deadline of a frame after its tick).
func (s *Sim) Period() time.Duration { return s.period }

// Units is the work units per frame before the multiplier.
func (s *Sim) Units() float64 { return s.units }

// SetUnits fixes the work units per frame (a calibration made elsewhere).
func (s *Sim) SetUnits(u float64) error {
	if !(u > 0 && u <= MaxUnits) {
		return fmt.Errorf("qos: work units %v outside (0, %g]", u, float64(MaxUnits))
	}
	s.units = u
	return nil
}

// work does one frame's work of units × mult units.
func (s *Sim) work(units float64) {
	s.sink ^= compute(int(units*float64(s.prof.ComputeIters)), s.sink)
	words := int(units*float64(s.prof.MemBytes)/8) &^ 7
	words = min(words, len(s.buf)&^7)
	for words > 0 {
		if s.cursor+8 > len(s.buf) {
			s.cursor = 0
		}
		n := min(words, (len(s.buf)-s.cursor)&^7)
		s.sink ^= streamRW(s.buf[s.cursor:s.cursor+n], s.sink)
		s.cursor += n
		words -= n
	}
}

// Run runs frames on the vsync grid for d (or until ctx is done), starting
// on the first tick half a period from now, and returns them. Frame i
// starts on a tick (see NextStart): the loop sleeps until shortly before
// it and spins the rest, so that wake-up latency does not count as work.
func (s *Sim) Run(ctx context.Context, d time.Duration) ([]Frame, error) {
	if s.units <= 0 {
		return nil, errors.New("qos: work units not set (Calibrate or SetUnits)")
	}
	if d <= 0 || d > 24*time.Hour {
		return nil, fmt.Errorf("qos: run length %v outside (0, 24h]", d)
	}
	rng := rand.New(rand.NewPCG(s.seed, 0x9051))
	frames := make([]Frame, 0, int(d/s.period)+16)
	origin := Now() + int64(s.period/2)
	stop := origin + int64(d)
	start := origin
	for i := 0; start < stop; i++ {
		if err := ctx.Err(); err != nil {
			return frames, err
		}
		waitUntil(start)
		s.work(s.units * s.prof.multiplier(rng, i))
		end := Now()
		frames = append(frames, Frame{Start: start, End: end})
		start = NextStart(origin, start, end, s.period)
	}
	return frames, nil
}

// spinWindow is how long before a tick the loop stops sleeping and spins:
// more than the timer's usual lateness.
const spinWindow = 300 * time.Microsecond

func waitUntil(t int64) {
	if d := time.Duration(t - Now()); d > spinWindow {
		time.Sleep(d - spinWindow)
	}
	for Now() < t {
	}
}

// Calibration is how the work units per frame were chosen.
type Calibration struct {
	NsPerUnit       float64 `json:"ns_per_unit"`        // measured on the quiet core
	Units           float64 `json:"units"`              // chosen units per frame
	TargetJankPct   float64 `json:"target_jank_pct"`    //
	PredictedJank   float64 `json:"predicted_jank_pct"` // from NsPerUnit and the multiplier distribution
	MeasuredJankPct float64 `json:"measured_jank_pct"`  // in the check run with Units
	MedianFraction  float64 `json:"median_fraction"`    // check run's median frame time ÷ period
	Seconds         float64 `json:"seconds"`
}

// Calibrate chooses the work units per frame so that, alone on its core,
// the loop misses about targetPct percent of deadlines. A frame starts on
// a tick and is janky when it takes longer than a period, whatever the
// frame before it did, so jank is the share of frames whose work exceeds a
// period: it measures the time per unit (unpaced frames at fixed work),
// sets units so that the (100 − targetPct)-th percentile of the
// multiplier distribution times that cost is a period, then checks with a
// paced run of checkFor and corrects once from the measured percentile if
// the jank is off by more than a factor of 1.6. On a loaded machine the
// measured cost is higher, so the loop does less work: calibrate once and
// pass the units to every run of an experiment.
func (s *Sim) Calibrate(ctx context.Context, targetPct float64, checkFor time.Duration) (Calibration, error) {
	if !(targetPct > 0 && targetPct < 50) {
		return Calibration{}, fmt.Errorf("qos: target jank %v%% outside (0, 50)", targetPct)
	}
	t0 := time.Now()
	const probe = 1000.0
	for range 5 { // warm caches and page tables
		s.work(probe)
	}
	var per []float64
	for range 25 {
		a := Now()
		s.work(probe)
		per = append(per, float64(Now()-a)/probe)
	}
	slices.Sort(per)
	c := Calibration{NsPerUnit: Percentile(per, 50), TargetJankPct: targetPct}
	rng := rand.New(rand.NewPCG(s.seed, 0xca11))
	mult := make([]float64, 20000)
	for i := range mult {
		mult[i] = s.prof.multiplier(rng, i)
	}
	slices.Sort(mult)
	q := Percentile(mult, 100-targetPct)
	if err := s.SetUnits(float64(s.period) / (c.NsPerUnit * q)); err != nil {
		return c, err
	}
	c.PredictedJank = targetPct
	for round := 0; round < 2; round++ {
		frames, err := s.Run(ctx, checkFor)
		if err != nil {
			return c, err
		}
		sum := Summarize(frames, s.period)
		c.MeasuredJankPct, c.MedianFraction = sum.JankPct, sum.P50Ms/sum.PeriodMs
		if round == 1 || (sum.JankPct >= targetPct/1.6 && sum.JankPct <= targetPct*1.6) {
			break
		}
		times := make([]float64, len(frames))
		for i, f := range frames {
			times[i] = float64(f.Duration())
		}
		slices.Sort(times)
		if err := s.SetUnits(s.units * float64(s.period) / Percentile(times, 100-targetPct)); err != nil {
			return c, err
		}
	}
	c.Units = s.units
	c.Seconds = time.Since(t0).Seconds()
	return c, nil
}
