//go:build amd64 && !noasm && gc

package quant

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"shade/par"
)

// BenchmarkGemmKKernels runs each generated kernel alone on one row group
// of 8 super-blocks (2048 columns) in L1: ns per super-block per pair is
// the kernel's compute cost without the memory's.
func BenchmarkGemmKKernels(b *testing.B) {
	rng := rand.New(rand.NewPCG(47, 48))
	const nb = 8
	for ti, typ := range []Type{Q4_K, Q6_K} {
		rb := nb * typ.BlockBytes()
		w := kWeights(b, rng, typ, 8, nb, "quantized")
		a := kActRows(rng, 8, nb, "quantized")
		y := make([]float32, 64)
		for _, s := range gemmKShapes {
			f := s.q4k
			if ti == 1 {
				f = s.q6k
			}
			b.Run(fmt.Sprintf("%v/R%dC%d", typ, s.r, s.c), func(b *testing.B) {
				for b.Loop() {
					f(&w[0], rb, &a[0], nb*q8_KBytes, nb, &y[0], 8)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(nb*s.r*s.c), "ns/pair-block")
			})
		}
	}
	// The Q4_K tile kernels on one packed chunk of a tile of 8 rows (as
	// gemmQ4KTiles runs them), and the packer.
	const tb = kTileChunk
	w := kWeights(b, rng, Q4_K, 8, tb, "quantized")
	a := kActRows(rng, q4kTileCols, tb, "quantized")
	tile := make([]byte, tb*q4kTileBytes)
	bp := make([]int16, tb*q4kTileCols*8)
	y := make([]float32, 8*q4kTileCols)
	m := make([]float32, 8*q4kTileCols)
	b.Run("Q4_K/pack", func(b *testing.B) {
		for b.Loop() {
			packQ4KTile(&tile[0], &w[0], tb*q4_KBytes, tb, 0)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(tb*8), "ns/row-block")
	})
	for c := 1; c <= q4kTileCols; c++ {
		b.Run(fmt.Sprintf("Q4_K/TileC%d", c), func(b *testing.B) {
			f := q4kTileKernels[c-1]
			for b.Loop() {
				f(&tile[0], tb, &a[0], tb*q8_KBytes, &bp[0], q4kTileCols*16, &y[0], 32, &m[0], 1)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(tb*8*c), "ns/pair-block")
		})
	}
}

// TestGemmKShapes holds every generated kernel, including shapes gemmKAVX2
// does not currently choose, bit for bit against the Go twins, with rows
// far apart (as the decode streams take them) and outputs strided.
func TestGemmKShapes(t *testing.T) {
	if !haveAVX2FMA {
		t.Skip("CPU lacks AVX2, FMA or F16C")
	}
	rng := rand.New(rand.NewPCG(49, 50))
	for ti, typ := range []Type{Q4_K, Q6_K} {
		for _, kind := range []string{"quantized", "random", "max", "min", "nonfinite"} {
			for _, nb := range []int{1, 2, 5, 9} {
				const rows, acts, gap = 12, 8, 3
				rb, arb := nb*typ.BlockBytes(), nb*q8_KBytes
				w := misaligned(kWeights(t, rng, typ, rows, nb, kind), rng.IntN(8))
				a := misaligned(kActRows(rng, acts, nb, kind), rng.IntN(8))
				want := make([]float32, acts*rows)
				gemmKGo(typ, w, rb, 0, rows, a, arb, acts, want, rows)
				for _, s := range gemmKShapes {
					f := s.q4k
					if ti == 1 {
						f = s.q6k
					}
					y := make([]float32, acts*rows)
					stride, ys := rb, rows // rows one apart, outputs by activation row
					if s.c == 1 && s.r > 1 {
						stride, ys = gap*rb, gap // rows gap apart, their outputs too
					}
					f(&w[0], stride, &a[0], arb, nb, &y[0], ys)
					for j := 0; j < s.r; j++ {
						for i := 0; i < s.c; i++ {
							row, at := j, i*rows+j
							if s.c == 1 && s.r > 1 {
								row, at = gap*j, gap*j
							}
							if got, exp := y[at], want[i*rows+row]; !sameFloat(got, exp) {
								t.Fatalf("%v R%dC%d %s nb=%d: row %d activation %d = %v, Go twin %v", typ, s.r, s.c, kind, nb, row, i, got, exp)
							}
						}
					}
				}
			}
		}
	}
}

