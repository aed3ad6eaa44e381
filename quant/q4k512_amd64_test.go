//go:build amd64 && !noasm && gc

package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestGemmQ4KPanelsVNNI holds the AVX-512 VNNI Q4_K panel path
// (gemmQ4KPanelsVNNI: the gemmQ4KTile2V kernels on pairs of panels, an odd
// panel on the AVX2 tiles) bit for bit against the Go twin: every kernel
// width 1..q4kTile2Cols, batch sizes 1..33 and more, super-block counts
// that fill kTileChunk chunks whole and partly, row ranges of any panel
// count starting at any panel, misaligned buffers, and random, extreme and
// non-finite data. Outputs outside the range must stay untouched.
func TestGemmQ4KPanelsVNNI(t *testing.T) {
	if !haveAVX2FMA || !haveVNNI {
		t.Skip("CPU lacks AVX-512 VNNI")
	}
	rng := rand.New(rand.NewPCG(81, 82))
	defer func(w int) { q4kTile2Width = w }(q4kTile2Width)
	const panels, maxN = 7, 70
	const rows = panels * q4kPanelRows
	var batches []int
	for n := 1; n <= 33; n++ {
		batches = append(batches, n)
	}
	batches = append(batches, 40, 64, maxN)
	blockCounts := []int{1, 2, 3, kTileChunk, kTileChunk + 1, 2*kTileChunk + 1, 9}
	if testing.Short() {
		batches = []int{1, 2, 3, 8, 9, 11, 16, 17, 33, maxN}
		blockCounts = []int{1, kTileChunk + 1, 9}
	}
	for _, kind := range []string{"quantized", "random", "max", "min", "nonfinite"} {
		for _, nb := range blockCounts {
			rb, arb := nb*q4_KBytes, nb*q8_KBytes
			off := rng.IntN(8)
			w := kWeights(t, rng, Q4_K, rows, nb, kind)
			a := misaligned(kActRows(rng, maxN, nb, kind), 7-off)
			pan := misaligned(make([]byte, rows*nb*q4kTileBytes), off)
			for p := 0; p < panels; p++ {
				packQ4KPanel(w[p*q4kPanelRows*rb:], rb, nb, pan[p*nb*q4kTileBytes:])
			}
			want := make([]float32, maxN*rows)
			gemmKGo(Q4_K, w, rb, 0, rows, a, arb, maxN, want, rows)
			for width := 1; width <= q4kTile2Cols; width++ {
				q4kTile2Width = width
				for _, n := range batches {
					if width > 1 && n > 20 && width != 8 && n%3 != width%3 {
						continue // the long batches at a few widths only
					}
					p0 := rng.IntN(panels)
					p1 := p0 + 1 + rng.IntN(panels-p0)
					lo, hi := p0*q4kPanelRows, p1*q4kPanelRows
					i0 := rng.IntN(maxN - n + 1)
					y := make([]float32, n*rows)
					for e := range y {
						y[e] = float32(math.NaN())
					}
					gemmQ4KPanelsVNNI(pan, nb, lo, hi, a[i0*arb:], arb, n, y, rows)
					for i := 0; i < n; i++ {
						for r := 0; r < rows; r++ {
							got, exp := y[i*rows+r], want[(i0+i)*rows+r]
							if r < lo || r >= hi {
								if !math.IsNaN(float64(got)) {
									t.Fatalf("%s nb=%d width %d n=%d rows [%d,%d): wrote y[%d][%d] = %v", kind, nb, width, n, lo, hi, i, r, got)
								}
								continue
							}
							if !sameFloat(got, exp) {
								t.Fatalf("%s nb=%d width %d n=%d rows [%d,%d): y[%d][%d] = %v (%#x), Go twin %v (%#x)",
									kind, nb, width, n, lo, hi, i, r, got, math.Float32bits(got), exp, math.Float32bits(exp))
							}
						}
					}
				}
			}
		}
	}
}

// BenchmarkQ4KPanelsVNNI runs the AVX-512 Q4_K batch path on a layer's
// slice of panels held in L2 (4 panels of 2048 columns) by 16 activation
// rows, one thread: G MAC/s to compare with the int8 peak of `shade bench`
// (its per-thread half).
func BenchmarkQ4KPanelsVNNI(b *testing.B) {
	if !haveAVX2FMA || !haveVNNI {
		b.Skip("CPU lacks AVX-512 VNNI")
	}
	rng := rand.New(rand.NewPCG(83, 84))
	const panels, nb, n = 4, 8, 16
	const rows = panels * q4kPanelRows
	rb, arb := nb*q4_KBytes, nb*q8_KBytes
	w := kWeights(b, rng, Q4_K, rows, nb, "quantized")
	a := kActRows(rng, n, nb, "quantized")
	pan := make([]byte, rows*nb*q4kTileBytes)
	for p := 0; p < panels; p++ {
		packQ4KPanel(w[p*q4kPanelRows*rb:], rb, nb, pan[p*nb*q4kTileBytes:])
	}
	y := make([]float32, n*rows)
	for b.Loop() {
		gemmQ4KPanelsVNNI(pan, nb, 0, rows, a, arb, n, y, rows)
	}
	b.ReportMetric(float64(rows*nb*256*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
}
