package elastic

import (
	"math"
	"slices"
	"sync"
	"testing"
	"time"
)

func flatBaselines(layers int, ns float64) *Baselines {
	b := &Baselines{Rows: []int{1, 4}}
	for range layers {
		b.NS = append(b.NS, []float64{ns, 4 * ns})
	}
	return b
}

func TestBaselineLookup(t *testing.T) {
	b := &Baselines{Rows: []int{1, 2, 8}, NS: [][]float64{{100, 200, 500}}}
	tests := []struct {
		layer, rows int
		want        float64
		ok          bool
	}{
		{0, 1, 100, true},
		{0, 2, 200, true},
		{0, 5, 350, true}, // halfway between 2 and 8
		{0, 14, 800, true},
		{0, 0, 0, false},
		{1, 1, 0, false},
		{-1, 1, 0, false},
	}
	for _, tc := range tests {
		got, ok := b.Lookup(tc.layer, tc.rows)
		if ok != tc.ok || math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("Lookup(%d, %d) = %v, %v; want %v, %v", tc.layer, tc.rows, got, ok, tc.want, tc.ok)
		}
	}
}

func TestBaselinesValidate(t *testing.T) {
	bad := []Baselines{
		{},
		{Rows: []int{2, 1}, NS: [][]float64{{1, 1}}},
		{Rows: []int{1}, NS: [][]float64{{1, 2}}},
		{Rows: []int{1}, NS: [][]float64{{0}}},
		{Rows: []int{1}, NS: [][]float64{{math.NaN()}}},
		{Rows: []int{0}, NS: [][]float64{{1}}},
	}
	for i, b := range bad {
		if b.Validate() == nil {
			t.Errorf("case %d: %+v accepted", i, b)
		}
	}
	if err := flatBaselines(3, 1e6).Validate(); err != nil {
		t.Error(err)
	}
}

func TestScore(t *testing.T) {
	s := NewSensor(flatBaselines(2, 1e6))
	tests := []struct {
		layer, rows int
		took        time.Duration
		want        float64
	}{
		{0, 1, time.Millisecond, 0},
		{1, 1, 1500 * time.Microsecond, 0.5},
		{0, 4, 5 * time.Millisecond, 0.25},
		{0, 1, 900 * time.Microsecond, -0.1},
	}
	for _, tc := range tests {
		cs, ok := s.Score(tc.layer, tc.rows, tc.took)
		if !ok || math.Abs(cs-tc.want) > 1e-9 {
			t.Errorf("Score(%d, %d, %v) = %v, %v; want %v", tc.layer, tc.rows, tc.took, cs, ok, tc.want)
		}
	}
	// Without baselines the sensor learns from the fastest readings first.
	s = NewSensor(nil)
	for i := range warmup {
		if _, ok := s.Score(0, 1, time.Duration(2-i%2)*time.Millisecond); ok {
			t.Fatal("scored before the warm-up")
		}
	}
	if cs, ok := s.Score(0, 1, 3*time.Millisecond); !ok || math.Abs(cs-2) > 1e-9 {
		t.Errorf("learned baseline: CS %v, %v; want 2", cs, ok)
	}
}

func TestHysteresis(t *testing.T) {
	tests := []struct {
		name   string
		scores []float64
		want   []bool
	}{
		{"one spike", []float64{0.5, 0, 0, 0.5, 0}, []bool{false, false, false, false, false}},
		{"two spikes", []float64{0.5, 0.5, 0, 0.5, 0.5}, []bool{false, false, false, false, false}},
		{"sustained", []float64{0.5, 0.5, 0.5, 0.5, 0.1, 0.5}, []bool{false, false, true, true, true, true}},
		{"recovers", []float64{0.5, 0.5, 0.5, 0, 0, 0, 0}, []bool{false, false, true, true, true, false, false}},
		{"at threshold is quiet", []float64{0.2, 0.2, 0.2}, []bool{false, false, false}},
	}
	for _, tc := range tests {
		s := NewSensor(nil)
		for i, cs := range tc.scores {
			if got := s.Observe(cs, 0.2); got != tc.want[i] {
				t.Errorf("%s: reading %d (%v): contended %v, want %v", tc.name, i, cs, got, tc.want[i])
			}
		}
	}
}