// BenchmarkMatMulKDRAM sweeps Q4_K and Q6_K matrices far larger than the
// caches (an LM head's shape, 128256x2048) at batch 1, with the gemmK
// kernels and with the per-row dot kernels, alternating: MB/s is the
// weights' read rate.
func BenchmarkMatMulKDRAM(b *testing.B) {
	rng := rand.New(rand.NewPCG(51, 52))
	p := par.New(2)
	defer p.Close()
	for _, typ := range []Type{Q4_K, Q6_K} {
		rows, cols := 128256, 2048
		size, _ := typ.RowBytes(rows * cols)
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		bw := typ.BlockBytes()
		for i := 0; i < size/bw; i++ { // normal f16 scales: no subnormal float work
			blk := data[i*bw:]
			if typ == Q6_K {
				blk = blk[208:]
			}
			blk[1] = 0x20 | blk[1]&0x83
			if typ == Q4_K {
				blk[3] = 0x20 | blk[3]&0x83
			}
		}
		m, _ := NewMatrix(typ, rows, cols, data)
		x := testData(rng, cols)
		y := make([]float32, rows)
		var buf Scratch
		modes := []string{"dot", "gemmk", "dot", "gemmk"}
		if typ == Q6_K && haveVNNI {
			modes = []string{"avx2", "gemmk", "avx2", "gemmk"}
		}
		for _, mode := range modes {
			b.Run(fmt.Sprintf("%v/%s", typ, mode), func(b *testing.B) {
				saved := k.gemmK
				switch mode {
				case "dot":
					k.gemmK = nil
				case "avx2": // the AVX2 kernels in place of the AVX-512 ones
					k.gemmK = gemmKAVX2
				}
				defer func() { k.gemmK = saved }()
				b.SetBytes(int64(size))
				for b.Loop() {
					MatMul(p, m, x, 1, y, &buf)
				}
			})
		}
	}
}

// TestQuantizeQ8_KAVX2 holds the AVX2 Q8_K quantizer byte for byte against
// quantizeQ8_K on realistic data and on blocks with zeros, ties for the
// largest magnitude, NaNs, infinities, subnormals and huge values, from 0
// to 9 blocks.
func TestQuantizeQ8_KAVX2(t *testing.T) {
	if !haveAVX2FMA {
		t.Skip("CPU lacks AVX2, FMA or F16C")
	}
	rng := rand.New(rand.NewPCG(55, 56))
	specials := []float32{0, float32(math.Copysign(0, -1)), float32(math.NaN()), math.Float32frombits(0x7fa00001),
		math.Float32frombits(0xffc12345), float32(math.Inf(1)), float32(math.Inf(-1)), 1e-45, -3e-38, 1e-40,
		math.MaxFloat32, -math.MaxFloat32, 1, -1, 0.5}
	for nb := 0; nb <= 9; nb++ {
		for trial := 0; trial < 40; trial++ {
			x := testData(rng, nb*qkK)
			for b := 0; b < nb; b++ {
				blk := x[b*qkK : (b+1)*qkK]
				switch rng.IntN(6) {
				case 0: // a few specials
					for i := 0; i < 1+rng.IntN(4); i++ {
						blk[rng.IntN(qkK)] = specials[rng.IntN(len(specials))]
					}
				case 1: // all zero but maybe a NaN
					clear(blk)
					if rng.IntN(2) == 0 {
						blk[rng.IntN(qkK)] = float32(math.NaN())
					}
				case 2: // ties of the largest magnitude, both signs
					v := float32(rng.NormFloat64() * 4)
					blk[rng.IntN(qkK)], blk[rng.IntN(qkK)] = -v-10, v+10
				case 3: // tiny values only (scale overflows)
					for i := range blk {
						blk[i] = float32(rng.NormFloat64()) * 1e-39
					}
				}
			}
			want := make([]byte, nb*q8_KBytes)
			got := make([]byte, nb*q8_KBytes+rng.IntN(3))
			got = got[len(got)-nb*q8_KBytes:]
			for i := range got {
				got[i] = 0xa5
			}
			quantizeQ8_K(x, want)
			quantizeQ8_K_amd64(x, got)
			if !bytes.Equal(got, want) {
				for i := range got {
					if got[i] != want[i] {
						t.Fatalf("%d blocks, trial %d: byte %d (block %d, offset %d) = %#x, Go %#x", nb, trial, i, i/q8_KBytes, i%q8_KBytes, got[i], want[i])
					}
				}
			}
		}
	}
}

