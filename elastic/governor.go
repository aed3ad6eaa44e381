package elastic

import (
	"math"
	"shade/cost"
	"sync"
	"time"

	"shade/speculate"
)

// Verify batch sizes the governor chooses from (like an NPU runtime's
// precompiled graphs): one pass over the target's weights verifies more
// candidates the heavier the contention, so the bytes read per candidate
// fall as the need to yield bandwidth grows.
var VerifyBatches = []int{8, 16, 32}

// Config sets up a Governor.
type Config struct {
	Policy Policy
	// Baselines are the sensor's quiet-machine draft-layer latencies; nil
	// learns them online from the fastest readings (poorer: say so).
	Baselines *Baselines
	// BaselineSource names where Baselines came from, for the stats
	// (the device profile they are from); default "calibrated" with
	// Baselines, "learned online" without.
	BaselineSource string
	Gains          Gains   // zero: DefaultGains
	GuardrailRate  float64 // tokens per second (0: 12)
	Hysteresis     int     // consecutive readings to change state (0: 3)
	LogSize        int     // samples kept in the log (0: 65536)
	// Now is the sample clock in ns (nil: Monotonic). Tests inject it.
	Now func() int64
	// CPUTime, if set, is the process's CPU time in ns (ProcessCPUTime),
	// and Threads the threads the decoder computes with. Each reading is
	// then scaled by the share of the wall time since the last reading the
	// process actually ran (CPU time ÷ (wall × Threads), at most 1): on a
	// shared machine a layer also takes longer when another process takes
	// the core, which is not memory contention. Memory stalls are CPU time,
	// so they stay in the reading.
	CPUTime func() int64
	Threads int
}

// FilterAlpha smooths the contention score the PI controller sees (an
// exponential moving average over readings): single readings carry
// scheduling noise a proportional term would pass straight through. The
// hysteresis works on raw readings.
const FilterAlpha = 0.3

// DefaultGuardrailRate is the token bucket's default rate (tokens/s).
const DefaultGuardrailRate = 12

// GuardrailShare caps the guardrail's rate at this share of what the
// governor measures uncontrolled steps to make (once it has seen a few):
// a guarantee above what the model does on this machine would keep the
// bucket empty and the governor in fallback for good. (The paper's 12
// tok/s was about 60% of its uncontrolled speculative rate.)
const GuardrailShare = 0.6

// Governor is the elastic controller. It implements speculate.Governor and
// speculate.Reporter; all methods are safe for concurrent use (the
// decoder calls from its goroutine, SetPolicy and the readers from others).
// Generations it drives may follow or interleave one another step by step
// (the server's background sessions), but not run steps at the same time:
// a step's draft passes and sleeps are counted as one.
type Governor struct {
	mu     sync.Mutex
	policy Policy
	source string
	gains  Gains
	sensor *Sensor
	pi     PI
	bucket *Bucket
	now    func() int64
	log    sampleLog

	u         float64 // the PI output: 0 (no action) … 1 (full)
	filtered  float64 // CS smoothed for the PI (FilterAlpha)
	lastRead  int64
	share     cost.CPUShare
	preempted bool    // this step's draft was preempted
	acted     bool    // the governor acted in this step
	rate      float64 // the configured guardrail rate
	freeTok   float64 // decayed sums of the tokens and seconds of
	freeSec   float64 // steps the governor did not act in
	freeSteps int
	passes    int           // draft passes begun this step
	work      time.Duration // target-layer work since the last sleep
	relaxed   bool

	targetBase map[[2]int]float64 // learned target-layer baselines, ns
	targetSeen map[[2]int]int

	st    Stats
	csSum float64
	hist  [histBins]int
}

const (
	histBins = 1000 // CS histogram for the p95: 0.01 wide from histLow
	histLow  = -1.0
)

// New returns a governor.
func New(cfg Config) *Governor {
	if cfg.Gains == (Gains{}) {
		cfg.Gains = DefaultGains
	}
	if cfg.GuardrailRate <= 0 {
		cfg.GuardrailRate = DefaultGuardrailRate
	}
	if cfg.LogSize <= 0 {
		cfg.LogSize = 1 << 16
	}
	if cfg.Now == nil {
		cfg.Now = Monotonic
	}
	var base *Baselines
	if cfg.Baselines != nil && cfg.Baselines.Validate() == nil {
		// The sensor follows stale baselines down: work on a copy.
		base = &Baselines{Rows: append([]int(nil), cfg.Baselines.Rows...)}
		for _, ns := range cfg.Baselines.NS {
			base.NS = append(base.NS, append([]float64(nil), ns...))
		}
	}
	src := cfg.BaselineSource
	if base == nil {
		src = "learned online"
	} else if src == "" {
		src = "calibrated"
	}
	g := &Governor{policy: cfg.Policy, source: src, gains: cfg.Gains, sensor: NewSensor(base),
		pi: PI{Gains: cfg.Gains, Min: 0, Max: 1}, bucket: NewBucket(cfg.GuardrailRate), now: cfg.Now,
		log: sampleLog{buf: make([]Sample, cfg.LogSize)}, share: cost.NewCPUShare(cfg.CPUTime, cfg.Threads),
		rate: cfg.GuardrailRate}
	if cfg.Hysteresis > 0 {
		g.sensor.Need = cfg.Hysteresis
	}
	g.st.VerifyBatch = make(map[int]int)
	g.targetBase, g.targetSeen = make(map[[2]int]float64), make(map[[2]int]int)
	return g
}

