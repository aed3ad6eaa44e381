package main

import (
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"shade/elastic"
	"shade/speculate"
)

// policyFlag is --policy, the elastic-speculation policy run, serve and
// bench spec share.
type policyFlag struct{ name *string }

func addPolicyFlag(fs *flag.FlagSet, def, usage string) *policyFlag {
	return &policyFlag{name: fs.String("policy", def, usage+" ("+strings.Join(elastic.PolicyNames(), ", ")+")")}
}

// policy checks the flag.
func (f *policyFlag) policy() (elastic.Policy, error) {
	return elastic.ParsePolicy(*f.name)
}

// printGovernorStats prints what the elastic governor did (run --stats).
func printGovernorStats(w io.Writer, s *speculate.Stats) {
	if s == nil {
		return
	}
	g, ok := s.Governor.(*elastic.Stats)
	if !ok {
		return
	}
	fmt.Fprintf(w, "elastic %s (baselines: %s; Kp %.3g, Ki %.3g): %d sensor readings, CS mean %.3f, p95 %.3f, %d contended\n",
		g.Policy, g.Baselines, g.Kp, g.Ki, g.Readings, g.CSMean, g.CSP95, g.Contended)
	var sizes []int
	for k := range g.VerifyBatch {
		sizes = append(sizes, k)
	}
	sort.Ints(sizes)
	var hist []string
	for _, k := range sizes {
		name := fmt.Sprint(k)
		if k == 0 {
			name = "as drafted"
		}
		hist = append(hist, fmt.Sprintf("%s: %d", name, g.VerifyBatch[k]))
	}
	fmt.Fprintf(w, "  %d preemptions; verify batches {%s}; %d filled (%d accepted); %d sleeps, %.0f ms\n",
		g.Preemptions, strings.Join(hist, ", "), s.Filled, s.FilledAccepted, g.Sleeps, g.SleepTime.Seconds()*1000)
	if g.GuardrailRate > 0 {
		fmt.Fprintf(w, "  guardrail %.0f tok/s: deficit %.1f tokens, %d relaxations (%.1f s), %d fallbacks (%.1f s)%s\n",
			g.GuardrailRate, g.Deficit, g.Relaxations, g.RelaxedTime.Seconds(), g.Fallbacks, g.FallbackTime.Seconds(),
			map[bool]string{true: ", in fallback now", false: ""}[g.InFallback])
	}
}