// TestGemmKTileWidths holds the Q4_K tile path bit for bit against the Go
// twin with every tile kernel width (not only the balanced widths
// gemmQ4KTiles picks by default) and tiles used from 2 activation rows
// on: chunks of the super-blocks whole and partial, tiles with a row tail
// left to the per-row kernels, misaligned buffers, extreme and non-finite
// data.
func TestGemmKTileWidths(t *testing.T) {
	if !haveAVX2FMA {
		t.Skip("CPU lacks AVX2, FMA or F16C")
	}
	rng := rand.New(rand.NewPCG(59, 60))
	defer func(m, w int) { q4kTileMin, q4kTileWidth = m, w }(q4kTileMin, q4kTileWidth)
	q4kTileMin = 2
	const rows, maxN = 27, 20
	for _, kind := range []string{"quantized", "random", "max", "min", "nonfinite"} {
		for _, nb := range []int{1, 3, kTileChunk, kTileChunk + 1, 2*kTileChunk + 1} {
			rb, arb := nb*q4_KBytes, nb*q8_KBytes
			off := rng.IntN(8)
			w := misaligned(kWeights(t, rng, Q4_K, rows, nb, kind), off)
			a := misaligned(kActRows(rng, maxN, nb, kind), 7-off)
			want := make([]float32, maxN*rows)
			gemmKGo(Q4_K, w, rb, 0, rows, a, arb, maxN, want, rows)
			for width := 1; width <= q4kTileCols; width++ {
				q4kTileWidth = width
				for _, n := range []int{2, 3, 5, 6, 7, 11, 13, maxN} {
					lo := rng.IntN(4)
					hi := rows - rng.IntN(4)
					y := make([]float32, n*rows)
					gemmKAVX2(Q4_K, w, rb, lo, hi, a, arb, n, y, rows)
					for i := 0; i < n; i++ {
						for r := lo; r < hi; r++ {
							if got, exp := y[i*rows+r], want[i*rows+r]; !sameFloat(got, exp) {
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

// TestPackQ4KTileMatchesPanel holds the assembly tile packer to the Go
// panel packer byte for byte: the tile kernels run on both.
func TestPackQ4KTileMatchesPanel(t *testing.T) {
	if !haveAVX2FMA {
		t.Skip("no AVX2")
	}
	rng := rand.New(rand.NewPCG(71, 72))
	for _, nb := range []int{1, 2, kTileChunk, 7} {
		rb := (nb + 1) * q4_KBytes // rows wider than the packed part
		src := make([]byte, 8*rb)
		for i := range src {
			src[i] = byte(rng.Uint32())
		}
		want := make([]byte, nb*q4kTileBytes)
		packQ4KPanel(src, rb, nb, want)
		got := make([]byte, nb*q4kTileBytes)
		packQ4KTile(&got[0], &src[0], rb, nb, 0)
		if !bytes.Equal(got, want) {
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("%d super-blocks: byte %d (super-block %d, offset %d) is %#x, want %#x",
						nb, i, i/q4kTileBytes, i%q4kTileBytes, got[i], want[i])
				}
			}
		}
	}
}

// BenchmarkQ6KZDecode sweeps a Q6_K matrix of an LM head's shape
// (128256x2048) at batch 1 on 2 threads with the AVX-512 decode kernels,
// for several stream counts and prefetch distances: MB/s is the weights'
// read rate.
func BenchmarkQ6KZDecode(b *testing.B) {
	if !haveVNNI || !haveAVX2FMA {
		b.Skip("CPU lacks AVX-512 VNNI")
	}
	rng := rand.New(rand.NewPCG(61, 62))
	p := par.New(2)
	defer p.Close()
	rows, cols := 128256, 2048
	size, _ := Q6_K.RowBytes(rows * cols)
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	for i := 0; i < size/q6_KBytes; i++ { // normal f16 scales
		blk := data[i*q6_KBytes+208:]
		blk[1] = 0x20 | blk[1]&0x83
	}
	m, _ := NewMatrix(Q6_K, rows, cols, data)
	x := testData(rng, cols)
	y := make([]float32, rows)
	var buf Scratch
	saved, savedRows, savedPF := k.gemmK, q6kZDecRows, q6kZDecPF
	defer func() { k.gemmK, q6kZDecRows, q6kZDecPF = saved, savedRows, savedPF }()
	k.gemmK = gemmKAVX512
	for _, s := range []int{4, 8} {
		for _, pf := range []int{0, 2048, 3072} {
			b.Run(fmt.Sprintf("streams=%d/pf=%d", s, pf), func(b *testing.B) {
				q6kZDecRows, q6kZDecPF = s, pf
				b.SetBytes(int64(size))
				for b.Loop() {
					MatMul(p, m, x, 1, y, &buf)
				}
			})
		}
	}
}

// TestGemmKQ6KZShapes holds every AVX-512 Q6_K kernel alone, including
// shapes gemmKAVX512 does not currently choose, bit for bit against the Go
// twin: the decode kernels with rows far apart and outputs strided, the
// batch kernels (on q6kZActs' blocks) adding into sums that start from
// earlier super-blocks'.
func TestGemmKQ6KZShapes(t *testing.T) {
	if !haveVNNI || !haveAVX2FMA {
		t.Skip("CPU lacks AVX-512 VNNI")
	}
	rng := rand.New(rand.NewPCG(63, 64))
	for _, kind := range []string{"quantized", "random", "max", "min", "nonfinite"} {
		for _, nb := range []int{1, 2, 5, 9, 16, 33} {
			const rows, acts, gap = 24, q6kZCols + 1, 3
			rb, arb := nb*q6_KBytes, nb*q8_KBytes
			w := misaligned(kWeights(t, rng, Q6_K, rows, nb, kind), rng.IntN(8))
			a := misaligned(kActRows(rng, acts, nb, kind), rng.IntN(8))
			want := make([]float32, acts*rows)
			gemmKGo(Q6_K, w, rb, 0, rows, a, arb, acts, want, rows)
			for _, d := range q6kZDec {
				for _, pf := range []int{0, 64, 4096} {
					y := make([]float32, rows)
					for e := range y {
						y[e] = float32(math.NaN())
					}
					r0 := rng.IntN(rows - gap*(d.r-1))
					d.f(&w[r0*rb], gap*rb, &a[0], nb, &y[r0], gap, pf)
					for j := 0; j < d.r; j++ {
						r := r0 + gap*j
						if got, exp := y[r], want[r]; !sameFloat(got, exp) {
							t.Fatalf("Q6_K DecR%d %s nb=%d pf=%d: row %d = %v, Go twin %v", d.r, kind, nb, pf, r, got, exp)
						}
					}
				}
			}
			// The batch kernels on activation rows i0.., in two calls
			// (super-blocks [0, h) then [h, nb)) adding into the same sums.
			dy := make([]float32, nb*acts+q6kZCols)
			for i := 0; i < acts; i++ {
				for b := 0; b < nb; b++ {
					dy[b*acts+i] = f32At(a[i*arb+b*q8_KBytes:])
				}
			}
			at := make([]byte, nb*acts*q6kZActBytes)
			for i := 0; i < acts; i++ {
				q6kZActs(&a[i*arb], nb, &at[i*q6kZActBytes], acts*q6kZActBytes)
			}
			for c := 1; c <= q6kZCols; c++ {
				for trial := 0; trial < 3; trial++ {
					i0 := rng.IntN(acts - c + 1)
					r := rng.IntN(rows)
					h := rng.IntN(nb + 1)
					sums := make([]float32, 8*q6kZCols) // eight float32 lanes an activation row
					run := func(b0, cnt int) {
						if cnt == 0 {
							return
						}
						q6kZTBatch[c-1](&w[r*rb+b0*q6_KBytes], &at[(b0*acts+i0)*q6kZActBytes], acts*q6kZActBytes, cnt,
							&dy[b0*acts+i0], 4*acts, &sums[0], []int{0, 64, 4096}[trial])
					}
					run(0, h)
					run(h, nb-h)
					for i := 0; i < c; i++ {
						if got, exp := hsum8((*[8]float32)(sums[8*i:])), want[(i0+i)*rows+r]; !sameFloat(got, exp) {
							t.Fatalf("Q6_K TC%d %s nb=%d split %d: row %d activation %d = %v, Go twin %v",
								c, kind, nb, h, r, i0+i, got, exp)
						}
					}
				}
			}
		}
	}
}

// TestGemmKQ6KZTiling runs gemmKAVX512 on Q6_K with other decode stream
// counts, tile heights and super-block chunks than the chosen ones, against
// the Go twin bit for bit.
func TestGemmKQ6KZTiling(t *testing.T) {
	if !haveVNNI || !haveAVX2FMA {
		t.Skip("CPU lacks AVX-512 VNNI")
	}
	saved := [...]int{q6kZDecRows, q6kZTileRows, q6kZChunk}
	defer func() { q6kZDecRows, q6kZTileRows, q6kZChunk = saved[0], saved[1], saved[2] }()
	rng := rand.New(rand.NewPCG(65, 66))
	const rows, maxN = 37, 35
	for _, nb := range []int{1, 3, 8, 9} {
		rb, arb := nb*q6_KBytes, nb*q8_KBytes
		w := misaligned(kWeights(t, rng, Q6_K, rows, nb, "quantized"), rng.IntN(8))
		a := misaligned(kActRows(rng, maxN, nb, "quantized"), rng.IntN(8))
		want := make([]float32, maxN*rows)
		gemmKGo(Q6_K, w, rb, 0, rows, a, arb, maxN, want, rows)
		for _, dec := range []int{1, 2, 4, 8} {
			for _, tr := range []int{1, 3, 16} {
				for _, ch := range []int{1, 3, 4, 8} {
					q6kZDecRows, q6kZTileRows, q6kZChunk = dec, tr, ch
					for _, n := range []int{1, 2, 7, 16, 17, 33, 35} {
						lo := rng.IntN(rows)
						hi := lo + 1 + rng.IntN(rows-lo)
						y := make([]float32, n*rows)
						gemmKAVX512(Q6_K, w, rb, lo, hi, a, arb, n, y, rows)
						for i := 0; i < n; i++ {
							for r := lo; r < hi; r++ {
								if got, exp := y[i*rows+r], want[i*rows+r]; !sameFloat(got, exp) {
									t.Fatalf("nb=%d streams=%d tile=%d chunk=%d n=%d rows [%d,%d): y[%d][%d] = %v, Go twin %v",
										nb, dec, tr, ch, n, lo, hi, i, r, got, exp)
								}
							}
						}
					}
				}
			}
		}
	}
}

// q4kDecoders are the one-row Q4_K kernels on pairs of panels that
// gemmQ4KPanelsDecode runs, with whether this CPU has their instructions.
var q4kDecoders = []struct {
	name string
	pair func(t *byte, toff int, nb int, a *byte, bp *int16, y *float32, yoff int)
	ok   bool
}{
	{"avx2", gemmQ4KPanel2C1, haveAVX2FMA},
	{"avxvnni", gemmQ4KPanel2VX, haveAVX2FMA && haveAVXVNNI},
	{"avx512", gemmQ4KPanel2V, haveAVX2FMA && haveVNNI},
	{"avx512, prefetch to L1", gemmQ4KPanel2VL1, haveAVX2FMA && haveVNNI},
}

// TestQ4KDecodeKernels holds each one-row Q4_K panel kernel, as
// gemmQ4KPanelsDecode runs it (pairs of panels far apart, an odd last
// panel on the AVX2 tile), bit for bit against the Go twin: any panel
// count from any first panel, super-block counts up to q4kDecMaxBlocks,
// misaligned buffers, random, extreme and non-finite data; outputs outside
// the rows stay untouched.
func TestQ4KDecodeKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(85, 86))
	const panels = 9
	const rows = panels * q4kPanelRows
	for _, k := range q4kDecoders {
		if !k.ok {
			t.Logf("%s: CPU lacks the kernel's instructions", k.name)
			continue
		}
		for _, kind := range []string{"quantized", "random", "max", "min", "nonfinite"} {
			for _, nb := range []int{1, 2, 3, 8, 9, q4kDecMaxBlocks} {
				rb := nb * q4_KBytes
				off := rng.IntN(8)
				w := kWeights(t, rng, Q4_K, rows, nb, kind)
				a := misaligned(kActRows(rng, 1, nb, kind), 7-off)
				pan := misaligned(make([]byte, rows*nb*q4kTileBytes), off)
				for p := 0; p < panels; p++ {
					packQ4KPanel(w[p*q4kPanelRows*rb:], rb, nb, pan[p*nb*q4kTileBytes:])
				}
				want := make([]float32, rows)
				gemmKGo(Q4_K, w, rb, 0, rows, a, nb*q8_KBytes, 1, want, rows)
				for try := 0; try < 6; try++ {
					p0 := rng.IntN(panels)
					p1 := p0 + 1 + rng.IntN(panels-p0)
					lo, hi := p0*q4kPanelRows, p1*q4kPanelRows
					y := make([]float32, rows)
					for e := range y {
						y[e] = float32(math.NaN())
					}
					gemmQ4KPanelsDecode(k.pair, pan, nb, lo, hi, a, y)
					for r, got := range y {
						if r < lo || r >= hi {
							if !math.IsNaN(float64(got)) {
								t.Fatalf("%s %s nb=%d rows [%d,%d): wrote y[%d] = %v", k.name, kind, nb, lo, hi, r, got)
							}
							continue
						}
						if !sameFloat(got, want[r]) {
							t.Fatalf("%s %s nb=%d rows [%d,%d): y[%d] = %v (%#x), Go twin %v (%#x)", k.name, kind, nb, lo, hi,
								r, got, math.Float32bits(got), want[r], math.Float32bits(want[r]))
						}
					}
				}
			}
		}
	}
}

// BenchmarkQ4KDecodeKernels runs each one-row Q4_K panel kernel on 64 rows
// of 8 super-blocks held in L1, as gemmQ4KPanelsDecode calls them: ns/tile
// is the compute cost of a panel's super-block (1184 bytes) without the
// memory's.
func BenchmarkQ4KDecodeKernels(b *testing.B) {
	rng := rand.New(rand.NewPCG(83, 84))
	const nb, rows = 8, 64
	w := kWeights(b, rng, Q4_K, rows, nb, "quantized")
	pan := make([]byte, rows/q4kPanelRows*nb*q4kTileBytes)
	for p := 0; p < rows/q4kPanelRows; p++ {
		packQ4KPanel(w[p*q4kPanelRows*nb*q4_KBytes:], nb*q4_KBytes, nb, pan[p*nb*q4kTileBytes:])
	}
	a := kActRows(rng, 1, nb, "quantized")
	y := make([]float32, rows)
	for _, k := range q4kDecoders {
		b.Run(k.name, func(b *testing.B) {
			if !k.ok {
				b.Skip("CPU lacks the kernel's instructions")
			}
			for b.Loop() {
				gemmQ4KPanelsDecode(k.pair, pan, nb, 0, rows, a, y)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(rows/q4kPanelRows*nb), "ns/tile")
		})
	}
}

// TestQ4KBsumPairs holds the assembly's bsum pairs against its Go twin for
// row and super-block counts, row gaps and misaligned buffers, with every
// bsum value in play (the activations are random bytes).
func TestQ4KBsumPairs(t *testing.T) {
	if !haveAVX2FMA {
		t.Skip("CPU lacks AVX2")
	}
	rng := rand.New(rand.NewPCG(87, 88))
	for _, n := range []int{1, 2, 3, 8, 17} {
		for _, nb := range []int{1, 2, 7, 8, 32, q4kDecMaxBlocks} {
			arb := nb*q8_KBytes + rng.IntN(3)*q8_KBytes
			a := misaligned(make([]byte, (n-1)*arb+nb*q8_KBytes), rng.IntN(8))
			for i := range a {
				a[i] = byte(rng.Uint32())
			}
			want := make([]int16, nb*n*8)
			q4kBsumPairsGo(want, a, arb, n, nb)
			got := make([]int16, nb*n*8+1)
			got[len(got)-1] = 12345
			q4kBsumPairs(got[:nb*n*8], a, arb, n, nb)
			if got[len(got)-1] != 12345 {
				t.Fatalf("n=%d nb=%d: wrote past bp", n, nb)
			}
			for e := range want {
				if got[e] != want[e] {
					t.Fatalf("n=%d nb=%d arb=%d: bp[%d] = %d, Go twin %d", n, nb, arb, e, got[e], want[e])
				}
			}
		}
	}
}
