package quant

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"shade/par"
)

// kWeights returns rows rows of nb super-blocks of typ (Q4_K or Q6_K) in one
// of several kinds: quantized realistic data, random bytes with finite
// scales, extremes (every quant at its largest or smallest, every scale at
// an extreme) and random bytes with non-finite f16 scales among finite ones.
func kWeights(tb testing.TB, rng *rand.Rand, typ Type, rows, nb int, kind string) []byte {
	bs := typ.BlockBytes()
	b := make([]byte, rows*nb*bs)
	if kind == "quantized" {
		if err := Quantize(typ, testData(rng, rows*nb*qkK), b); err != nil {
			tb.Fatal(err)
		}
		return b
	}
	halves := []uint16{0x3c00, 0xb800, 0x2e66, 0x1400, 0x5640, 0x0001, 0x8123, 0x7bff}
	if kind == "nonfinite" {
		halves = append(halves, 0x7c00, 0xfc00, 0x7e00, 0x7c01, 0xfe55)
	}
	for i := 0; i < rows*nb; i++ {
		blk := b[i*bs : (i+1)*bs]
		switch kind {
		case "max", "min":
			q := byte(0xff)
			if kind == "min" {
				q = 0
			}
			for j := range blk {
				blk[j] = q
			}
			if typ == Q4_K { // scales and mins 63 or 0, mixed
				for j := 4; j < 16; j++ {
					blk[j] = []byte{0xff, 0, 0xc0, 0x3f}[rng.IntN(4)]
				}
			} else { // int8 scales -128 or 127
				for j := 192; j < 208; j++ {
					blk[j] = []byte{0x80, 0x7f}[rng.IntN(2)]
				}
			}
		default:
			for j := range blk {
				blk[j] = byte(rng.Uint32())
			}
		}
		dOff := 0
		if typ == Q6_K {
			dOff = 208
		}
		binary.LittleEndian.PutUint16(blk[dOff:], halves[rng.IntN(len(halves))])
		if typ == Q4_K {
			binary.LittleEndian.PutUint16(blk[2:], halves[rng.IntN(len(halves))])
		}
	}
	return b
}

// kActRows returns n Q8_K activation rows of nb super-blocks: quantized
// realistic data, or quants random over all of int8, all -128 or all 127,
// with a finite scale (sometimes ±Inf in "nonfinite") and matching bsums.
func kActRows(rng *rand.Rand, n, nb int, kind string) []byte {
	a := make([]byte, n*nb*q8_KBytes)
	for i := 0; i < n; i++ {
		row := a[i*nb*q8_KBytes : (i+1)*nb*q8_KBytes]
		mode := rng.IntN(4)
		if kind == "quantized" {
			mode = 0
		}
		if mode == 0 {
			genericKernels.quantizeQ8_K(testData(rng, nb*qkK), row)
			continue
		}
		for b := 0; b < nb; b++ {
			blk := row[b*q8_KBytes : (b+1)*q8_KBytes]
			d := float32(math.Ldexp(1+rng.Float64(), rng.IntN(20)-14))
			if rng.IntN(2) == 0 {
				d = -d
			}
			if kind == "nonfinite" && rng.IntN(8) == 0 {
				d = float32(math.Inf(1 - 2*rng.IntN(2)))
			}
			binary.LittleEndian.PutUint32(blk, math.Float32bits(d))
			q := blk[4 : 4+qkK]
			for j := range q {
				switch mode {
				case 1:
					q[j] = byte(rng.Uint32())
				case 2:
					q[j] = 0x80
				case 3:
					q[j] = 0x7f
				}
			}
			for j := 0; j < qkK/16; j++ {
				var s int16
				for _, v := range q[16*j : 16*j+16] {
					s += int16(int8(v))
				}
				binary.LittleEndian.PutUint16(blk[4+qkK+2*j:], uint16(s))
			}
		}
	}
	return a
}

// sameFloat reports whether a and b have the same bits or are both NaN
// (NaN payloads are not part of the kernels' definition).
func sameFloat(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || a != a && b != b
}

// TestGemmKMatchesTwin holds the gemmK kernels in use bit for bit against
// the per-row Go twins, for batch sizes 1..33 and larger, 1..9 and more
// super-blocks, row ranges starting anywhere, misaligned buffers and
// random, extreme and non-finite data.
func TestGemmKMatchesTwin(t *testing.T) {
	if k.gemmK == nil {
		t.Skip("no gemmK kernels in the set in use")
	}
	rng := rand.New(rand.NewPCG(41, 42))
	blockCounts := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 33}
	var batches []int
	for n := 1; n <= 33; n++ {
		batches = append(batches, n)
	}
	batches = append(batches, 40, 64, 70)
	kinds := []string{"quantized", "random", "max", "min", "nonfinite"}
	if testing.Short() {
		blockCounts = []int{1, 2, 3, 8, 9}
		batches = []int{1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 33, 70}
	}
	const rows, maxN = 21, 70
	for _, typ := range []Type{Q4_K, Q6_K} {
		for _, kind := range kinds {
			for _, nb := range blockCounts {
				rb := nb * typ.BlockBytes()
				arb := nb * q8_KBytes
				off := rng.IntN(8)
				w := misaligned(kWeights(t, rng, typ, rows, nb, kind), off)
				a := misaligned(kActRows(rng, maxN, nb, kind), 7-off)
				want := make([]float32, maxN*rows)
				gemmKGo(typ, w, rb, 0, rows, a, arb, maxN, want, rows)
				for _, n := range batches {
					lo := rng.IntN(rows)
					hi := lo + 1 + rng.IntN(rows-lo)
					if n%5 == 0 {
						lo, hi = 0, rows
					}
					i0 := rng.IntN(maxN - n + 1)
					y := make([]float32, n*rows)
					for e := range y {
						y[e] = float32(math.NaN()) // outputs outside [lo, hi) must stay
					}
					k.gemmK(typ, w, rb, lo, hi, a[i0*arb:], arb, n, y, rows)
					for i := 0; i < n; i++ {
						for r := 0; r < rows; r++ {
							got, exp := y[i*rows+r], want[(i0+i)*rows+r]
							if r < lo || r >= hi {
								if !math.IsNaN(float64(got)) {
									t.Fatalf("%v %s nb=%d n=%d rows [%d,%d): wrote y[%d][%d] = %v", typ, kind, nb, n, lo, hi, i, r, got)
								}
								continue
							}
							if !sameFloat(got, exp) {
								t.Fatalf("%v %s nb=%d n=%d rows [%d,%d): y[%d][%d] = %v (%#x), Go twin %v (%#x)",
									typ, kind, nb, n, lo, hi, i, r, got, math.Float32bits(got), exp, math.Float32bits(exp))
							}
						}
					}
				}
			}
		}
	}
}

