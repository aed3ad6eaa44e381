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
	linear := func(k int) time.Duration { return verify1 + time.Duration(k)*perRow }
	return simulateCosts(alpha, linear, perDraft, steps, 0)
}

// simulateCosts is simulate with verify(k) the cost of verifying k drafted
// tokens and the acceptance pattern started at acc0 (in [0, 1)).
func simulateCosts(alpha float64, verify func(k int) time.Duration, perDraft time.Duration, steps int, acc0 float64) float64 {
	var c sizer
	c.init(8)
	var tokens int
	var elapsed time.Duration
	acc := acc0
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
		v := verify(k)
		c.observe(k, accepted, draft, v, DraftModel, 1)
		tokens += accepted + 1
		elapsed += draft + v
	}
	plain := float64(steps) / (time.Duration(steps) * verify(0)).Seconds()
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

// TestAutoConcaveVerifyCost runs auto against verify costs measured on an
// 8B Q4_0 target with the AVX2 kernels on Zen 4 (ms a pass of 1 to 9 rows):
// two rows cost 1.6x one, five 2.1x, nine 3.9x. A cost linear in the rows,
// learned from the short drafts tried first, priced longer drafts out (the
// sizer this replaced ran at 1.04x and 1.35x here); with the costs
// observed per length and the next length tried now and then, auto finds
// the best lengths (3 and 4).
func TestAutoConcaveVerifyCost(t *testing.T) {
	ms := []float64{118, 185, 210, 225, 250, 350, 400, 430, 460}
	verify := func(k int) time.Duration { return time.Duration(ms[k] * float64(time.Millisecond)) }
	for _, tc := range []struct{ alpha, want float64 }{{0.85, 1.12}, {0.95, 1.5}} {
		if r := simulateCosts(tc.alpha, verify, 25*time.Millisecond, 300, 0.5); r < tc.want {
			t.Errorf("acceptance %.2f: auto runs at %.3f× plain decoding, want ≥ %.2f", tc.alpha, r, tc.want)
		}
	}
}
