//go:build amd64 && !noasm && gc

package quant

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"shade/par"
)

// BenchmarkPanelStreams measures one-row products (decode) on a repacked
// matrix far larger than the caches (an LM head, 128256x2048) with the AVX2
// streams kernels, for each stream count and prefetch distance, so that the
// defaults (avx2Streams, avx2Prefetch) can be chosen on the CPU at hand:
// MB/s is the weights' read rate. Run with -count to alternate.
func BenchmarkPanelStreams(b *testing.B) {
	if !haveAVX2FMA {
		b.Skip("CPU lacks AVX2, FMA or F16C")
	}
	defer UseGeneric(false)
	if err := UseKernels("avx2"); err != nil {
		b.Fatal(err)
	}
	saved, savedPf := avx2Streams, avx2Prefetch
	defer func() { avx2Streams, avx2Prefetch = saved, savedPf }()
	rng := rand.New(rand.NewPCG(63, 64))
	for _, typ := range []Type{Q4_0, Q8_0} {
		rows, cols := 128256, 2048
		m, _ := NewMatrix(typ, rows, cols, randomWeights(rng, typ, rows, cols))
		m = Repackable(m, nil)
		x := testData(rng, cols)
		y := make([]float32, rows)
		for _, threads := range []int{1, 2} {
			p := par.New(threads)
			m.Repack(p)
			for _, s := range []int{1, 2, 3, 4} {
				for _, pf := range []int{0, 512, 1024, 2048, 4096} {
					b.Run(fmt.Sprintf("%v/threads=%d/streams=%d/prefetch=%d", typ, threads, s, pf), func(b *testing.B) {
						avx2Streams, avx2Prefetch = s, pf
						var buf Scratch
						b.SetBytes(int64(len(m.Data)))
						for b.Loop() {
							MatMul(p, m, x, 1, y, &buf)
						}
					})
				}
			}
			p.Close()
		}
		m.DropPanels()
	}
}

// avx2Modes are the weight and activation contents the AVX2 kernel tests
// cover: random bytes, the extremes (Q4_0 nibbles all 0 or all 15, Q8_0
// weights all -128 or 127, activations all +127 or -127 against them), and
// random bytes with some NaN and infinite scales.
var avx2Modes = []string{"random", "low", "high", "nan-inf"}

// testWeightsMode returns rows x nb blocks of typ in mode (see avx2Modes).
func testWeightsMode(rng *rand.Rand, typ Type, rows, nb int, mode string) []byte {
	w := randomWeights(rng, typ, rows, nb*32)
	bw := typ.BlockBytes()
	for b := 0; b < rows*nb; b++ {
		blk := w[b*bw : (b+1)*bw]
		switch mode {
		case "low", "high":
			v := byte(0x00) // nibbles 0
			if typ == Q8_0 {
				v = 0x80 // -128
			}
			if mode == "high" {
				v = 0xff // nibbles 15
				if typ == Q8_0 {
					v = 0x7f
				}
			}
			for j := 2; j < bw; j++ {
				blk[j] = v
			}
		case "nan-inf":
			if b%7 == 3 {
				h := [...]uint16{0x7c00, 0xfc00, 0x7e00, 0x7c01}[b/7%4] // ±Inf, NaNs
				binary.LittleEndian.PutUint16(blk, h)
			}
		}
	}
	return w
}

// testActsMode returns n activation rows of nb blocks laid out for weights
// of type typ, starting off bytes into their buffer (misaligned), in mode.
func testActsMode(rng *rand.Rand, typ Type, n, nb, off int, mode string) *gemmActs {
	a := &gemmActs{n: n, nb: nb, q: make([]byte, n*nb*32+off)[off:], side: make([]uint32, 2*n*nb)}
	for i := 0; i < n; i++ {
		for b := 0; b < nb; b++ {
			e := b*n + i
			q := a.q[e*32 : (e+1)*32]
			var sum int32
			for j := range q {
				v := int8(rng.IntN(255) - 127) // quantizeQ8_0 writes -127..127
				switch mode {
				case "low":
					v = 127
					if i%2 == 1 {
						v = -127
					}
				case "high":
					v = -127
					if i%2 == 1 {
						v = 127
					}
				}
				q[j] = byte(v)
				sum += int32(v)
			}
			d := float32(math.Ldexp(1+rng.Float64(), -10+rng.IntN(6)))
			if mode == "nan-inf" && e%11 == 5 {
				d = [...]float32{float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}[e/11%3]
			}
			a.side[2*e] = math.Float32bits(d)
			a.side[2*e+1] = uint32(-gemmCorrection(typ) * sum)
		}
	}
	return a
}

