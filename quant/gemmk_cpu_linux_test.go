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
// kernels) against gemmk, alternating, best of several rounds; for Q4_K
// batches gemmk is also run without its tiles ("rows": the per-row gemmK
// kernels alone). Opt in with
// SHADE_KQUANT_CPU=1 (and not -short).
func TestGemmKCPUTime(t *testing.T) {
	if testing.Short() || os.Getenv("SHADE_KQUANT_CPU") == "" {
		t.Skip("opt in with SHADE_KQUANT_CPU=1")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	rng := rand.New(rand.NewPCG(53, 54))
	for _, shape := range [][2]int{{2048, 2048}, {8192, 2048}, {2048, 8192}} {
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
				modes := []string{"dot", "gemmk"}
				if typ == Q4_K && n >= q4kTileMin {
					modes = append(modes, "rows")
				}
				if typ == Q6_K && haveVNNI {
					modes = append(modes, "avx2") // the AVX2 kernels in place of the AVX-512 ones
				}
				for round := 0; round < 3; round++ {
					for _, mode := range modes {
						saved, savedMin := k.gemmK, q4kTileMin
						switch mode {
						case "dot":
							k.gemmK = nil
						case "rows":
							q4kTileMin = 1 << 30
						case "avx2":
							k.gemmK = gemmKAVX2
						}
						d := matMulCPU(m, x, n, y, &buf)
						k.gemmK, q4kTileMin = saved, savedMin
						if b, ok := best[mode]; !ok || d < b {
							best[mode] = d
						}
					}
				}
				gmac := func(d time.Duration) float64 { return float64(rows*cols*n) / d.Seconds() / 1e9 }
				fmt.Printf("%v %dx%d n=%-2d  dot %6.2f GMAC/s  gemmk %6.2f GMAC/s  (%.2fx)", typ, rows, cols, n,
					gmac(best["dot"]), gmac(best["gemmk"]), float64(best["dot"])/float64(best["gemmk"]))
				if r, ok := best["rows"]; ok {
					fmt.Printf("  without tiles %6.2f GMAC/s (tiles %.2fx)", gmac(r), float64(r)/float64(best["gemmk"]))
				}
				if r, ok := best["avx2"]; ok {
					fmt.Printf("  avx2 %6.2f GMAC/s (gemmk %.2fx)", gmac(r), float64(r)/float64(best["gemmk"]))
				}
				fmt.Println()
			}
		}
	}
}

// matMulCPU is the CPU time on this thread of one single-threaded MatMul
// of m by the n rows of x, after one unmeasured call, over at least 100ms
// of CPU time: getrusage counts in ticks.
func matMulCPU(m Matrix, x []float32, n int, y []float32, buf *Scratch) time.Duration {
	MatMul(nil, m, x, n, y, buf)
	t0, reps := threadCPU(), 0
	for ; threadCPU()-t0 < 100*time.Millisecond; reps++ {
		MatMul(nil, m, x, n, y, buf)
	}
	return (threadCPU() - t0) / time.Duration(reps)
}

// cpuPerCall is f's CPU time per call on this thread in ns, over at least
// 20ms of CPU (in runs of 100 calls: getrusage costs a system call).
func cpuPerCall(f func()) float64 {
	reps0 := 100
	f()
	t0, reps := threadCPU(), 0
	for threadCPU()-t0 < 20*time.Millisecond {
		for range reps0 {
			f()
		}
		reps += reps0
	}
	return float64((threadCPU() - t0).Nanoseconds()) / float64(reps)
}

