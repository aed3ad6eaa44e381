package bench

import (
	"strings"
	"testing"
	"time"
)

func TestRateCap(t *testing.T) {
	g := &RateCap{TokPerS: 10}
	// 5 tokens in a 100 ms step: at 10 tok/s they are due at 500 ms.
	if p := g.StepDone(5, 100*time.Millisecond); p < 350*time.Millisecond || p > 410*time.Millisecond {
		t.Errorf("pause %v, want ≈400 ms", p)
	}
	slow := &RateCap{TokPerS: 10}
	if p := slow.StepDone(1, 200*time.Millisecond); p != 0 {
		t.Errorf("a step under the cap paused %v", p)
	}
}

func TestChunkSleeper(t *testing.T) {
	g := &ChunkSleeper{Layers: 4, Sleep: 3 * time.Millisecond}
	var total time.Duration
	for l := range 16 {
		total += g.VerifyLayer(l, 1, time.Millisecond)
	}
	if total != 12*time.Millisecond {
		t.Errorf("slept %v over 16 layers, want 4 × 3 ms", total)
	}
}

// The policies are values made for one run's knobs: nothing global to
// register, so two experiments in one process do not see each other's.
func TestQoSPolicies(t *testing.T) {
	a := QoSPolicies(nil, QoSOptions{RateCap: 2})
	b := QoSPolicies(nil, QoSOptions{})
	var names []string
	for _, p := range a {
		names = append(names, p.Name)
	}
	if got := strings.Join(names, ","); got != "native,ar,spec,freq-limit,chunk-sleep,balanced,ui-first" {
		t.Errorf("policies %s", got)
	}
	if a[3].Summary == b[3].Summary || !strings.Contains(a[3].Summary, "2 tok/s") {
		t.Errorf("freq-limit's cap: %q and %q", a[3].Summary, b[3].Summary)
	}
	if !a[0].Native {
		t.Error("native is not the native policy")
	}
	for _, p := range a[1:] {
		if _, err := p.New(); err == nil {
			t.Errorf("%s built without an LLM", p.Name)
		}
	}
	if bad := FreqLimitPolicy(&QoSLLM{}, 0); bad.Name != "freq-limit" {
		t.Errorf("name %q", bad.Name)
	} else if _, err := bad.New(); err == nil {
		t.Error("a cap of 0 tok/s accepted")
	}
}