// TestMatMulKBatchInvariant holds MatMul's batch invariance for Q4_K,
// Q6_K, Q3_K, Q5_K, Q2_K and IQ4_XS weights (and the legacy Q4_1, Q5_0,
// Q5_1 and IQ4_NL, on gemmQ8), with every kernel set: an output's bits do not depend on n,
// on the thread split, on the kernel set (generic or the machine's) or on
// Q4_K's row panels, since all give the per-row Go twin's bits.
func TestMatMulKBatchInvariant(t *testing.T) {
	rng := rand.New(rand.NewPCG(43, 44))
	pools := []*par.Pool{nil, par.New(2), par.New(3)}
	defer func() {
		for _, p := range pools {
			p.Close()
		}
	}()
	defer UseGeneric(false)
	const maxN = 40
	batches := []int{1, 2, 3, 7, 8, 9, 16, 17, 31, 32, 33, 40}
	if testing.Short() {
		batches = []int{2, 8, 9, 33}
	}
	var buf Scratch
	for _, typ := range []Type{Q4_K, Q6_K, Q3_K, Q5_K, Q2_K, IQ4_XS, Q4_1, Q5_0, Q5_1, IQ4_NL} {
		for _, cols := range []int{256, 768, 2304} {
			// Q4_K rows of whole panels (56: 7 of them, an odd one at the
			// end of a thread's chunk) run repacked where the set has panel
			// kernels.
			for _, rows := range []int{1, 7, 33, 70, 56, 144} {
				if rows%q4kPanelRows == 0 && typ != Q4_K {
					continue
				}
				m, err := NewMatrix(typ, rows, cols, encode(t, typ, testData(rng, rows*cols)))
				if err != nil {
					t.Fatal(err)
				}
				x := testData(rng, maxN*cols)
				UseGeneric(true)
				one := make([]float32, maxN*rows)
				for i := 0; i < maxN; i++ {
					MatMul(nil, m, x[i*cols:(i+1)*cols], 1, one[i*rows:(i+1)*rows], &buf)
				}
				UseGeneric(false)
				if rows%q4kPanelRows == 0 {
					m = Repackable(m, nil)
				}
				for _, n := range batches {
					for pi, p := range pools {
						y := make([]float32, n*rows)
						i0 := (n * 7) % (maxN - n + 1)
						MatMul(p, m, x[i0*cols:(i0+n)*cols], n, y, &buf)
						for e, v := range y {
							if want := one[i0*rows+e]; math.Float32bits(v) != math.Float32bits(want) {
								t.Fatalf("%v %dx%d n=%d pool %d (%s): y[%d][%d] = %v (%#x), generic one row at a time %v (%#x)",
									typ, rows, cols, n, pi, Kernels(), e/rows, e%rows, v, math.Float32bits(v), want, math.Float32bits(want))
							}
						}
					}
				}
			}
		}
	}
}

// BenchmarkMatMulK measures MatMul on Q4_K and Q6_K weights for batch sizes
// 1 to 32, with the gemmK kernels ("gemmk") and with the per-row dot
// kernels MatMul used before them ("dot"), alternating: MB/s counts the
// weights swept per call, GMAC/s the multiply-adds. The 8192x2048 matrix
// is larger than the caches at batch 1.
func BenchmarkMatMulK(b *testing.B) {
	rng := rand.New(rand.NewPCG(45, 46))
	p := par.New(0)
	defer p.Close()
	for _, shape := range [][2]int{{2048, 2048}, {8192, 2048}, {2048, 8192}} {
		rows, cols := shape[0], shape[1]
		wf := testData(rng, rows*cols)
		for _, typ := range []Type{Q4_K, Q6_K} {
			data := encode(b, typ, wf)
			size := len(data)
			m, _ := NewMatrix(typ, rows, cols, data)
			for _, n := range []int{1, 8, 16, 32} {
				for _, mode := range []string{"dot", "gemmk"} {
					b.Run(fmt.Sprintf("%v/%dx%d/n=%d/%s", typ, rows, cols, n, mode), func(b *testing.B) {
						saved := k.gemmK
						if mode == "dot" {
							k.gemmK = nil
						} else if saved == nil {
							b.Skip("no gemmK kernels")
						}
						defer func() { k.gemmK = saved }()
						x := testData(rng, n*cols)
						y := make([]float32, n*rows)
						var buf Scratch
						b.SetBytes(int64(size))
						for b.Loop() {
							MatMul(p, m, x, n, y, &buf)
						}
						b.ReportMetric(float64(rows)*float64(cols)*float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
					})
				}
			}
		}
	}
}
