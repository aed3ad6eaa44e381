package main

import (
	"bytes"
	"strings"
	"testing"

	"shade/bench"
)

// TestPrintBenchCostVsOne checks the forward table's "cost vs batch 1"
// column: a ratio where a one-row pass was measured, a dash where --batches
// left it out (it printed "0.00×").
func TestPrintBenchCostVsOne(t *testing.T) {
	r := &bench.Report{Forward: []bench.ForwardResult{
		{Batch: 1, MsPerPass: 10, TokPerS: 100, CostVsOne: 1},
		{Batch: 16, MsPerPass: 30, TokPerS: 533, CostVsOne: 3},
	}}
	var b bytes.Buffer
	printBench(&b, r)
	if !strings.Contains(b.String(), "3.00×") {
		t.Errorf("with a one-row pass, batch 16's cost is not 3.00×:\n%s", b.String())
	}
	r.Forward = r.Forward[1:]
	r.Forward[0].CostVsOne = 0
	b.Reset()
	printBench(&b, r)
	found := false
	for _, line := range strings.Split(b.String(), "\n") {
		if !strings.Contains(line, "533.00") {
			continue
		}
		found = true
		if strings.Contains(line, "0.00×") || !strings.Contains(line, "—") {
			t.Errorf("without a one-row pass, batch 16's line shows no dash: %q", line)
		}
	}
	if !found {
		t.Errorf("no line for batch 16:\n%s", b.String())
	}
}