// plant is a first-order lag: the contention score falls as the
// actuation rises, y' = (disturbance − gain·u − y)/tau.
func simulate(c *PI, setpoint, disturbance float64, steps int, dt float64) (y float64, us []float64) {
	const gain, tau = 0.5, 0.2
	for range steps {
		u := c.Update(y-setpoint, dt)
		us = append(us, u)
		y += dt * (disturbance - gain*u - y) / tau
	}
	return y, us
}

func TestPIStepResponse(t *testing.T) {
	tests := []struct {
		gains       Gains
		disturbance float64
		wantY       float64
	}{
		{Gains{Kp: 1, Ki: 5}, 0.4, 0.15},  // reachable: settles at the set point
		{Gains{Kp: 2, Ki: 10}, 0.3, 0.15}, // faster gains, same end
		{Gains{Kp: 1, Ki: 5}, 0.1, 0.1},   // below target: no action, y = disturbance
		{Gains{Kp: 1, Ki: 5}, 2.0, 1.5},   // saturated: full action, y = d − gain
	}
	for _, tc := range tests {
		c := &PI{Gains: tc.gains, Min: 0, Max: 1}
		y, us := simulate(c, 0.15, tc.disturbance, 4000, 0.001)
		if math.Abs(y-tc.wantY) > 0.01 {
			t.Errorf("%+v, d=%v: settled at %.3f, want %.3f", tc.gains, tc.disturbance, y, tc.wantY)
		}
		for _, u := range us {
			if u < 0 || u > 1 {
				t.Fatalf("output %v outside [0, 1]", u)
			}
		}
	}
}

func TestPIAntiWindup(t *testing.T) {
	// A long saturated spell, then the error reverses: with anti-windup
	// the output leaves saturation at once; a naive integrator would sit at
	// Max until its wound-up integral drained.
	c := &PI{Gains: Gains{Kp: 0.5, Ki: 5}, Min: 0, Max: 1}
	for range 10000 {
		c.Update(1, 0.01)
	}
	if c.Integral() > 1 {
		t.Fatalf("integral wound up to %v", c.Integral())
	}
	steps := 0
	for c.Update(-0.3, 0.01) >= 1 {
		if steps++; steps > 100 {
			t.Fatal("output stuck at saturation after the error reversed")
		}
	}
	if steps > 2 {
		t.Errorf("took %d steps to leave saturation", steps)
	}
	// Long quiet spells do not wind the integral below Min either.
	c.Reset()
	for range 10000 {
		c.Update(-1, 0.01)
	}
	if got := c.Update(0.1, 0.01); got <= 0 {
		t.Errorf("after a long quiet spell a positive error gives output %v", got)
	}
}

