package bench

import (
	"strings"
	"testing"

	"shade/quant"
)

// TestInt8Loops runs every int8 loop this CPU has and checks its checksum:
// each accumulator lane must have grown by exactly sumPerIter per
// iteration, so a loop that skips or miscounts instructions fails.
func TestInt8Loops(t *testing.T) {
	for _, l := range int8Loops {
		for _, iters := range []int{0, 1, 7, 1000} {
			if got, want := l.run(iters), l.sumPerIter*int32(iters); got != want {
				t.Errorf("%s: %d iterations: checksum %d, want %d", l.name, iters, got, want)
			}
		}
	}
}

// TestInt8PeakNone checks that without a loop the peak says so instead of
// reporting a rate of zero as if it were measured.
func TestInt8PeakNone(t *testing.T) {
	saved := int8Loops
	defer func() { int8Loops = saved }()
	int8Loops = nil
	p := MeasureInt8Peak(2, 1)
	if p.GMACs != 0 || !strings.HasPrefix(p.Instruction, "none") {
		t.Errorf("no loop: got %+v, want rate 0 and instruction none", p)
	}
}

// TestInt8PeakUsesKernelsLoop checks the measurement runs the loop of the
// kernel set in use, for every set this CPU runs (the best loop for sets
// with none of their own, such as generic), and reports a rate for it.
func TestInt8PeakUsesKernelsLoop(t *testing.T) {
	if len(int8Loops) == 0 {
		t.Skip("no int8 loop for this CPU or build")
	}
	saved := int8PeakMACs
	defer func() { int8PeakMACs = saved }()
	defer quant.UseGeneric(false)
	int8PeakMACs = 10_000_000
	for _, set := range quant.KernelSets() {
		if err := quant.UseKernels(set); err != nil {
			t.Fatal(err)
		}
		want := int8Loops[0].name
		for _, l := range int8Loops {
			if l.kernels == set {
				want = l.name
			}
		}
		p := MeasureInt8Peak(2, 1)
		if p.Instruction != want || !(p.GMACs > 0) || p.Threads != 2 {
			t.Errorf("%s: got %+v, want a rate of %s on 2 threads", set, p, want)
		}
	}
}