// SetPolicy switches the policy; the controller starts afresh.
func (g *Governor) SetPolicy(p Policy) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if p == g.policy {
		return
	}
	g.policy = p
	g.pi.Reset()
	g.sensor.Reset()
	g.u, g.work, g.filtered = 0, 0, 0
	g.bucket = NewBucket(g.bucket.Rate)
	g.acted = false
}

// Policy is the policy in force.
func (g *Governor) Policy() Policy {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.policy
}

// Output is the controller's current actuation level in [0, 1].
func (g *Governor) Output() float64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.u
}

// Samples appends to dst the logged sensor readings taken at or after
// since (CLOCK_MONOTONIC ns), oldest first. The log keeps the latest
// Config.LogSize readings.
func (g *Governor) Samples(dst []Sample, since int64) []Sample {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.log.since(dst, since)
}

// controlling reports whether the controller acts now; g.mu is held.
func (g *Governor) controlling() bool {
	return g.policy != Off && !(g.policy.Guardrail() && g.bucket.InFallback())
}

// target is the CS set point, relaxed by a guardrail deficit; g.mu is held.
func (g *Governor) target() float64 {
	t := g.policy.Target()
	if g.policy.Guardrail() {
		t *= g.bucket.TargetScale()
	}
	return t
}

// DraftLayer reads the sensor and preempts the draft once the hysteresis
// says the machine is contended.
func (g *Governor) DraftLayer(layer, rows int, took time.Duration) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	if layer == 0 {
		g.passes++
	}
	took = g.share.Scale(now, took)
	cs, ok := g.sensor.Score(layer, rows, took)
	if !ok {
		return false
	}
	g.log.add(Sample{T: now, Layer: int32(layer), Rows: int32(rows), CS: float32(cs)})
	g.st.Readings++
	g.csSum += cs
	g.hist[max(0, min(histBins-1, int((cs-histLow)*100)))]++
	dt := g.readInterval(now)
	if !g.controlling() {
		return false
	}
	target := g.target()
	contended := g.sensor.Observe(cs, target)
	g.filtered += FilterAlpha * (cs - g.filtered)
	g.u = g.pi.Update(g.filtered-target, dt)
	if !contended {
		return false
	}
	g.st.Contended++
	// Each finished pass leaves a candidate; a new pass begins at layer 0.
	// The heavier the contention, the fewer passes run before the draft is
	// cut: at the controller's full output only the first (the catch-up
	// pass, which also gives the first candidate).
	if layer != 0 || g.passes <= g.allowedPasses() {
		return false
	}
	if !g.preempted {
		g.st.Preemptions++
	}
	g.preempted, g.acted = true, true
	return true
}

// readInterval is the seconds since the last sensor reading (at most ½: a
// long gap, an idle server, is not contention time); g.mu is held.
func (g *Governor) readInterval(now int64) float64 {
	dt := 0.0
	if g.lastRead != 0 {
		dt = min(float64(now-g.lastRead)/1e9, 0.5)
	}
	g.lastRead = now
	return dt
}

// targetWarmup is how many readings of a target layer at a batch size
// are taken to learn its baseline before it is scored.
const targetWarmup = 8

// targetScore scores a target-layer reading against a baseline learned
// online for its (layer, rows): a running estimate of the reading's lower
// quartile (it steps down three times as fast as up), so a foreground that
// is busy part of the time does not become the baseline, and a stale low
// reading fades. g.mu is held.
func (g *Governor) targetScore(layer, rows int, took time.Duration) (float64, bool) {
	t := float64(took)
	if t <= 0 || layer < 0 || layer >= 4096 || rows < 1 || rows > 4096 {
		return 0, false
	}
	k := [2]int{layer, rows}
	b, seen := g.targetBase[k], g.targetSeen[k]
	switch {
	case seen == 0 || t < 0.5*b || (seen < targetWarmup && t < b):
		b = t // the warm-up keeps the fastest
	case t < b:
		b += 0.006 * (t - b)
	default:
		b += 0.002 * (t - b)
	}
	g.targetBase[k], g.targetSeen[k] = b, seen+1
	if seen < targetWarmup {
		return 0, false
	}
	return (t - b) / b, true
}

// MaxContendedPasses is how many draft passes run in a step under the
// slightest contention; the controller's output scales it down to 1.
const MaxContendedPasses = 4

// allowedPasses is the draft passes a contended step may run; g.mu is held.
func (g *Governor) allowedPasses() int {
	return max(1, int(math.Round((1-g.u)*MaxContendedPasses)))
}