func TestZieglerNichols(t *testing.T) {
	g, err := ZieglerNicholsPI(4, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(g.Kp-1.8) > 1e-12 || math.Abs(g.Ki-1.8*1.2/0.5) > 1e-12 {
		t.Errorf("ZN(4, 0.5) = %+v, want Kp 1.8, Ki 4.32", g)
	}
	for _, bad := range [][2]float64{{0, 1}, {1, 0}, {-1, 1}, {math.Inf(1), 1}, {math.NaN(), 1}} {
		if _, err := ZieglerNicholsPI(bad[0], bad[1]); err == nil {
			t.Errorf("ZN%v accepted", bad)
		}
	}
}

func TestRelayUltimate(t *testing.T) {
	// A square-ish oscillation of amplitude 0.2 and period 0.25 s.
	var ts, es []float64
	for i := range 2000 {
		tt := float64(i) * 0.001
		ts = append(ts, tt)
		es = append(es, 0.2*math.Sin(2*math.Pi*tt/0.25+0.1))
	}
	ku, tu, err := RelayUltimate(0.5, 0.01, ts, es)
	if err != nil {
		t.Fatal(err)
	}
	if want := 4 * 0.5 / (math.Pi * 0.2); math.Abs(ku-want)/want > 0.02 {
		t.Errorf("Ku = %v, want %v", ku, want)
	}
	if math.Abs(tu-0.25) > 0.005 {
		t.Errorf("Tu = %v, want 0.25", tu)
	}
	// Noise around zero inside the band is not a period.
	noisy := slices.Clone(es)
	for i := range noisy {
		noisy[i] += 0.005 * float64(i%2*2-1)
	}
	if _, tu2, err := RelayUltimate(0.5, 0.02, ts, noisy); err != nil || math.Abs(tu2-0.25) > 0.005 {
		t.Errorf("noisy: Tu = %v, %v; want 0.25", tu2, err)
	}
	if _, _, err := RelayUltimate(0.5, 0, ts[:100], es[:100]); err == nil {
		t.Error("less than three periods accepted")
	}
	flat := make([]float64, len(ts))
	if _, _, err := RelayUltimate(0.5, 0, ts, flat); err == nil {
		t.Error("no oscillation accepted")
	}
}

func TestBucket(t *testing.T) {
	b := NewBucket(10)
	step := 100 * time.Millisecond
	// On pace: one token per 100 ms.
	for range 50 {
		b.Step(1, step)
	}
	if b.Deficit() != 0 || b.TargetScale() != 1 {
		t.Fatalf("on pace: deficit %v, scale %v", b.Deficit(), b.TargetScale())
	}
	// Ahead: the surplus is capped at one bucket.
	for range 50 {
		b.Step(5, step)
	}
	if b.Deficit() != -b.Capacity {
		t.Fatalf("ahead: deficit %v, want %v", b.Deficit(), -b.Capacity)
	}
	b = NewBucket(10)
	// Behind by half a token per step: the target relaxes in proportion.
	b.Step(0, step)
	if s := b.TargetScale(); math.Abs(s-(1+2*1.0/20)) > 1e-9 {
		t.Errorf("1 token owed of 20: scale %v", s)
	}
	steps := 2 // counting the one above and the one below
	for !b.Step(0, step) {
		if steps++; steps > 100 {
			t.Fatal("a sustained deficit never fell back")
		}
	}
	// The 20th step fills the bucket; it and 19 more make 2 s full.
	if steps != 39 || !b.InFallback() {
		t.Fatalf("fell back after %d steps (want 39), in fallback %v", steps, b.InFallback())
	}
	// The fallback lasts Hold, then control resumes with a clean slate.
	for range 49 {
		b.Step(0, step)
	}
	if !b.InFallback() {
		t.Fatal("fallback ended early")
	}
	b.Step(0, step)
	if b.InFallback() || b.Deficit() != 0 {
		t.Fatalf("after the hold: in fallback %v, deficit %v", b.InFallback(), b.Deficit())
	}
}

func TestParsePolicy(t *testing.T) {
	for _, tc := range []struct {
		in     string
		want   Policy
		target float64
		guard  bool
	}{{"off", Off, 0, false}, {"balanced", Balanced, 0.15, true}, {"ui-first", UIFirst, 0.07, false}} {
		p, err := ParsePolicy(tc.in)
		if err != nil || p != tc.want || p.Target() != tc.target || p.Guardrail() != tc.guard || p.String() != tc.in {
			t.Errorf("%q: %v %v (target %v, guardrail %v)", tc.in, p, err, p.Target(), p.Guardrail())
		}
	}
	if _, err := ParsePolicy("turbo"); err == nil {
		t.Error("turbo accepted")
	}
}

// clock is an injected sample clock.
type clock struct{ t int64 }

func (c *clock) now() int64 { c.t += int64(time.Millisecond); return c.t }

func TestGovernorActuators(t *testing.T) {
	ck := &clock{}
	g := New(Config{Policy: Balanced, Baselines: flatBaselines(4, 1e6), Now: ck.now})
	quiet, busy := time.Millisecond, 1600*time.Microsecond // CS 0 and 0.6
	// Quiet: nothing happens.
	for l := range 4 {
		if g.DraftLayer(l, 1, quiet) {
			t.Fatal("preempted on a quiet machine")
		}
	}
	if g.VerifyRows(4) != 0 || g.VerifyLayer(0, 5, 5*time.Millisecond) != 0 {
		t.Fatal("acted on a quiet machine")
	}
	g.StepDone(5, 20*time.Millisecond)
	// Contended: the third reading in a row makes it contended; the draft
	// is cut at the start of a later pass, no later than the
	// MaxContendedPasses+1st.
	for l := range 2 {
		if g.DraftLayer(l, 1, busy) {
			t.Fatalf("preempted at reading %d, before the hysteresis allows", l+1)
		}
	}
	cut := 0
	for pass := 1; cut == 0 && pass <= MaxContendedPasses+1; pass++ {
		for l := range 4 {
			if pass == 1 && l < 2 {
				continue // the two readings above
			}
			if g.DraftLayer(l, 1, busy) {
				if l != 0 {
					t.Fatalf("preempted at layer %d: only at a pass's start", l)
				}
				cut = pass
				break
			}
		}
	}
	if cut < 2 {
		t.Fatalf("not preempted within %d passes under contention", MaxContendedPasses+1)
	}
	rows := g.VerifyRows(2)
	if rows != 8 && rows != 16 && rows != 32 {
		t.Fatalf("verify batch %d under contention", rows)
	}
	var slept, worked time.Duration
	for l := range 64 {
		worked += 4 * time.Millisecond
		d := g.VerifyLayer(l%16, rows, 4*time.Millisecond)
		if d != 0 && (d < time.Millisecond || d > 2*time.Millisecond) {
			t.Fatalf("sleep %v outside 1–2 ms", d)
		}
		slept += d
	}
	if duty := float64(slept) / float64(slept+worked); duty < 0.08 || duty > 0.27 {
		t.Errorf("duty cycle cut by %.0f%%, want 10–25%%", 100*duty)
	}
	// Heavier contention for longer: the integral raises the batch.
	for l := range 200 {
		g.DraftLayer(l%4, 1, 3*time.Millisecond)
	}
	if got := g.VerifyRows(0); got != 32 {
		t.Errorf("heavy contention: verify batch %d, want 32", got)
	}
	st := g.GovernorStats()
	if st.Preemptions < 1 || st.Readings != 204+4*(cut-1)+1 || st.Sleeps == 0 || st.CSP95 < 1.9 || st.Policy != "balanced" {
		t.Errorf("stats: %+v", st)
	}
	if got, want := len(g.Samples(nil, 0)), 204+4*(cut-1)+1; got != want {
		t.Errorf("%d samples logged, want %d", got, want)
	}
	// Off: the sensor still logs, the actuators are idle.
	g.SetPolicy(Off)
	for l := range 8 {
		if g.DraftLayer(l%4, 1, busy) {
			t.Fatal("policy off preempted")
		}
	}
	if g.VerifyRows(0) != 0 || g.VerifyLayer(0, 1, 10*time.Millisecond) != 0 {
		t.Error("policy off acted")
	}
}

func TestGovernorGuardrailFallback(t *testing.T) {
	g := New(Config{Policy: Balanced, Baselines: flatBaselines(4, 1e6), GuardrailRate: 12, Now: (&clock{}).now})
	for range 100 { // 100 steps of 100 ms with no token: behind 12 tok/s
		for l := range 4 {
			g.DraftLayer(l, 1, 2*time.Millisecond)
		}
		g.StepDone(0, 100*time.Millisecond)
	}
	st := g.GovernorStats()
	if st.Relaxations == 0 || st.RelaxedTime == 0 {
		t.Errorf("a deficit did not relax the target: %+v", st)
	}
	if st.Fallbacks == 0 || st.FallbackTime == 0 {
		t.Errorf("a sustained deficit did not fall back: %+v", st)
	}
	// Uncontrolled steps at 5 tok/s cap the guardrail at 60% of that.
	g = New(Config{Policy: Balanced, Baselines: flatBaselines(4, 1e6), GuardrailRate: 12, Now: (&clock{}).now})
	for range 50 {
		g.StepDone(1, 200*time.Millisecond)
	}
	if st := g.GovernorStats(); math.Abs(st.GuardrailRate-3) > 1e-9 || st.Fallbacks != 0 {
		t.Errorf("guardrail at 5 tok/s uncontrolled: rate %v, %d fallbacks; want 3 tok/s, none", st.GuardrailRate, st.Fallbacks)
	}
	// UI-first has no guardrail.
	g = New(Config{Policy: UIFirst, Baselines: flatBaselines(4, 1e6), Now: (&clock{}).now})
	for range 100 {
		g.StepDone(0, 100*time.Millisecond)
	}
	if st := g.GovernorStats(); st.Fallbacks != 0 || st.Relaxations != 0 || st.GuardrailRate != 0 {
		t.Errorf("ui-first used the guardrail: %+v", st)
	}
}

// TestPolicySwitchConcurrent switches the policy while a decoder-like
// goroutine drives the governor (run with -race).
func TestPolicySwitchConcurrent(t *testing.T) {
	g := New(Config{Policy: Balanced, Baselines: flatBaselines(4, 1e6)})
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			g.DraftLayer(i%4, 1, time.Duration(1e6+(i%7)*2e5))
			g.VerifyRows(i % 9)
			g.VerifyLayer(i%16, 8, time.Millisecond)
			g.StepDone(2, time.Millisecond)
		}
	}()
	names := PolicyNames()
	for i := range 300 {
		p, _ := ParsePolicy(names[i%len(names)])
		g.SetPolicy(p)
		if got := g.Policy(); got != p {
			t.Errorf("policy %v after setting %v", got, p)
		}
		g.GovernorStats()
		g.Samples(nil, 0)
	}
	close(stop)
	wg.Wait()
}

