//go:build linux && amd64 && !noasm && gc

package quant

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// threadCPU is the calling thread's user+system CPU time.
func threadCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestGemmKCPUTime reports (it asserts nothing about speed) single-thread
// MatMul throughput on Q4_K and Q6_K by the thread's CPU time rather than
// the wall clock, which a shared machine makes noisy: dot (per-row
// kernels) against gemmk, alternating, best of several rounds. Opt in with
// SHADE_KQUANT_CPU=1 (and not -short).
func TestGemmKCPUTime(t *testing.T) {
	if testing.Short() || os.Getenv("SHADE_KQUANT_CPU") == "" {
		t.Skip("opt in with SHADE_KQUANT_CPU=1")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	rng := rand.New(rand.NewPCG(53, 54))
	for _, shape := range [][2]int{{2048, 2048}, {2048, 8192}} {
		rows, cols := shape[0], shape[1]
		for _, typ := range []Type{Q4_K, Q6_K} {
			m, err := NewMatrix(typ, rows, cols, kWeights(t, rng, typ, rows, cols/qkK, "quantized"))
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range []int{1, 8, 16, 32} {
				x := testData(rng, n*cols)
				y := make([]float32, n*rows)
				var buf Scratch
				best := map[string]time.Duration{}
				for round := 0; round < 3; round++ {
					for _, mode := range []string{"dot", "gemmk"} {
						saved := k.gemmK
						if mode == "dot" {
							k.gemmK = nil
						}
						MatMul(nil, m, x, n, y, &buf)
						// At least 100ms of CPU time: getrusage counts in ticks.
						t0, reps := threadCPU(), 0
						for ; threadCPU()-t0 < 100*time.Millisecond; reps++ {
							MatMul(nil, m, x, n, y, &buf)
						}
						d := (threadCPU() - t0) / time.Duration(reps)
						k.gemmK = saved
						if b, ok := best[mode]; !ok || d < b {
							best[mode] = d
						}
					}
				}
				gmac := func(d time.Duration) float64 { return float64(rows*cols*n) / d.Seconds() / 1e9 }
				fmt.Printf("%v %dx%d n=%-2d  dot %6.2f GMAC/s  gemmk %6.2f GMAC/s  (%.2fx)\n", typ, rows, cols, n,
					gmac(best["dot"]), gmac(best["gemmk"]), float64(best["dot"])/float64(best["gemmk"]))
			}
		}
	}
}
