//go:build amd64 && !noasm && gc

package quant

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestGemmDecMatchesTwin holds the decode kernels bit for bit against gemmGo
// on arbitrary weight bytes, over one group, several, and more than one
// call's worth (decGroups), at tiles that do not start at row 0.
func TestGemmDecMatchesTwin(t *testing.T) {
	if decKernels[0] == nil {
		t.Skip("CPU lacks AVX-512 VBMI")
	}
	rng := rand.New(rand.NewPCG(41, 42))
	for ti, typ := range []Type{Q4_0, Q8_0} {
		for _, nb := range []int{4, 8, 4 * decGroups, 4*decGroups + 4, 8*decGroups + 12} {
			rows, cols := 48, nb*32
			m, _ := NewMatrix(typ, rows, cols, randomWeights(rng, typ, rows, cols))
			xq := make([]byte, nb*q8_0Bytes)
			quantizeQ8_0(testData(rng, cols), xq)
			a := gemmActs{n: 1, nb: nb, q: make([]byte, nb*32), side: make([]uint32, 2*nb)}
			a.put(typ, 0, xq)
			for _, r0 := range []int{0, 16, 32} {
				got := make([]float32, gemmRows)
				want := make([]float32, gemmRows)
				gemmDec(ti, m.Data, m.rowBytes(), r0, &a, got)
				gemmGo(typ, m.Data, m.rowBytes(), r0, gemmRows, &a, 0, 1, want, gemmRows)
				for r := range got {
					if math.Float32bits(got[r]) != math.Float32bits(want[r]) {
						t.Fatalf("%v %d blocks, row %d: %v (%#x), gemmGo %v (%#x)", typ, nb, r0+r,
							got[r], math.Float32bits(got[r]), want[r], math.Float32bits(want[r]))
					}
				}
			}
		}
	}
}

// BenchmarkDecKernels sweeps an LM-head-size matrix (far larger than the
// caches) on one thread with one activation row, through the decode
// kernels, the whole-tile gemm kernels and the per-row dot kernels: MB/s is
// the weights' read rate.
func BenchmarkDecKernels(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, typ := range []Type{Q4_0, Q8_0} {
		for _, shape := range [][2]int{{128256, 2048}, {512, 2048}} {
			rows, cols := shape[0], shape[1]
			m, _ := NewMatrix(typ, rows, cols, randomWeights(rng, typ, rows, cols))
			nb := cols / 32
			xq := make([]byte, nb*q8_0Bytes)
			quantizeQ8_0(testData(rng, cols), xq)
			a := gemmActs{n: 1, nb: nb, q: make([]byte, nb*32), side: make([]uint32, 2*nb)}
			a.put(typ, 0, xq)
			y := make([]float32, rows)
			ti := 0
			if typ == Q8_0 {
				ti = 1
			}
			rb := m.rowBytes()
			for _, mode := range []string{"dec", "full", "dot"} {
				b.Run(fmt.Sprintf("%v/%dx%d/%s", typ, rows, cols, mode), func(b *testing.B) {
					b.SetBytes(int64(len(m.Data)))
					for b.Loop() {
						switch mode {
						case "dec":
							for r := 0; r < rows; r += 16 {
								gemmDec(ti, m.Data, rb, r, &a, y[r:])
							}
						case "full":
							for r := 0; r < rows; r += 16 {
								gemmKernels[ti][1][0](&m.Data[r*rb], nb, &a.q[0], 32, &a.side[0], 8, &y[r], 4, rb, 0xffff)
							}
						case "dot":
							dot := k.dotQ4_0Q8_0
							if typ == Q8_0 {
								dot = k.dotQ8_0Q8_0
							}
							for r := 0; r < rows; r++ {
								y[r] = dot(m.Row(r), xq)
							}
						}
					}
				})
			}
		}
	}
}