// TestCPUShare: time the process did not run (another process had the
// core) is taken out of a reading; memory stalls, being CPU time, stay.
func TestCPUShare(t *testing.T) {
	tests := []struct {
		share  float64 // of the wall time the process ran
		took   time.Duration
		wantCS float64
	}{
		{1, 1500 * time.Microsecond, 0.5}, // ran all along: a slow layer is contention
		{0.5, 2 * time.Millisecond, 0},    // ran half the time: no contention
		{0.5, 3 * time.Millisecond, 0.5},
	}
	for _, tc := range tests {
		var wall, cpu int64
		g := New(Config{Policy: Off, Baselines: flatBaselines(1, 1e6), Threads: 1,
			Now:     func() int64 { wall += int64(time.Millisecond); return wall },
			CPUTime: func() int64 { cpu += int64(tc.share * float64(time.Millisecond)); return cpu }})
		g.DraftLayer(0, 1, time.Millisecond) // the first reading has no window yet
		g.DraftLayer(0, 1, tc.took)
		s := g.Samples(nil, 0)
		if len(s) != 2 || math.Abs(float64(s[1].CS)-tc.wantCS) > 1e-6 {
			t.Errorf("share %v, took %v: samples %+v, want CS %v", tc.share, tc.took, s, tc.wantCS)
		}
	}
}

