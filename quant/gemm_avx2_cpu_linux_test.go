//go:build linux && amd64 && !noasm && gc

package quant

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"testing"
)

// TestAVX2TilesCPUTime reports (it asserts nothing about speed)
// single-thread MatMul throughput on repacked Q4_0 batches by the thread's
// CPU time, which a shared machine disturbs less than the wall clock: the
// half-panel kernels ("half") against the tile kernels ("tiles", at tile
// widths 4 to q4TileCols), rounds alternating, best of each. Opt in with
// SHADE_KQUANT_CPU=1 (and not -short).
func TestAVX2TilesCPUTime(t *testing.T) {
	if testing.Short() || os.Getenv("SHADE_KQUANT_CPU") == "" || !haveAVX2FMA {
		t.Skip("opt in with SHADE_KQUANT_CPU=1 (on an AVX2 CPU)")
	}
	if err := UseKernels("avx2"); err != nil {
		t.Skip(err)
	}
	defer UseGeneric(false)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer func(m, w int) { q4TileMin, q4TileWidth = m, w }(q4TileMin, q4TileWidth)
	rng := rand.New(rand.NewPCG(69, 70))
	for _, shape := range [][2]int{{2048, 2048}, {2048, 8192}} {
		rows, cols := shape[0], shape[1]
		m, _ := NewMatrix(Q4_0, rows, cols, randomWeights(rng, Q4_0, rows, cols))
		m = Repackable(m, nil)
		m.Repack(nil)
		for _, n := range []int{8, 16, 32} {
			x := testData(rng, n*cols)
			y := make([]float32, n*rows)
			var buf Scratch
			modes := []int{0}
			for w := 4; w <= q4TileCols; w++ {
				modes = append(modes, w)
			}
			best := map[int]float64{}
			for round := 0; round < 3; round++ {
				for _, w := range modes {
					q4TileMin, q4TileWidth = gemmFlipRows, max(w, 1)
					if w == 0 {
						q4TileMin = 1 << 30
					}
					d := cpuPerCall(func() { MatMul(nil, m, x, n, y, &buf) })
					if b, ok := best[w]; !ok || d < b {
						best[w] = d
					}
				}
			}
			fmt.Printf("Q4_0 %dx%d n=%-2d  half %6.2f GMAC/s", rows, cols, n, float64(rows*cols*n)/best[0])
			for _, w := range modes[1:] {
				fmt.Printf("  tiles(w%d) %6.2f", w, float64(rows*cols*n)/best[w])
			}
			fmt.Println()
		}
		m.DropPanels()
	}
}

// TestAVX2TileKernelsCPUTime reports (it asserts nothing) the CPU time of
// the Q4_0 kernels alone on one chunk of q4TileChunk blocks of a panel in
// L1, in G multiply-adds per CPU second: each half-panel kernel width (both
// halves, as avx2Tile calls them) against each tile kernel width (on the
// chunk unpacked once), and the unpacker per block. Opt in with
// SHADE_KQUANT_CPU=1.
func TestAVX2TileKernelsCPUTime(t *testing.T) {
	if testing.Short() || os.Getenv("SHADE_KQUANT_CPU") == "" || !haveAVX2FMA {
		t.Skip("opt in with SHADE_KQUANT_CPU=1 (on an AVX2 CPU)")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	rng := rand.New(rand.NewPCG(71, 72))
	const nb = q4TileChunk
	m, _ := NewMatrix(Q4_0, panelRows, nb*32, randomWeights(rng, Q4_0, panelRows, nb*32))
	panels := alignedBytes(len(m.Data))
	packPanels(nil, m, panels)
	a := testActsMode(rng, Q4_0, 8, nb, 0, "random")
	y := make([]float32, 8*panelRows)
	bs := panelRows * Q4_0.BlockBytes()
	tile := make([]byte, nb*q4TileBlockBytes)
	packQ4_0AVX2Tile(&tile[0], &panels[0], bs, nb, 0)
	best := map[string]float64{}
	var names []string
	for c := 1; c <= avx2TileCols; c++ {
		names = append(names, fmt.Sprintf("half%d", c))
	}
	for c := 1; c <= q4TileCols; c++ {
		names = append(names, fmt.Sprintf("tile%d", c))
	}
	names = append(names, "unpack")
	for round := 0; round < 5; round++ {
		for _, name := range names {
			var c int
			var f func()
			switch {
			case name == "unpack":
				f = func() { packQ4_0AVX2Tile(&tile[0], &panels[0], bs, nb, 0) }
			case name[0] == 'h':
				fmt.Sscanf(name, "half%d", &c)
				f = func() {
					for h := 0; h < 2; h++ {
						avx2Half(0, c, &panels[16*h], &panels[32+32*h], bs, nb, &a.q[0], a.n*32, &a.side[0], a.n*8, &y[8*h], panelRows*4, 0)
					}
				}
			default:
				fmt.Sscanf(name, "tile%d", &c)
				f = func() { q4Tile(c, &tile[0], nb, &a.u[0], a.n*32, &a.side[0], a.n*8, &y[0], panelRows*4) }
			}
			d := cpuPerCall(f)
			if b, ok := best[name]; !ok || d < b {
				best[name] = d
			}
			if name == "unpack" {
				best[name] = min(best[name], d)
			} else {
				best[name+"c"] = float64(c)
			}
		}
	}
	for _, name := range names {
		if name == "unpack" {
			fmt.Printf("Q4_0 unpack %.1f ns per block of 16 rows\n", best[name]/nb)
			continue
		}
		fmt.Printf("Q4_0 %-6s %6.2f G MAC/s\n", name, float64(panelRows*32*nb)*best[name+"c"]/best[name])
	}
}