// sameBits reports whether two outputs are the same float32 (any two NaNs
// are the same).
// ymmFamilies are the YMM kernel families this CPU runs, with their names.
func ymmFamilies() map[string]ymmFamily {
	fams := map[string]ymmFamily{}
	if haveAVX2FMA {
		fams["avx2"] = famAVX2
	}
	if haveAVXVNNI {
		fams["avxvnni"] = famAVXVNNI
	}
	return fams
}

func sameBits(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || a != a && b != b
}

// TestAVX2PanelMatchesTwin holds gemmPanelYMM of each family this CPU runs
// (every half-panel kernel width, the remainders beside the one-row
// streams, every stream count) bit for bit against gemmGo on the same weights in the file's layout, for
// batches of 1 to 33 rows and a few larger, block counts around the
// kernels' loops, misaligned activations and extreme values.
func TestAVX2PanelMatchesTwin(t *testing.T) {
	if !haveAVX2FMA {
		t.Skip("CPU lacks AVX2, FMA or F16C")
	}
	saved, savedPf := avx2Streams, avx2Prefetch
	defer func() { avx2Streams, avx2Prefetch = saved, savedPf }()
	rng := rand.New(rand.NewPCG(65, 66))
	batches := []int{40, 47, 64}
	for c := 1; c <= 33; c++ {
		batches = append(batches, c)
	}
	for _, typ := range []Type{Q4_0, Q8_0} {
		for _, nb := range []int{1, 2, 5, 33, 64} {
			for _, mode := range avx2Modes {
				rows, cols := 9*panelRows, nb*32
				m, _ := NewMatrix(typ, rows, cols, testWeightsMode(rng, typ, rows, nb, mode))
				rb := m.rowBytes()
				panels := alignedBytes(len(m.Data))
				packPanels(nil, m, panels)
				for bi, c := range batches {
					if nb > 5 && bi%4 != 0 || testing.Short() && mode != "random" && bi%3 != 0 {
						continue
					}
					a := testActsMode(rng, typ, c, nb, bi%7, mode)
					avx2Streams, avx2Prefetch = 1+bi%4, []int{0, 512, 1024}[bi%3]
					want := make([]float32, c*rows)
					gemmGo(typ, m.Data, rb, 0, rows, a, 0, c, want, rows)
					for fname, fam := range ymmFamilies() {
						for _, span := range [][2]int{{0, rows}, {panelRows, rows}, {2 * panelRows, 3 * panelRows}} {
							lo, hi := span[0], span[1]
							got := make([]float32, c*rows)
							for e := range got {
								got[e] = 7 // outputs outside [lo, hi) must stay
							}
							gemmPanelYMM(fam, typ, panels, rb, lo, hi, a, c, got, rows)
							for i := range c {
								for r := range rows {
									g, w := got[i*rows+r], want[i*rows+r]
									if r < lo || r >= hi {
										w = 7
									}
									if !sameBits(g, w) {
										t.Fatalf("%s: %v %s, %d blocks, %d activation rows, rows [%d, %d), %d streams: output (%d, %d) is %v (%#x), gemmGo %v (%#x)",
											fname, typ, mode, nb, c, lo, hi, avx2Streams, i, r, g, math.Float32bits(g), w, math.Float32bits(w))
									}
								}
							}
						}
					}
				}
			}
		}
	}
}

