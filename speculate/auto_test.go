package speculate

import (
	"testing"
	"time"
)

// simulate runs auto's sizer against a synthetic machine where a verify
// of r rows costs verify1 + perRow·(r−1), drafting costs perDraft a token
// and each drafted token is accepted with probability alpha (a fixed
// pattern). It returns the achieved tokens per second relative to plain
// decoding.
func simulate(alpha float64, verify1, perRow, perDraft time.Duration, steps int) float64 {
	var c sizer
	c.init(8)
	var tokens int
	var elapsed time.Duration
	acc := 0.0
	for range steps {
		k := 0
		if !c.plainStep() {
			k = c.modelLen()
		}
		accepted := 0
		for i := 0; i < k; i++ {
			acc += alpha
			if acc < 1 {
				break
			}
			acc--
			accepted++
		}
		draft := time.Duration(k) * perDraft
		verify := verify1 + time.Duration(k)*perRow
		c.observe(k, accepted, draft, verify, DraftModel, 1)
		tokens += accepted + 1
		elapsed += draft + verify
	}
	plain := float64(steps) / (time.Duration(steps) * verify1).Seconds()
	return float64(tokens) / elapsed.Seconds() / plain
}

func TestAutoPoorDraftFallsBack(t *testing.T) {
	if r := simulate(0, 100*time.Millisecond, 5*time.Millisecond, 20*time.Millisecond, 2000); r < 0.95 {
		t.Errorf("with a useless draft auto runs at %.3f× plain decoding, want ≥ 0.95", r)
	}
}

func TestAutoGoodDraftDrafts(t *testing.T) {
	// A draft 1/5 of the target's cost, accepted 80% of the time, and a
	// verify pass that costs little more for more rows.
	if r := simulate(0.8, 100*time.Millisecond, 5*time.Millisecond, 20*time.Millisecond, 500); r < 1.5 {
		t.Errorf("with a good draft auto runs at %.2f× plain decoding, want ≥ 1.5", r)
	}
	// Drafts as expensive as the target never pay: stay near plain speed.
	if r := simulate(0.9, 100*time.Millisecond, 5*time.Millisecond, 100*time.Millisecond, 1000); r < 0.95 {
		t.Errorf("with a draft as slow as the target auto runs at %.3f×, want ≥ 0.95", r)
	}
}
