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
// is, and how frame work varies from frame to frame. An active frame does
// units × multiplier work units: first the compute part (ComputeIters per
// unit of register-only work: layout, input, logic), then the composition
// burst: Layers source layers blended into the frame buffer, MemBytes of
// each read and MemBytes written per unit (see blend), every layer a
// sequential stream through its own region of a buffer far larger than the
// last-level cache, so Layers+1 streams cross the memory bus at once as in
// a real compositor. The multiplier is lognormal with median 1 and
// log-standard-deviation Jitter (content changes from frame to frame),
// times HeavyFactor on every HeavyEvery-th frame (an image decoded, a
// level loaded).
//
// Apps with gestures alternate active and resting spells: the user flings
// (about FlingFrames frames of scrolling, lognormal), then reads (about
// RestFrames). A resting frame composes nothing, since nothing on screen
// changed (compositors redraw only damaged regions), and does RestCompute
// of an active frame's compute (input polling, a small animation). Without
// FlingFrames every frame is active. On the machine shade is measured on
// one unit is about a microsecond of work; the units per frame are
// calibrated (Calibrate).
type Profile struct {
	Name         string
	Summary      string
	MemBytes     int     // destination bytes composed per unit (each layer reads as many)
	Layers       int     // source layers blended per burst
	ComputeIters int     // compute rounds per unit
	Jitter       float64 // σ of the log of the per-frame multiplier
	HeavyEvery   int     // 0: no heavy frames
	HeavyFactor  float64
	FlingFrames  int     // median frames of an active spell (0: always active)
	RestFrames   int     // median frames of a resting spell
	RestCompute  float64 // a resting frame's compute ÷ an active frame's
}