// VerifyRows picks the verify batch: under contention (or after a
// preemption) the smallest of VerifyBatches at the controller's level that
// holds the drafted nodes; otherwise the tree as drafted.
func (g *Governor) VerifyRows(drafted int) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.controlling() || !(g.sensor.Contended() || g.preempted) {
		g.st.VerifyBatch[0]++
		return 0
	}
	level := min(len(VerifyBatches)-1, int(g.u*float64(len(VerifyBatches))))
	for level < len(VerifyBatches)-1 && VerifyBatches[level] < drafted+1 {
		level++
	}
	if VerifyBatches[level] < drafted+1 {
		g.st.VerifyBatch[0]++
		return 0
	}
	g.st.VerifyBatch[VerifyBatches[level]]++
	g.acted = true
	return VerifyBatches[level]
}

// VerifyLayer inserts micro-sleeps of 1–2 ms between target layers while
// contended, often enough to cut the duty cycle by 10–25% as the
// controller's output rises from 0 to 1.
//
// Target layers are read too, against baselines learned online (see
// targetScore): the verify pass is most of a step, and a reading that shows
// the foreground's burst right now sleeps at the highest duty (25%), so the
// sleeps fall where they help the burst finish.
func (g *Governor) VerifyLayer(layer, rows int, took time.Duration) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	scaled := g.share.Scale(now, took)
	burst := false
	if cs, ok := g.targetScore(layer, rows, scaled); ok {
		g.log.add(Sample{T: now, Layer: int32(layer), Rows: int32(rows), CS: float32(cs), Target: true})
		g.st.TargetReadings++
		if g.controlling() {
			target := g.target()
			g.sensor.Observe(cs, target)
			g.filtered += FilterAlpha * (cs - g.filtered)
			g.u = g.pi.Update(g.filtered-target, g.readInterval(now))
			burst = cs > target
		}
	}
	if !g.controlling() || !g.sensor.Contended() || g.u <= 0 {
		g.work = 0
		return 0
	}
	g.work += took
	duty := 0.10 + 0.15*g.u
	if burst {
		duty = 0.25
	}
	sleep := time.Millisecond + time.Duration(g.u*float64(time.Millisecond))
	if float64(g.work) < float64(sleep)*(1-duty)/duty {
		return 0
	}
	g.work = 0
	g.acted = true
	g.st.Sleeps++
	g.st.SleepTime += sleep
	return sleep
}

// StepDone feeds the guardrail.
func (g *Governor) StepDone(tokens int, took time.Duration) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	acted := g.acted
	g.preempted, g.passes, g.acted = false, 0, false
	if !g.policy.Guardrail() {
		return 0
	}
	if !acted && took > 0 {
		g.freeTok = 0.9*g.freeTok + float64(tokens)
		g.freeSec = 0.9*g.freeSec + took.Seconds()
		if g.freeSteps++; g.freeSteps >= 5 && g.freeSec > 0 {
			g.bucket.SetRate(min(g.rate, GuardrailShare*g.freeTok/g.freeSec))
		}
	}
	was := g.bucket.InFallback()
	if g.bucket.Step(tokens, took) {
		g.st.Fallbacks++
		g.pi.Reset()
		g.sensor.Reset()
		g.u = 0
	}
	if was {
		g.st.FallbackTime += took
	}
	relaxed := !was && g.bucket.TargetScale() > 1.05
	if relaxed && !g.relaxed {
		g.st.Relaxations++
	}
	if relaxed {
		g.st.RelaxedTime += took
	}
	g.relaxed = relaxed
	return 0
}

// GovernorStats reports the governor's totals.
func (g *Governor) GovernorStats() Stats {
	g.mu.Lock()
	defer g.mu.Unlock()
	st := g.st
	st.Policy = g.policy.String()
	st.Baselines = g.source
	st.Kp, st.Ki = g.gains.Kp, g.gains.Ki
	st.VerifyBatch = make(map[int]int, len(g.st.VerifyBatch))
	for k, v := range g.st.VerifyBatch {
		st.VerifyBatch[k] = v
	}
	if st.Readings > 0 {
		st.CSMean = g.csSum / float64(st.Readings)
		want := (st.Readings*95 + 99) / 100
		for i, seen := 0, 0; i < histBins; i++ {
			if seen += g.hist[i]; seen >= want {
				st.CSP95 = histLow + float64(i+1)/100
				break
			}
		}
	}
	st.GuardrailRate = 0
	if g.policy.Guardrail() {
		st.GuardrailRate = g.bucket.Rate
	}
	st.Deficit = g.bucket.Deficit()
	st.InFallback = g.bucket.InFallback()
	return st
}

var _ speculate.Governor = (*Governor)(nil)
var _ speculate.Reporter = (*Governor)(nil)

// Report is GovernorStats for speculate.Stats.Governor.
func (g *Governor) Report() any {
	st := g.GovernorStats()
	return &st
}