// TestGemmKKernelsCPUTime reports (it asserts nothing) the CPU time of the
// Q4_K kernels alone, in L1, per pair-block (one weight row by one
// activation row by one super-block, 256 multiply-adds): the per-row R1C8
// kernel against the tile kernels on a packed chunk, and the packer per row
// and super-block, rounds alternating. Opt in with SHADE_KQUANT_CPU=1.
func TestGemmKKernelsCPUTime(t *testing.T) {
	if testing.Short() || os.Getenv("SHADE_KQUANT_CPU") == "" {
		t.Skip("opt in with SHADE_KQUANT_CPU=1")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	rng := rand.New(rand.NewPCG(57, 58))
	const tb = kTileChunk
	w := kWeights(t, rng, Q4_K, 8, tb, "quantized")
	a := kActRows(rng, 8, tb, "quantized")
	tile := make([]byte, tb*q4kTileBytes)
	bp := make([]int16, tb*8*8)
	y := make([]float32, 64)
	m := make([]float32, 64)
	rb, arb := tb*q4_KBytes, tb*q8_KBytes
	packQ4KTile(&tile[0], &w[0], rb, tb, 0)
	best := map[string]float64{}
	names := []string{"R1C8", "pack"}
	for c := 1; c <= q4kTileCols; c++ {
		names = append(names, fmt.Sprintf("TileC%d", c))
	}
	for round := 0; round < 5; round++ {
		for _, name := range names {
			var f func()
			var pairs int
			switch name {
			case "R1C8":
				f, pairs = func() { gemmQ4KR1C8(&w[0], rb, &a[0], arb, tb, &y[0], 8) }, tb*8
			case "pack":
				f, pairs = func() { packQ4KTile(&tile[0], &w[0], rb, tb, 0) }, tb*8
			default:
				var c int
				fmt.Sscanf(name, "TileC%d", &c)
				kern := q4kTileKernels[c-1]
				f, pairs = func() { kern(&tile[0], tb, &a[0], arb, &bp[0], 8*16, &y[0], 32, &m[0], 1) }, tb*8*c
			}
			d := cpuPerCall(f) / float64(pairs)
			if b, ok := best[name]; !ok || d < b {
				best[name] = d
			}
		}
	}
	for _, name := range names {
		fmt.Printf("Q4_K %-7s %5.2f ns per pair-block (pack: per row-block)\n", name, best[name])
	}
}

// TestGemmKPanelCPUTime reports (it asserts nothing about speed)
// single-thread MatMul throughput on Q4_K matrices repacked into row
// panels, by the thread's CPU time: the avx2 set's gemmKPanel
// (gemmQ4KPanelsAVX2) against the avx512 set's (gemmQ4KPanelsVNNI),
// alternating, best of rounds. Opt in with SHADE_KQUANT_CPU=1; it skips
// without AVX-512 VNNI.
func TestGemmKPanelCPUTime(t *testing.T) {
	if testing.Short() || os.Getenv("SHADE_KQUANT_CPU") == "" {
		t.Skip("opt in with SHADE_KQUANT_CPU=1")
	}
	if !haveAVX2FMA || !haveVNNI {
		t.Skip("CPU lacks AVX-512 VNNI")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	saved := k.gemmKPanel
	defer func() { k.gemmKPanel = saved }()
	k.gemmKPanel = gemmQ4KPanelsAVX2
	rng := rand.New(rand.NewPCG(61, 62))
	for _, shape := range [][2]int{{2048, 2048}, {8192, 2048}, {2048, 8192}} {
		rows, cols := shape[0], shape[1]
		plain, err := NewMatrix(Q4_K, rows, cols, kWeights(t, rng, Q4_K, rows, cols/qkK, "quantized"))
		if err != nil {
			t.Fatal(err)
		}
		m := Repackable(plain, nil)
		if !m.Repack(nil) {
			t.Fatal("not repacked")
		}
		for _, n := range []int{1, 8, 16, 32} {
			x := testData(rng, n*cols)
			y := make([]float32, n*rows)
			var buf Scratch
			best := map[string]time.Duration{}
			modes := map[string]func(panels []byte, nb, lo, hi int, a []byte, arb, n int, y []float32, ys int){
				"avx2": gemmQ4KPanelsAVX2, "vnni": gemmQ4KPanelsVNNI,
			}
			for round := 0; round < 3; round++ {
				for _, mode := range []string{"avx2", "vnni"} {
					k.gemmKPanel = modes[mode]
					d := matMulCPU(m, x, n, y, &buf)
					if b, ok := best[mode]; !ok || d < b {
						best[mode] = d
					}
				}
			}
			k.gemmKPanel = gemmQ4KPanelsAVX2
			gmac := func(d time.Duration) float64 { return float64(rows*cols*n) / d.Seconds() / 1e9 }
			fmt.Printf("Q4_K panels %dx%d n=%-2d  avx2 %6.2f GMAC/s  vnni %6.2f GMAC/s  (%.2fx)\n", rows, cols, n,
				gmac(best["avx2"]), gmac(best["vnni"]), float64(best["avx2"])/float64(best["vnni"]))
		}
	}
}

// TestGemmKTile2CPUTime reports (it asserts nothing) the CPU time of the
// Q4_K tile kernels alone on two panels' chunk in L1, per pair-block (one
// row by one activation row by one super-block, 256 multiply-adds): the
// AVX2 gemmQ4KTileC<c> (on each panel in turn) against the VNNI
// gemmQ4KTile2V<c>, rounds alternating. Opt in with SHADE_KQUANT_CPU=1.
func TestGemmKTile2CPUTime(t *testing.T) {
	if testing.Short() || os.Getenv("SHADE_KQUANT_CPU") == "" {
		t.Skip("opt in with SHADE_KQUANT_CPU=1")
	}
	if !haveAVX2FMA || !haveVNNI {
		t.Skip("CPU lacks AVX-512 VNNI")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	rng := rand.New(rand.NewPCG(63, 64))
	const tb = kTileChunk
	w := kWeights(t, rng, Q4_K, 16, tb, "quantized")
	a := kActRows(rng, q4kTile2Cols, tb, "quantized")
	pan := make([]byte, 2*tb*q4kTileBytes)
	rb, arb := tb*q4_KBytes, tb*q8_KBytes
	packQ4KPanel(w, rb, tb, pan)
	packQ4KPanel(w[8*rb:], rb, tb, pan[tb*q4kTileBytes:])
	bp := make([]int16, tb*q4kTile2Cols*8)
	y := make([]float32, 16*q4kTile2Cols)
	m := make([]float32, 16*q4kTile2Cols)
	best := map[string]float64{}
	var names []string
	for c := 1; c <= q4kTileCols; c++ {
		names = append(names, fmt.Sprintf("TileC%d", c))
	}
	for c := 1; c <= q4kTile2Cols; c++ {
		names = append(names, fmt.Sprintf("Tile2V%d", c))
	}
	for round := 0; round < 5; round++ {
		for _, name := range names {
			var f func()
			var c int
			if _, err := fmt.Sscanf(name, "TileC%d", &c); err == nil {
				kern := q4kTileKernels[c-1]
				f = func() {
					kern(&pan[0], tb, &a[0], arb, &bp[0], 8*16, &y[0], 64, &m[0], 1)
					kern(&pan[tb*q4kTileBytes], tb, &a[0], arb, &bp[0], 8*16, &y[8], 64, &m[8], 1)
				}
			} else {
				fmt.Sscanf(name, "Tile2V%d", &c)
				kern := q4kTile2Kernels[c-1]
				f = func() { kern(&pan[0], tb*q4kTileBytes, tb, &a[0], arb, &bp[0], 8*16, &y[0], 64, &m[0], 1) }
			}
			d := cpuPerCall(f) / float64(tb*16*c)
			if b, ok := best[name]; !ok || d < b {
				best[name] = d
			}
		}
	}
	for _, name := range names {
		fmt.Printf("Q4_K %-8s %5.2f ns per pair-block\n", name, best[name])
	}
}

// TestGemmKQ6KZKernelsCPUTime reports (it asserts nothing) the CPU time of
// the Q6_K kernels alone, in L1, per pair-block: the AVX2 per-row kernels
// against the AVX-512 ones (gemmk512_amd64.s), rounds alternating. Opt in
// with SHADE_KQUANT_CPU=1; skipped without AVX-512 VNNI.
func TestGemmKQ6KZKernelsCPUTime(t *testing.T) {
	if testing.Short() || os.Getenv("SHADE_KQUANT_CPU") == "" {
		t.Skip("opt in with SHADE_KQUANT_CPU=1")
	}
	if !haveVNNI || !haveAVX2FMA {
		t.Skip("CPU lacks AVX-512 VNNI")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	rng := rand.New(rand.NewPCG(59, 60))
	const nb = 4
	w := kWeights(t, rng, Q6_K, 8, nb, "quantized")
	a := kActRows(rng, q6kZCols, nb, "quantized")
	rb, arb := nb*q6_KBytes, nb*q8_KBytes
	dy := make([]float32, nb*q6kZCols+q6kZCols)
	sums := make([]float32, 8*q6kZCols) // eight float32 lanes an activation row
	y := make([]float32, 64)
	best := map[string]float64{}
	names := []string{"avx2 R4C1", "avx2 R1C8"}
	for _, d := range q6kZDec {
		names = append(names, fmt.Sprintf("zmm DecR%d", d.r))
	}
	for _, c := range []int{1, 4, 8, 12, 16} {
		names = append(names, fmt.Sprintf("zmm TC%d", c))
	}
	names = append(names, "zmm acts")
	at := make([]byte, nb*q6kZCols*q6kZActBytes)
	for i := 0; i < q6kZCols; i++ {
		q6kZActs(&a[i*arb], nb, &at[i*q6kZActBytes], q6kZCols*q6kZActBytes)
	}
	for round := 0; round < 5; round++ {
		for _, name := range names {
			var f func()
			var pairs int
			var r, c int
			fmt.Sscanf(name, "zmm DecR%d", &r)
			switch {
			case name == "avx2 R4C1":
				f, pairs = func() { gemmQ6KR4C1(&w[0], rb, &a[0], arb, nb, &y[0], 1) }, nb*4
			case name == "avx2 R1C8":
				f, pairs = func() { gemmQ6KR1C8(&w[0], rb, &a[0], arb, nb, &y[0], 1) }, nb*8
			case r > 0:
				var kern func(w *byte, rb int, a *byte, nb int, y *float32, ys int, pf int)
				for _, d := range q6kZDec {
					if d.r == r {
						kern = d.f
					}
				}
				f, pairs = func() { kern(&w[0], rb, &a[0], nb, &y[0], 1, 0) }, nb*r
			case name == "zmm acts":
				f, pairs = func() { q6kZActs(&a[0], nb, &at[0], q6kZActBytes) }, nb
			default:
				fmt.Sscanf(name, "zmm TC%d", &c)
				kern := q6kZTBatch[c-1]
				f, pairs = func() { kern(&w[0], &at[0], q6kZCols*q6kZActBytes, nb, &dy[0], 4*q6kZCols, &sums[0], 0) }, nb*c
			}
			d := cpuPerCall(f) / float64(pairs)
			if b, ok := best[name]; !ok || d < b {
				best[name] = d
			}
		}
	}
	for _, name := range names {
		fmt.Printf("Q6_K %-10s %5.2f ns per pair-block (acts: per activation block)\n", name, best[name])
	}
}