// profiles: the compute/memory split is set for a machine where a core
// blends three layers at ≈12 GB/s (read + written) and runs a compute
// round in ≈2 ns: scroll and social spend about half of an active frame in
// the composition burst (≈2 ms at 120 Hz) and rest between flings of
// about 0.75 s; video composes two layers (a video plane under the
// controls) steadily; game blends four layers (scene, effects, HUD, UI)
// after heavy compute.
var profiles = []Profile{
	{Name: "scroll", Summary: "scrolling a list: flings of ~0.75 s and rests of ~0.5 s; light compute and a ~2 ms three-layer composition per active frame",
		MemBytes: 3 << 10, Layers: 3, ComputeIters: 256, Jitter: 0.3, FlingFrames: 90, RestFrames: 60, RestCompute: 0.1},
	{Name: "video", Summary: "video playback: steady compute and a two-layer composition every frame",
		MemBytes: 4 << 10, Layers: 2, ComputeIters: 230, Jitter: 0.2},
	{Name: "game", Summary: "a game: heavy compute and a four-layer composition every frame",
		MemBytes: 2 << 10, Layers: 4, ComputeIters: 320, Jitter: 0.2},
	{Name: "social", Summary: "a social feed: scroll-like flings and rests, with an image decoded (1.6× the work) every 8th frame",
		MemBytes: 3 << 10, Layers: 3, ComputeIters: 256, Jitter: 0.25, HeavyEvery: 8, HeavyFactor: 1.6,
		FlingFrames: 90, RestFrames: 60, RestCompute: 0.1},
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

// MaxLayers bounds a profile's composition layers.
const MaxLayers = 16

func (p Profile) validate() error {
	if p.MemBytes < 0 || p.ComputeIters < 0 || p.MemBytes+p.ComputeIters == 0 || p.MemBytes > 1<<20 || p.ComputeIters > 1<<20 {
		return fmt.Errorf("qos: profile %q: work per unit must be positive and under 1 Mi", p.Name)
	}
	if p.MemBytes > 0 && (p.Layers < 1 || p.Layers > MaxLayers) {
		return fmt.Errorf("qos: profile %q: %d composition layers, want 1 to %d", p.Name, p.Layers, MaxLayers)
	}
	if p.Jitter < 0 || p.Jitter > 1 || p.HeavyEvery < 0 || (p.HeavyEvery > 0 && (p.HeavyFactor < 1 || p.HeavyFactor > 10)) {
		return fmt.Errorf("qos: profile %q: jitter in [0, 1], heavy factor in [1, 10]", p.Name)
	}
	if p.FlingFrames < 0 || p.FlingFrames > 1e6 || p.RestFrames < 0 || p.RestFrames > 1e6 ||
		(p.FlingFrames > 0 && (p.RestFrames < 1 || !(p.RestCompute >= 0 && p.RestCompute <= 1))) {
		return fmt.Errorf("qos: profile %q: fling and rest spells of 1 to 1e6 frames, rest compute in [0, 1]", p.Name)
	}
	return nil
}

// frameWork is what one frame does, relative to units: its compute
// (× ComputeIters) and its composition (× MemBytes).
type frameWork struct {
	compute, compose float64
}

// schedule deals the frames' work in order: the lognormal multiplier from
// one random stream and the gesture spells from another, so that a seed
// gives the same work frame for frame in every run.
type schedule struct {
	prof    Profile
	rng     *rand.Rand // per-frame multiplier
	gesture *rand.Rand // spell lengths
	left    int        // frames left in the current spell
	resting bool
}

func newSchedule(prof Profile, seed, stream uint64) *schedule {
	return &schedule{prof: prof, rng: rand.New(rand.NewPCG(seed, stream)), gesture: rand.New(rand.NewPCG(seed, stream^0x6e57))}
}

// spellSigma is the σ of the log of a spell's length.
const spellSigma = 0.5

// next is frame i's work (frames must be asked for in order).
func (s *schedule) next(frame int) frameWork {
	m := math.Exp(s.prof.Jitter * s.rng.NormFloat64())
	if s.prof.HeavyEvery > 0 && frame%s.prof.HeavyEvery == s.prof.HeavyEvery-1 {
		m *= s.prof.HeavyFactor
	}
	if s.prof.FlingFrames == 0 {
		return frameWork{m, m}
	}
	for s.left <= 0 {
		if frame > 0 || s.left < 0 {
			s.resting = !s.resting
		}
		median := s.prof.FlingFrames
		if s.resting {
			median = s.prof.RestFrames
		}
		s.left = max(1, int(math.Round(float64(median)*math.Exp(spellSigma*s.gesture.NormFloat64()))))
	}
	s.left--
	if s.resting {
		return frameWork{m * s.prof.RestCompute, 0}
	}
	return frameWork{m, m}
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

// laneSkew is the offset in words between the composition's regions
// beyond their length: 67 cache lines, so that the streams fall on
// different cache sets and DRAM banks.
const laneSkew = 67 * 8

// Sim is the foreground frame loop of one profile.
type Sim struct {
	prof   Profile
	period time.Duration
	units  float64
	seed   uint64
	buf    []uint64
	lanes  [][]uint64 // the destination, then the source layers
	cursor int        // next word of every lane
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
	// Every layer, and the destination, streams through its own region.
	// Region i starts i×laneSkew words past a multiple of the region
	// length: regions a power of two apart would map the streams' words to
	// the same cache sets and DRAM banks, and the conflicts between them,
	// not the bus, would set the burst's speed.
	n := max(prof.Layers, 1) + 1
	lane := (len(s.buf) - n*laneSkew) / n &^ (blendBlock - 1)
	if lane <= 0 {
		return nil, fmt.Errorf("qos: burst buffer of %d bytes too small for %d layers", bufBytes, prof.Layers)
	}
	for i := range n {
		at := i * (lane + laneSkew)
		s.lanes = append(s.lanes, s.buf[at:at+lane])
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

// work does one frame's work: compute×units compute units, then a
// composition of compose×units units, continuing through the lanes where
// the last frame stopped (wrapping around at their end).
func (s *Sim) work(units float64, w frameWork) {
	s.sink ^= compute(int(units*w.compute*float64(s.prof.ComputeIters)), s.sink)
	words := int(units*w.compose*float64(s.prof.MemBytes)/8) &^ (blendBlock - 1)
	lane := len(s.lanes[0])
	words = min(words, lane)
	for words > 0 {
		if s.cursor+blendBlock > lane {
			s.cursor = 0
		}
		n := min(words, lane-s.cursor)
		end := s.cursor + n
		var srcs [MaxLayers][]uint64
		for i, l := range s.lanes[1:] {
			srcs[i] = l[s.cursor:end]
		}
		s.sink ^= blend(s.lanes[0][s.cursor:end], srcs[:len(s.lanes)-1], s.sink)
		s.cursor = end
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
	sched := newSchedule(s.prof, s.seed, 0x9051)
	frames := make([]Frame, 0, int(d/s.period)+16)
	origin := Now() + int64(s.period/2)
	stop := origin + int64(d)
	start := origin
	for i := 0; start < stop; i++ {
		if err := ctx.Err(); err != nil {
			return frames, err
		}
		waitUntil(start)
		cpu0 := ThreadCPUTime()
		s.work(s.units, sched.next(i))
		end, cpu1 := Now(), ThreadCPUTime()
		f := Frame{Start: start, End: end}
		if cpu0 >= 0 && cpu1 > cpu0 {
			f.CPU = cpu1 - cpu0
		}
		frames = append(frames, f)
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
// paced run of checkFor and corrects once from the measured percentile
// (by at most a third) if the jank is off by more than a factor of 1.6. On a loaded machine the
// measured cost is higher, so the loop does less work: calibrate once and
// pass the units to every run of an experiment.
func (s *Sim) Calibrate(ctx context.Context, targetPct float64, checkFor time.Duration) (Calibration, error) {
	if !(targetPct > 0 && targetPct < 50) {
		return Calibration{}, fmt.Errorf("qos: target jank %v%% outside (0, 50)", targetPct)
	}
	t0 := time.Now()
	const probe = 1000.0
	active := frameWork{1, 1}
	for range 5 { // warm caches and page tables
		s.work(probe, active)
	}
	var per []float64
	for range 25 {
		a := Now()
		s.work(probe, active)
		per = append(per, float64(Now()-a)/probe)
	}
	slices.Sort(per)
	c := Calibration{NsPerUnit: Percentile(per, 50), TargetJankPct: targetPct}
	// A resting frame's cost is taken as its compute share of an active
	// one's: an overestimate (compute is the cheaper part), harmless since
	// resting frames are far below the deadline.
	sched := newSchedule(s.prof, s.seed, 0xca11)
	mult := make([]float64, 20000)
	for i := range mult {
		w := sched.next(i)
		mult[i] = max(w.compute, w.compose)
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
		// A stall from another process can dominate a short check run: trust
		// it to correct the estimate by at most a third either way.
		f := min(max(float64(s.period)/Percentile(times, 100-targetPct), 0.75), 4.0/3)
		if err := s.SetUnits(s.units * f); err != nil {
			return c, err
		}
	}
	c.Units = s.units
	c.Seconds = time.Since(t0).Seconds()
	return c, nil
}