// TestTargetLayers: target layers are scored against a baseline learned
// online, a lower quartile that a busy spell does not become.
func TestTargetLayers(t *testing.T) {
	g := New(Config{Policy: UIFirst, Baselines: flatBaselines(1, 1e6), Now: (&clock{}).now})
	for range targetWarmup {
		g.VerifyLayer(3, 9, time.Millisecond)
	}
	if n := len(g.Samples(nil, 0)); n != 0 {
		t.Fatalf("%d samples during the warm-up", n)
	}
	// Busy for a spell: readings 1.5× the quiet ones stay scored high.
	for i := range 40 {
		g.VerifyLayer(3, 9, 1500*time.Microsecond)
		s := g.Samples(nil, 0)
		if cs := s[len(s)-1].CS; cs < 0.4 || !s[len(s)-1].Target {
			t.Fatalf("busy reading %d: CS %v (target %v), want ≥ 0.4", i, cs, s[len(s)-1].Target)
		}
	}
	// A sustained busy spell sleeps at the burst duty.
	var slept, worked time.Duration
	for range 200 {
		worked += 1500 * time.Microsecond
		slept += g.VerifyLayer(3, 9, 1500*time.Microsecond)
	}
	if duty := float64(slept) / float64(slept+worked); duty < 0.15 || duty > 0.27 {
		t.Errorf("duty cut by %.0f%% under a sustained burst, want up to 25%%", 100*duty)
	}
	if st := g.GovernorStats(); st.TargetReadings != 240 {
		t.Errorf("%d target readings, want 240", st.TargetReadings)
	}
}
