package elastic

import (
	"errors"
	"math"
)

// Gains are the PI controller's gains: u = Kp·e + Ki·∫e dt, with e the
// contention score above the target and t in seconds.
type Gains struct {
	Kp float64 `json:"kp"`
	Ki float64 `json:"ki"` // per second
}

// DefaultGains are used without a calibration: a sustained error of 0.1
// above target drives the actuation to full within about a second.
var DefaultGains = Gains{Kp: 2, Ki: 8}

// Validate checks the gains are finite and not negative.
func (g Gains) Validate() error {
	if !(g.Kp >= 0) || !(g.Ki >= 0) || math.IsInf(g.Kp, 0) || math.IsInf(g.Ki, 0) || g.Kp > 1e6 || g.Ki > 1e6 {
		return errors.New("elastic: PI gains must be finite, in [0, 1e6]")
	}
	return nil
}

// PI is a proportional-integral controller (no derivative term: it would
// amplify the scheduling noise of single readings) whose output is clamped
// to [Min, Max]. Anti-windup by conditional integration: while the output
// is saturated the integral only moves in the direction that leaves
// saturation, and it never leaves [Min, Max] itself, so a long quiet (or
// long contended) spell does not delay the reaction to the next change.
type PI struct {
	Gains
	Min, Max float64
	integral float64
}

// Update advances the controller by dt seconds with error e and returns
// the output.
func (c *PI) Update(e, dt float64) float64 {
	if !(dt > 0) || math.IsInf(dt, 0) || math.IsNaN(e) {
		dt = 0
	}
	if math.IsNaN(e) {
		e = 0
	}
	next := c.integral + c.Ki*e*dt
	u := c.Kp*e + next
	switch {
	case u > c.Max:
		if next < c.integral {
			c.integral = next
		}
		u = c.Max
	case u < c.Min:
		if next > c.integral {
			c.integral = next
		}
		u = c.Min
	default:
		c.integral = next
	}
	c.integral = max(c.Min, min(c.Max, c.integral))
	return u
}

// Integral is the integral term's value.
func (c *PI) Integral() float64 { return c.integral }

// Reset clears the integral.
func (c *PI) Reset() { c.integral = 0 }

// ZieglerNicholsPI is the classic Ziegler–Nichols PI tuning from the
// ultimate gain ku and period tu (seconds): Kp = 0.45·Ku, Ti = Tu/1.2,
// Ki = Kp/Ti.
func ZieglerNicholsPI(ku, tu float64) (Gains, error) {
	if !(ku > 0) || !(tu > 0) || math.IsInf(ku, 0) || math.IsInf(tu, 0) {
		return Gains{}, errors.New("elastic: Ziegler–Nichols needs a positive, finite ultimate gain and period")
	}
	kp := 0.45 * ku
	return Gains{Kp: kp, Ki: kp * 1.2 / tu}, nil
}

// RelayUltimate estimates the ultimate gain and period from a relay
// experiment (Åström–Hägglund): a relay of amplitude h switched the
// actuation on the sign of the error e(t) (times in seconds), and the loop
// oscillated. Ku = 4h/(π·a), with a the oscillation's amplitude (half the
// mean peak-to-peak of e over whole periods), and Tu the mean time between
// upward crossings of the band [−band, band] (e rising to band after it
// was at or below −band, so noise around zero is not a period). It needs
// at least three full periods.
func RelayUltimate(h, band float64, t, e []float64) (ku, tu float64, err error) {
	if len(t) != len(e) || len(t) < 8 || !(h > 0) || !(band >= 0) {
		return 0, 0, errors.New("elastic: relay experiment: too few readings")
	}
	var ups []int
	low := false
	for i := range e {
		if e[i] <= -band && (band > 0 || e[i] < 0) {
			low = true
		} else if low && e[i] >= band {
			ups = append(ups, i)
			low = false
		}
	}
	if len(ups) < 4 {
		return 0, 0, errors.New("elastic: relay experiment: the loop did not oscillate (fewer than three periods)")
	}
	var amp float64
	for k := 1; k < len(ups); k++ {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, v := range e[ups[k-1]:ups[k]] {
			lo, hi = min(lo, v), max(hi, v)
		}
		amp += (hi - lo) / 2
	}
	periods := float64(len(ups) - 1)
	amp /= periods
	tu = (t[ups[len(ups)-1]] - t[ups[0]]) / periods
	if !(amp > 0) || !(tu > 0) {
		return 0, 0, errors.New("elastic: relay experiment: no measurable oscillation")
	}
	return 4 * h / (math.Pi * amp), tu, nil
}
