//go:build linux

package model

import (
	"fmt"
	"os"
	"slices"
	"syscall"
	"testing"
	"time"

	"shade/quant"
)

// processCPU is the process's user+system CPU time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestFileKernelsCPUTime reports (it asserts nothing) the process CPU time
// and the wall time per forward pass of the model file SHADE_BENCH_MODEL
// on 2 threads, for batches of 1, 8, 16 and 32 rows, with each of the
// kernel sets this CPU runs, alternating set by set, round by round (best
// of 5 rounds): on a shared machine the CPU time, which others' load
// disturbs far less than the wall clock, compares the sets. Opt in with
// SHADE_KQUANT_CPU=1.
func TestFileKernelsCPUTime(t *testing.T) {
	path := os.Getenv("SHADE_BENCH_MODEL")
	if testing.Short() || os.Getenv("SHADE_KQUANT_CPU") == "" || path == "" {
		t.Skip("opt in with SHADE_KQUANT_CPU=1 and SHADE_BENCH_MODEL=file.gguf")
	}
	defer quant.UseGeneric(false)
	sets := quant.KernelSets()[1:] // not the generic one
	m, err := Open(path, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	m.Repack()
	s, err := m.NewState(256)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Forward(Chain([]int32{1, 2, 3, 4, 5, 6, 7, 8})); err != nil {
		t.Fatal(err)
	}
	s.CommitAll()
	keep := s.Len()
	logits := make([]float32, m.Config.Vocab)
	for _, batch := range []int{1, 8, 16, 32} {
		toks := make([]int32, batch)
		for i := range toks {
			toks[i] = int32(100 + i)
		}
		pass := func() {
			if err := s.Truncate(keep); err != nil {
				t.Fatal(err)
			}
			if err := s.Forward(Chain(toks)); err != nil {
				t.Fatal(err)
			}
			if err := s.Logits([]int{batch - 1}, logits); err != nil {
				t.Fatal(err)
			}
		}
		cpu := map[string][]time.Duration{}
		wall := map[string][]time.Duration{}
		for round := 0; round < 5; round++ {
			for _, set := range sets {
				if err := quant.UseKernels(set); err != nil {
					t.Fatal(err)
				}
				pass()
				reps := max(2, 16/batch)
				c0, w0 := processCPU(), time.Now()
				for range reps {
					pass()
				}
				cpu[set] = append(cpu[set], (processCPU()-c0)/time.Duration(reps))
				wall[set] = append(wall[set], time.Since(w0)/time.Duration(reps))
			}
		}
		fmt.Printf("batch %2d:", batch)
		for _, set := range sets {
			c, w := slices.Min(cpu[set]), slices.Min(wall[set])
			fmt.Printf("  %s %.1f tok/CPU-s (%.1f tok/s wall)", set, float64(batch)/c.Seconds(), float64(batch)/w.Seconds())
		}
		fmt.Println()
	}
}
