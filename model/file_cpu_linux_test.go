//go:build linux

package model

import (
	"fmt"
	"os"
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

// TestFileForwardCPUTime reports (it asserts nothing) batched forward
// passes of the model file SHADE_BENCH_MODEL names in tokens per CPU-second
// of the process (2 threads), for each kernel set this CPU has beyond the
// generic one (or those SHADE_CPU_SETS names, comma-separated), the sets
// alternating, best of SHADE_CPU_ROUNDS (default 4) rounds: on a shared
// machine the CPU time is far steadier than the wall clock. Opt in with
// SHADE_KQUANT_CPU=1.
func TestFileForwardCPUTime(t *testing.T) {
	if os.Getenv("SHADE_KQUANT_CPU") == "" || os.Getenv("SHADE_BENCH_MODEL") == "" {
		t.Skip("opt in with SHADE_KQUANT_CPU=1 and SHADE_BENCH_MODEL=file.gguf")
	}
	defer quant.UseGeneric(false)
	sets := quant.KernelSets()[1:]
	if v := os.Getenv("SHADE_CPU_SETS"); v != "" {
		sets = splitComma(v)
	}
	rounds := 4
	fmt.Sscan(os.Getenv("SHADE_CPU_ROUNDS"), &rounds)
	m, err := Open(os.Getenv("SHADE_BENCH_MODEL"), 2)
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
	for _, batch := range []int{8, 16, 32} {
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
		best := map[string]time.Duration{}
		for round := 0; round < rounds; round++ {
			for _, set := range sets {
				if err := quant.UseKernels(set); err != nil {
					t.Fatal(err)
				}
				pass()
				t0, w0 := processCPU(), time.Now()
				reps := 0
				for ; reps < 3 || time.Since(w0) < 300*time.Millisecond; reps++ {
					pass()
				}
				d := (processCPU() - t0) / time.Duration(reps)
				if b, ok := best[set]; !ok || d < b {
					best[set] = d
				}
			}
		}
		fmt.Printf("batch %2d:", batch)
		for _, set := range sets {
			fmt.Printf("  %s %6.1f tok/CPU-s", set, float64(batch)/best[set].Seconds())
		}
		if len(sets) == 2 {
			fmt.Printf("  (%s/%s %.2fx)", sets[1], sets[0], float64(best[sets[0]])/float64(best[sets[1]]))
		}
		fmt.Println()
	}
}

func splitComma(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			if i > start {
				out = append(out, s[start:i])
			}
			start = i + 1
		}
	}
	return out
}
