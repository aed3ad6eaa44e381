// Package elastic owns elastic speculative decoding (the "Sereno" design):
// the contention sensor (draft-layer latencies against their quiet-machine
// baselines), the PI controller on the contention score, the actuators
// (draft preemption, the verify batch size, micro-sleeps between target
// layers), the token-bucket guardrail that keeps the background LLM from
// starving, the policies (balanced, ui-first, off) and their calibration
// (baselines per draft layer and batch size, PI gains by Ziegler–Nichols).
// Governor implements spec.Governor; one Governor may drive many
// generations and its policy may be switched from any goroutine.
package elastic

import (
	"fmt"
	"strings"
)

// Policy is how hard the governor protects the foreground.
type Policy int

const (
	// Off leaves speculation uncontrolled (the sensor still logs).
	Off Policy = iota
	// Balanced keeps the contention score near 0.15 with the token-bucket
	// guardrail on.
	Balanced
	// UIFirst keeps it near 0.07 with the guardrail off.
	UIFirst
)

var policyNames = []string{"off", "balanced", "ui-first"}

func (p Policy) String() string {
	if p < 0 || int(p) >= len(policyNames) {
		return fmt.Sprintf("Policy(%d)", int(p))
	}
	return policyNames[p]
}

// PolicyNames lists the policies by name.
func PolicyNames() []string { return append([]string(nil), policyNames...) }

// ParsePolicy maps off|balanced|ui-first to a Policy.
func ParsePolicy(s string) (Policy, error) {
	for i, n := range policyNames {
		if n == s {
			return Policy(i), nil
		}
	}
	return Off, fmt.Errorf("elastic: unknown policy %q (want %s)", s, strings.Join(policyNames, ", "))
}

// Target is the policy's contention-score set point (0 for Off).
func (p Policy) Target() float64 {
	switch p {
	case Balanced:
		return 0.15
	case UIFirst:
		return 0.07
	}
	return 0
}

// Guardrail reports whether the policy keeps the token bucket.
func (p Policy) Guardrail() bool { return p == Balanced }
