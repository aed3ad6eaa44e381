package elastic

import "time"

// Bucket is the guardrail that keeps a throttled background generation
// from starving: tokens are owed at Rate per second of generation time and
// paid by the tokens produced. A deficit (tokens owed) relaxes the
// controller's target in proportion, up to Relax× at a full bucket
// (Capacity tokens owed); a full bucket for Sustain falls back to
// uncontrolled speculation for Hold. Time is generation time (the steps'
// own wall time), so idle gaps between requests owe nothing.
type Bucket struct {
	Rate     float64       // tokens per second (default 12)
	Capacity float64       // tokens (default 2 s worth)
	Relax    float64       // most target multiplier (default 3)
	Sustain  time.Duration // full deficit this long falls back (default 2 s)
	Hold     time.Duration // fallback length (default 5 s)

	deficit  float64
	full     time.Duration // how long the deficit has been at capacity
	fallback time.Duration // fallback time left
}

// NewBucket returns a guardrail at rate tokens per second.
func NewBucket(rate float64) *Bucket {
	return &Bucket{Rate: rate, Capacity: 2 * rate, Relax: 3, Sustain: 2 * time.Second, Hold: 5 * time.Second}
}

// SetRate changes the rate (and the capacity, two seconds of it),
// keeping the deficit within the new capacity.
func (b *Bucket) SetRate(rate float64) {
	if !(rate > 0) {
		return
	}
	b.Rate, b.Capacity = rate, 2*rate
	b.deficit = max(-b.Capacity, min(b.Capacity, b.deficit))
}

// Step accounts for a step that produced tokens in took. It reports whether
// the step started a fallback.
func (b *Bucket) Step(tokens int, took time.Duration) (fellBack bool) {
	if took < 0 {
		took = 0
	}
	if b.fallback > 0 {
		b.fallback -= took
		if b.fallback <= 0 {
			b.fallback, b.deficit, b.full = 0, 0, 0
		}
		return false
	}
	b.deficit += b.Rate*took.Seconds() - float64(tokens)
	// Surplus is not banked beyond one bucket, so a fast spell does not
	// excuse a long slow one.
	b.deficit = max(-b.Capacity, min(b.Capacity, b.deficit))
	if b.deficit >= b.Capacity*(1-1e-9) {
		b.full += took
	} else {
		b.full = 0
	}
	if b.full >= b.Sustain && b.Sustain > 0 {
		b.fallback, b.full = b.Hold, 0
		return true
	}
	return false
}

// Deficit is the tokens owed (negative: ahead).
func (b *Bucket) Deficit() float64 { return b.deficit }

// TargetScale is what the CS target is multiplied by: 1 when on pace,
// up to Relax when the bucket is full.
func (b *Bucket) TargetScale() float64 {
	if b.deficit <= 0 || b.Capacity <= 0 {
		return 1
	}
	return 1 + (b.Relax-1)*min(1, b.deficit/b.Capacity)
}

// InFallback reports whether the guardrail has suspended control.
func (b *Bucket) InFallback() bool { return b.fallback > 0 }