// TestGemmFullMatchesTwin holds every whole-tile kernel (1 to gemmCols
// activation rows) bit for bit against gemmGo on arbitrary weight bytes,
// at tiles that do not start at row 0 and with a tile after them (which the
// kernels prefetch), taking activation rows from inside a larger batch.
func TestGemmFullMatchesTwin(t *testing.T) {
	if !haveVNNI {
		t.Skip("CPU lacks AVX-512 VNNI")
	}
	rng := rand.New(rand.NewPCG(43, 44))
	const n = gemmCols + 3
	for ti, typ := range []Type{Q4_0, Q8_0} {
		for _, nb := range []int{1, 3, 33} {
			rows, cols := 48, nb*32
			m, _ := NewMatrix(typ, rows, cols, randomWeights(rng, typ, rows, cols))
			a := gemmActs{n: n, nb: nb, q: make([]byte, n*nb*32), side: make([]uint32, 2*n*nb)}
			xq := make([]byte, nb*q8_0Bytes)
			for i := 0; i < n; i++ {
				quantizeQ8_0(testData(rng, cols), xq)
				a.put(typ, i, xq)
			}
			rb := m.rowBytes()
			for c := 1; c <= gemmCols; c++ {
				i0, r0 := 2, 16
				got := make([]float32, c*rows)
				want := make([]float32, c*rows)
				gemmKernels[ti][1][c-1](&m.Data[r0*rb], nb, &a.q[i0*32], n*32, &a.side[2*i0], n*8, &got[0], rows*4, rb, 0xffff)
				gemmGo(typ, m.Data, rb, r0, gemmRows, &a, i0, c, want, rows)
				for i := 0; i < c; i++ {
					for r := 0; r < gemmRows; r++ {
						g, w := got[i*rows+r], want[i*rows+r]
						if math.Float32bits(g) != math.Float32bits(w) {
							t.Fatalf("%v %d blocks, %d activation rows: y[%d][%d] = %v (%#x), gemmGo %v (%#x)",
								typ, nb, c, i, r0+r, g, math.Float32bits(g), w, math.Float32bits(w))
						}
					}
				}
			}
		}
	}
}

// TestGemmPanelMatchesTwin holds the panel kernels (both variants of the
// tile kernels for 1-16 activation rows and of the one-row streams kernel)
// bit for bit against gemmGo on the same weights in the file's layout, over row
// ranges that start past row 0 and leave tiles beside the streams.
func TestGemmPanelMatchesTwin(t *testing.T) {
	if !haveVNNI {
		t.Skip("CPU lacks AVX-512 VNNI")
	}
	defer func(v *prefetchVariant) { tuned = v }(tuned)
	for i := range prefetchVariants {
		t.Run("prefetch to "+prefetchVariants[i].name, func(t *testing.T) {
			tuned = &prefetchVariants[i]
			testGemmPanelMatchesTwin(t)
		})
	}
}

func testGemmPanelMatchesTwin(t *testing.T) {
	rng := rand.New(rand.NewPCG(57, 58))
	for _, typ := range []Type{Q4_0, Q8_0} {
		for _, nb := range []int{1, 5, 64} {
			// Two panels a stream over the first two spans, three tiles after.
			rows, cols := (2*panelStreams+3)*panelRows, nb*32
			m, _ := NewMatrix(typ, rows, cols, randomWeights(rng, typ, rows, cols))
			rb := m.rowBytes()
			panels := alignedBytes(len(m.Data))
			packPanels(nil, m, panels)
			for _, c := range []int{1, 2, 7, 16, 17, 33} {
				a := gemmActs{n: c, nb: nb, q: make([]byte, c*nb*32), side: make([]uint32, 2*c*nb)}
				for i := range c {
					xq := make([]byte, nb*q8_0Bytes)
					quantizeQ8_0(testData(rng, cols), xq)
					a.put(typ, i, xq)
				}
				for _, span := range [][2]int{{0, rows}, {panelRows, rows}, {2 * panelRows, 3 * panelRows}} {
					lo, hi := span[0], span[1]
					got := make([]float32, c*rows)
					want := make([]float32, c*rows)
					gemmPanelVNNI(typ, panels, rb, lo, hi, &a, c, got, rows)
					for r0 := lo; r0 < hi; r0 += panelRows {
						gemmGo(typ, m.Data, rb, r0, panelRows, &a, 0, c, want[r0:], rows)
					}
					for i := range c {
						for r := lo; r < hi; r++ {
							g, w := got[i*rows+r], want[i*rows+r]
							if math.Float32bits(g) != math.Float32bits(w) {
								t.Fatalf("%v %d blocks, %d activation rows, rows [%d, %d): output (%d, %d) is %v, gemmGo %v",
									typ, nb, c, lo, hi, i, r, g, w)
							}
						}
					}
				}
			}
		}
	}
}
