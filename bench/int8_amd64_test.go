//go:build amd64 && !noasm && gc

package bench

import (
	"testing"

	"golang.org/x/sys/cpu"
)

// TestInt8LoopOnAVX2 checks an AVX2 CPU gets a loop, so its report's
// "of int8 peak" is never empty.
func TestInt8LoopOnAVX2(t *testing.T) {
	if cpu.X86.HasAVX2 && len(int8Loops) == 0 {
		t.Fatal("AVX2 CPU without an int8 loop")
	}
	for _, l := range int8Loops {
		t.Logf("%s: %d multiply-adds per iteration", l.name, l.macsPerIter)
	}
}
