package quant

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"

	"shade/par"
)

// BenchmarkMatMulGemm measures MatMul on Q4_0 and Q8_0 weights of a
// 2048x2048 matrix and of a 14336x4096 one (an 8B model's FFN gate), for
// batch sizes 1 to 32: MB/s counts the weights swept per call, GMAC/s the
// int8 multiply-adds.
func BenchmarkMatMulGemm(b *testing.B) {
	rng := rand.New(rand.NewPCG(21, 22))
	p := par.New(0)
	defer p.Close()
	for _, shape := range [][2]int{{2048, 2048}, {14336, 4096}} {
		rows, cols := shape[0], shape[1]
		wf := testData(rng, rows*cols)
		for _, typ := range []Type{Q4_0, Q8_0} {
			data := encode(b, typ, wf)
			size := len(data)
			m, _ := NewMatrix(typ, rows, cols, data)
			for _, n := range []int{1, 8, 16, 32} {
				b.Run(fmt.Sprintf("%v/%dx%d/n=%d", typ, rows, cols, n), func(b *testing.B) {
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

// BenchmarkMatMulDRAM sweeps a matrix far larger than the caches (an LM
// head, 128256x2048), with the gemm kernels and without them (the per-row
// dot kernels), as a decode step does: MB/s is the weights' read rate.
func BenchmarkMatMulDRAM(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	p := par.New(2)
	defer p.Close()
	for _, typ := range []Type{Q4_0, Q8_0} {
		rows, cols := 128256, 2048
		m, _ := NewMatrix(typ, rows, cols, randomWeights(rng, typ, rows, cols))
		for _, mode := range []string{"gemm", "dot"} {
			for _, n := range []int{1, 16} {
				b.Run(fmt.Sprintf("%v/%s/n=%d", typ, mode, n), func(b *testing.B) {
					saved := k.gemm
					if mode == "dot" {
						k.gemm = nil
					}
					defer func() { k.gemm = saved }()
					x := testData(rng, n*cols)
					y := make([]float32, n*rows)
					var buf Scratch
					b.SetBytes(int64(len(m.Data)))
					for b.Loop() {
						MatMul(p, m, x, n, y, &buf)
					}
				})
			}
		}
	}
}

// randomWeights returns rows rows of cols values of typ with arbitrary
// quant bytes (including Q8_0's -128, which quantizers never write) and
// block scales between 2^-8 and 2, half of them negative.
func randomWeights(rng *rand.Rand, typ Type, rows, cols int) []byte {
	size, _ := typ.RowBytes(rows * cols)
	data := make([]byte, size)
	bw := typ.BlockBytes()
	for b := 0; b < size/bw; b++ {
		blk := data[b*bw : (b+1)*bw]
		for j := range blk {
			blk[j] = byte(rng.Uint32())
		}
		d := F32ToF16(float32(math.Ldexp(1+rng.Float64(), -8+rng.IntN(9))))
		if rng.IntN(2) == 0 {
			d |= 0x8000
		}
		blk[0], blk[1] = byte(d), byte(d>>8)
	}
	return data
}

// TestMatMulBatchInvariant holds the batch invariance MatMul promises for
// Q4_0 and Q8_0 weights: an output's bits do not depend on n, on where its
// activation row falls in a tile, on the row count or on the thread split.
// Each batch is compared with the same rows computed one at a time, on
// every kernel path this CPU runs (forEachKernelPath).
func TestMatMulBatchInvariant(t *testing.T) {
	forEachKernelPath(t, testMatMulBatchInvariant)
}

func testMatMulBatchInvariant(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	pools := []*par.Pool{nil, par.New(1), par.New(2), par.New(3)}
	defer func() {
		for _, p := range pools {
			p.Close()
		}
	}()
	const maxN = 70
	rowCounts := []int{1, 5, 16, 17, 33, 50, 67, 130}
	batches := []int{1, 2, 3, 4, 7, 8, 15, 16, 17, 31, 32, 33, 47, 70}
	if testing.Short() {
		rowCounts = []int{5, 17, 50, 67}
		batches = []int{2, 3, 16, 17, 33, 70}
	}
	var buf Scratch
	for _, typ := range []Type{Q4_0, Q8_0} {
		for _, cols := range []int{32, 96, 256} {
			for _, rows := range rowCounts {
				m, err := NewMatrix(typ, rows, cols, randomWeights(rng, typ, rows, cols))
				if err != nil {
					t.Fatal(err)
				}
				m = Repackable(m, nil) // panels when rows allow and repacking is on
				x := testData(rng, maxN*cols)
				one := make([]float32, maxN*rows)
				for i := 0; i < maxN; i++ {
					MatMul(nil, m, x[i*cols:(i+1)*cols], 1, one[i*rows:(i+1)*rows], &buf)
				}
				for _, n := range batches {
					for pi, p := range pools {
						y := make([]float32, n*rows)
						// Start inside x so that batches do not all begin at row 0.
						i0 := (n * 7) % (maxN - n + 1)
						MatMul(p, m, x[i0*cols:(i0+n)*cols], n, y, &buf)
						for e, v := range y {
							if want := one[i0*rows+e]; math.Float32bits(v) != math.Float32bits(want) {
								t.Fatalf("%v %dx%d n=%d pool %d: y[%d][%d] = %v (%#x), one row at a time %v (%#x)",
									typ, rows, cols, n, pi, e/rows, e%rows, v, math.Float32bits(v), want, math.Float32bits(want))
							}
						}
					}
				}
			}
		}
	}
}

// TestGemmMatchesTwin holds the kernels of every set bit for bit against
// gemmGo, and both within float32 rounding of the generic dot products, for
// arbitrary weight bytes.
func TestGemmMatchesTwin(t *testing.T) {
	forEachKernelPath(t, testGemmMatchesTwin)
}

// forEachKernelPath runs test on every kernel path this CPU can run: each
// set of KernelSets, on row panels (repackable matrices) and, for sets with
// panel kernels, in the file's layout too (UseRepack(false)). It restores
// the default set and repacking.
func forEachKernelPath(t *testing.T, test func(t *testing.T)) {
	defer UseGeneric(false)
	defer UseRepack(true)
	for _, set := range KernelSets() {
		if err := UseKernels(set); err != nil {
			t.Fatal(err)
		}
		UseRepack(true)
		t.Run(Kernels(), test)
		if k.gemmPanel != nil {
			UseRepack(false)
			t.Run(Kernels()+"+file-layout", test)
		}
	}
}

func testGemmMatchesTwin(t *testing.T) {
	set := Kernels()
	rng := rand.New(rand.NewPCG(25, 26))
	var buf Scratch
	for _, typ := range []Type{Q4_0, Q8_0} {
		for _, nb := range []int{1, 2, 3, 8, 33} {
			cols := nb * 32
			for _, rows := range []int{1, 15, 16, 17, 40} {
				for _, n := range []int{1, 5, 16, 19} {
					m, err := NewMatrix(typ, rows, cols, randomWeights(rng, typ, rows, cols))
					if err != nil {
						t.Fatal(err)
					}
					m = Repackable(m, nil)
					x := testData(rng, n*cols)
					y := make([]float32, n*rows)
					MatMul(nil, m, x, n, y, &buf)

					a := gemmActs{n: n, nb: nb, q: make([]byte, n*nb*32), side: make([]uint32, 2*n*nb)}
					xq := make([]byte, nb*q8_0Bytes)
					for i := 0; i < n; i++ {
						quantizeQ8_0Acts(x[i*cols:(i+1)*cols], xq)
						a.put(typ, i, xq)
					}
					twin := make([]float32, n*rows)
					gemmGo(typ, m.Data, m.rowBytes(), 0, rows, &a, 0, n, twin, rows)

					generic := make([]float32, n*rows)
					UseGeneric(true)
					MatMul(nil, m, x, n, generic, &buf)
					if err := UseKernels(strings.TrimSuffix(set, "+panels")); err != nil {
						t.Fatal(err)
					}

					wd := decode(t, typ, m.Data, rows*cols)
					for e := range y {
						i, r := e/rows, e%rows
						if k.gemm != nil && math.Float32bits(y[e]) != math.Float32bits(twin[e]) {
							t.Fatalf("%v %dx%d n=%d: y[%d][%d] = %v, gemmGo %v", typ, rows, cols, n, i, r, y[e], twin[e])
						}
						_, mag := dot64(wd[r*cols:(r+1)*cols], activationOf(t, typ, x[i*cols:(i+1)*cols]))
						if !closeDot(twin[e], generic[e], mag) {
							t.Fatalf("%v %dx%d n=%d: y[%d][%d]: gemmGo %v, generic %v (magnitude %v)", typ, rows, cols, n, i, r, twin[e], generic[e], mag)
						}
					}
				}
			}
		}
	}
}

// TestFMA32 checks fma32 against exact arithmetic, including sums whose
// float64 rounding would land on a float32 tie.
func TestFMA32(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 28))
	check := func(x, y, z float32) {
		bx, by, bz := new(big.Float).SetFloat64(float64(x)), new(big.Float).SetFloat64(float64(y)), new(big.Float).SetFloat64(float64(z))
		exact := new(big.Float).SetPrec(400).Mul(bx, by)
		exact.Add(exact, bz)
		want, _ := exact.Float32()
		if got := fma32(x, y, z); math.Float32bits(got) != math.Float32bits(want) && !(got == 0 && want == 0) {
			t.Fatalf("fma32(%v, %v, %v) = %v, want %v", x, y, z, got, want)
		}
	}
	// (1+2^-22)·2^-24·(1-2^-22) + (1+2^-23) = 1 + 2^-23 + 2^-24 - 2^-68:
	// float64 rounds it to the float32 tie 1 + 2^-23 + 2^-24, which would
	// then go to even (1 + 2^-22); the exact sum rounds down.
	check(1+0x1p-22, 0x1p-24*(1-0x1p-22), 1+0x1p-23)
	if naive := float32(float64(1+0x1p-22)*float64(0x1p-24*(1-0x1p-22)) + (1 + 0x1p-23)); naive == 1+0x1p-23 {
		t.Errorf("the tie case does not exercise double rounding")
	}
	check(1+0x1p-23, 0x1p-24, 1)
	check(-3, 0x1p-30, 0x1p-5)
	for i := 0; i < 100000; i++ {
		x := float32(rng.IntN(1<<21) - 1<<20)
		y := float32(math.Ldexp(rng.Float64(), -rng.IntN(30)))
		z := float32(rng.NormFloat64() * math.Ldexp(1, rng.IntN(40)-20))
		check(x, y, z)
	}
}

// BenchmarkMatMulPanels measures MatMul on repacked Q4_0 and Q8_0 matrices
// of a 1B model's shapes (attention 2048x2048, FFN up 8192x2048, FFN down
// 2048x8192) for batches of 1, 2, 4, 8, 16 and 32 rows on 1 and 2 threads, with
// each kernel set this CPU runs: MB/s is the weights swept per call,
// GMAC/s the multiply-adds.
func BenchmarkMatMulPanels(b *testing.B) {
	defer UseGeneric(false)
	rng := rand.New(rand.NewPCG(61, 62))
	for _, typ := range []Type{Q4_0, Q8_0} {
		for _, shape := range [][2]int{{2048, 2048}, {8192, 2048}, {2048, 8192}} {
			rows, cols := shape[0], shape[1]
			m, _ := NewMatrix(typ, rows, cols, randomWeights(rng, typ, rows, cols))
			m = Repackable(m, nil)
			for _, set := range KernelSets()[1:] {
				if err := UseKernels(set); err != nil {
					b.Fatal(err)
				}
				for _, threads := range []int{1, 2} {
					p := par.New(threads)
					m.Repack(p)
					for _, n := range []int{1, 2, 4, 8, 16, 32} {
						b.Run(fmt.Sprintf("%v/%s/%dx%d/threads=%d/n=%d", typ, set, rows, cols, threads, n), func(b *testing.B) {
							x := testData(rng, n*cols)
							y := make([]float32, n*rows)
							var buf Scratch
							b.SetBytes(int64(len(m.Data)))
							for b.Loop() {
								MatMul(p, m, x, n, y, &buf)
							}
							b.ReportMetric(float64(rows)*float64(cols)*float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
						})
					}
					p.Close()
				}
				m.DropPanels()
			}
		}
	}
}

// TestGemmActsPut checks put (every kernel set's) against a byte-by-byte
// reference, on blocks of random quants and scales (Inf, NaN with their
// payloads and subnormals among them) and on the extremes (-128 and 127
// everywhere, where the 16-bit lanes of the Go twin are fullest).
func TestGemmActsPut(t *testing.T) {
	defer UseGeneric(false)
	for _, set := range KernelSets() {
		if err := UseKernels(set); err != nil {
			t.Fatal(err)
		}
		t.Run(set, testGemmActsPut)
	}
}

func testGemmActsPut(t *testing.T) {
	rng := rand.New(rand.NewPCG(71, 72))
	const nb, n = 300, 3
	for _, typ := range []Type{Q4_0, Q8_0} {
		for fill := range 3 {
			src := make([]byte, nb*q8_0Bytes)
			for i := range src {
				src[i] = byte(rng.Uint32())
				if i%q8_0Bytes >= 2 && fill > 0 {
					src[i] = [...]byte{0x80, 0x7f}[fill-1]
				}
			}
			g := gemmActs{n: n, nb: nb, q: make([]byte, n*nb*qk8_0), side: make([]uint32, 2*n*nb)}
			g.put(typ, 1, src)
			for b := range nb {
				blk := src[b*q8_0Bytes:]
				e := b*n + 1
				var sum int32
				for j := range qk8_0 {
					if got := g.q[e*qk8_0+j]; got != blk[2+j] {
						t.Fatalf("%v fill %d block %d: q[%d] = %d, want %d", typ, fill, b, j, got, blk[2+j])
					}
					sum += int32(int8(blk[2+j]))
				}
				if got, want := int32(g.side[2*e+1]), -gemmCorrection(typ)*sum; got != want {
					t.Fatalf("%v fill %d block %d: correction %d, want %d", typ, fill, b, got, want)
				}
				if got, want := g.side[2*e], math.Float32bits(f16At(blk)); got != want {
					t.Fatalf("%v fill %d block %d: scale bits %#x, want %#x", typ, fill, b, got, want)
				}
			}
		}
	}
}

// BenchmarkGemmActsPut measures laying out one 8192-value activation row.
func BenchmarkGemmActsPut(b *testing.B) {
	const nb, n = 256, 16
	src := make([]byte, nb*q8_0Bytes)
	for i := range src {
		src[i] = byte(i * 7)
	}
	g := gemmActs{n: n, nb: nb, q: make([]byte, n*nb*qk8_0), side: make([]uint32, 2*n*nb)}
	b.SetBytes(nb * qk8_0)
	for b.Loop() {
		g.put(Q4_0, 3, src)
	}
}

// decodeVariant is one per-CPU variant of a kernel set's decode kernels:
// use puts it in use and returns a function that restores the CPU's pick.
type decodeVariant struct {
	name string
	use  func() (restore func())
}

// decodeVariants[set] are the variants of a set's decode kernels (amd64:
// the prefetch of the AVX-512 Q4_0/Q8_0 streams and Q4_K decode kernels).
// BenchmarkPanelDecodeDRAM runs each, so that one run on a new kind of CPU
// says which it wants.
var decodeVariants = map[string][]decodeVariant{}

// BenchmarkPanelDecodeDRAM measures one-row products (decode) on a repacked
// matrix far larger than the caches (an LM head, 128256x2048) of each type
// with panels, with each kernel set this CPU runs, on 2 threads: MB/s is the
// weights' read rate, to compare type against type and with the memory
// probe of `shade bench` in the same minute; then each of decodeVariants.
func BenchmarkPanelDecodeDRAM(b *testing.B) {
	defer UseGeneric(false)
	rng := rand.New(rand.NewPCG(65, 66))
	rows, cols := 128256, 2048
	p := par.New(2)
	defer p.Close()
	for _, typ := range []Type{Q4_0, Q4_K} {
		data := randomWeights(rng, typ, rows, cols)
		if typ == Q4_K { // a normal f16 dmin: no subnormal float work
			for i := 0; i < len(data); i += q4_KBytes {
				data[i+3] = 0x20 | data[i+3]&0x83
			}
		}
		m, _ := NewMatrix(typ, rows, cols, data)
		m = Repackable(m, nil)
		x := testData(rng, cols)
		y := make([]float32, rows)
		for _, set := range KernelSets()[1:] {
			if err := UseKernels(set); err != nil {
				b.Fatal(err)
			}
			m.Repack(p)
			run := func(b *testing.B) {
				var buf Scratch
				b.SetBytes(int64(len(m.Data)))
				for b.Loop() {
					MatMul(p, m, x, 1, y, &buf)
				}
			}
			b.Run(fmt.Sprintf("%v/%s", typ, set), run)
			for _, v := range decodeVariants[set] {
				restore := v.use()
				b.Run(fmt.Sprintf("%v/%s/variant=%s", typ, set, v.name), run)
				restore()
			}
			m.DropPanels()
		}
	}
}