// TestAVX2GemmMatchesTwin holds gemmYMM of each family this CPU runs (the
// file's layout, repacked chunk by chunk) bit for bit against gemmGo: tiles of 1 to 16 rows not starting
// at row 0, activation rows taken from inside a larger batch, block counts
// across the chunk size, extreme values.
func TestAVX2GemmMatchesTwin(t *testing.T) {
	if !haveAVX2FMA {
		t.Skip("CPU lacks AVX2, FMA or F16C")
	}
	rng := rand.New(rand.NewPCG(67, 68))
	const n = 37
	for _, typ := range []Type{Q4_0, Q8_0} {
		for _, nb := range []int{1, 3, chunkBlocks - 1, chunkBlocks, chunkBlocks + 1, 2*chunkBlocks + 5} {
			for _, mode := range avx2Modes {
				rows := 40
				m, _ := NewMatrix(typ, rows, nb*32, testWeightsMode(rng, typ, rows, nb, mode))
				rb := m.rowBytes()
				a := testActsMode(rng, typ, n, nb, nb%5, mode)
				for _, tile := range [][3]int{{3, 16, 0}, {16, 16, 5}, {0, 1, 1}, {17, 7, 0}, {24, 16, 36}, {20, 15, 2}} {
					r0, tr, i0 := tile[0], tile[1], tile[2]
					for _, c := range []int{1, 2, 4, 5, 6, 16, 17, 33, n - i0} {
						if i0+c > n {
							continue
						}
						ys := tr + 3
						want := make([]float32, c*ys)
						gemmGo(typ, m.Data, rb, r0, tr, a, i0, c, want, ys)
						for fname, fam := range ymmFamilies() {
							got := make([]float32, c*ys)
							gemmYMM(fam, typ, m.Data, rb, r0, tr, a, i0, c, got, ys)
							for e := range got {
								if !sameBits(got[e], want[e]) {
									t.Fatalf("%s: %v %s, %d blocks, rows [%d, %d), activation rows [%d, %d): output (%d, %d) is %v (%#x), gemmGo %v (%#x)",
										fname, typ, mode, nb, r0, r0+tr, i0, i0+c, e/ys, e%ys, got[e], math.Float32bits(got[e]), want[e], math.Float32bits(want[e]))
								}
							}
						}
					}
				}
			}
		}
	}
}

// BenchmarkAVX2HalfKernels runs each half-panel kernel on one panel of 64
// blocks held in L1/L2, so that GMAC/s is the kernel's arithmetic rate on
// one core (the int8 multiply-adds of 8 rows by c activation rows).
func BenchmarkAVX2HalfKernels(b *testing.B) {
	if !haveAVX2FMA {
		b.Skip("CPU lacks AVX2, FMA or F16C")
	}
	rng := rand.New(rand.NewPCG(69, 70))
	for ti, typ := range []Type{Q4_0, Q8_0} {
		const nb = 64
		m, _ := NewMatrix(typ, panelRows, nb*32, randomWeights(rng, typ, panelRows, nb*32))
		panels := alignedBytes(len(m.Data))
		packPanels(nil, m, panels)
		a := testActsMode(rng, typ, avx2TileCols, nb, 0, "random")
		y := make([]float32, avx2TileCols*panelRows)
		bs := panelRows * typ.BlockBytes()
		for c := 1; c <= avx2TileCols; c++ {
			for fname, fam := range ymmFamilies() {
				b.Run(fmt.Sprintf("%s/%v/c=%d", fname, typ, c), func(b *testing.B) {
					for b.Loop() {
						fam.half(ti, c, &panels[0], &panels[32], bs, nb, &a.q[0], a.n*32, &a.side[0], a.n*8, &y[0], panelRows*4, 0)
					}
					b.ReportMetric(float64(8*32*nb*c)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
				})
			}
		}
	}
}

// TestPackAVX2MatchesGo holds the assembly repacking of 16 whole rows
// byte for byte against packChunk and packPanel, for chunks not starting at
// block 0.
func TestPackAVX2MatchesGo(t *testing.T) {
	if !haveAVX2FMA {
		t.Skip("CPU lacks AVX2, FMA or F16C")
	}
	rng := rand.New(rand.NewPCG(71, 72))
	for _, typ := range []Type{Q4_0, Q8_0} {
		for _, nb := range []int{1, 7, 40} {
			m, _ := NewMatrix(typ, panelRows, nb*32, randomWeights(rng, typ, panelRows, nb*32))
			rb, bw := m.rowBytes(), typ.BlockBytes()
			whole := make([]byte, len(m.Data))
			packPanel(typ, m.Data, rb, whole)
			for b0 := 0; b0 < nb; b0 += 3 {
				kb := min(5, nb-b0)
				got := make([]byte, kb*panelRows*bw)
				want := make([]byte, kb*panelRows*bw)
				packAVX2(typ, m.Data, rb, b0, kb, got)
				packChunk(typ, m.Data, rb, panelRows, b0, kb, want)
				for i := range got {
					if got[i] != want[i] || got[i] != whole[b0*panelRows*bw+i] {
						t.Fatalf("%v %d blocks, chunk at block %d: byte %d is %#x, packChunk %#x, packPanel %#x",
							typ, nb, b0, i, got[i], want[i], whole[b0*panelRows*bw+i])
					}
				}
			}
		}
	}
}
