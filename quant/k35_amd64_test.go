//go:build amd64 && !noasm && gc

package quant

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// k35Twins pairs each type of k35.go with its Go twin.
var k35Twins = map[Type]func(w, a []byte) float32{Q3_K: dotQ3_KQ8_KGo, Q5_K: dotQ5_KQ8_KGo}

// TestK35AsmDots holds the AVX2 dots bit for bit to the twins, and checks
// that every amd64 set uses them, over quantized data and raw blocks of
// random and extreme bytes, 0..17 and 255..257 super-blocks at misaligned
// offsets.
func TestK35AsmDots(t *testing.T) {
	if !haveAVX2FMA {
		t.Skip("CPU lacks AVX2, FMA or F16C")
	}
	for _, s := range archSets {
		if s.dotQ3_KQ8_K == nil || s.dotQ5_KQ8_K == nil || !s.hasGemmK(Q3_K) || !s.hasGemmK(Q5_K) {
			t.Errorf("set %s lacks the Q3_K/Q5_K kernels", s.name)
		}
	}
	rng := rand.New(rand.NewPCG(41, 35))
	counts := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 255, 256, 257}
	asm := map[Type]func(w, a []byte) float32{Q3_K: dotQ3_KQ8_K_amd64, Q5_K: dotQ5_KQ8_K_amd64}
	for _, typ := range k35Types {
		for _, mode := range []string{"quantized", "random", "0xff", "0x80"} {
			for _, nb := range counts {
				off := rng.IntN(8)
				var w, a []byte
				if mode == "quantized" {
					w = encode(t, typ, testData(rng, nb*qkK))
					a = quantizeAct(t, Q8_K, testData(rng, nb*qkK))
				} else {
					w = k35RawWeights(rng, typ, nb, mode)
					a = k35RawActs(rng, nb, mode)
				}
				w, a = misaligned(w, off), misaligned(a, 7-off)
				got, want := asm[typ](w, a), k35Twins[typ](w, a)
				if math.Float32bits(got) != math.Float32bits(want) {
					t.Fatalf("%v %s %d blocks offset %d: asm %v, twin %v", typ, mode, nb, off, got, want)
				}
			}
		}
	}
}

// TestK35GemmK holds gemmK35AVX2 bit for bit to the per-row twin for batches
// of 1..33 activation rows, odd row counts and ranges, rows with padding
// past their blocks, and tilings smaller than the batch.
func TestK35GemmK(t *testing.T) {
	if !haveAVX2FMA {
		t.Skip("CPU lacks AVX2, FMA or F16C")
	}
	savedRows, savedActs := k35TileRows, k35Acts
	defer func() { k35TileRows, k35Acts = savedRows, savedActs }()
	rng := rand.New(rand.NewPCG(43, 35))
	for _, typ := range k35Types {
		for _, shape := range []struct{ rows, nb, pad int }{{1, 1, 0}, {5, 3, 0}, {19, 2, 7}, {37, 5, 0}} {
			bs := typ.BlockBytes()
			rb := shape.nb*bs + shape.pad
			w := make([]byte, shape.rows*rb)
			for r := 0; r < shape.rows; r++ {
				var blk []byte
				if r%3 == 2 {
					blk = k35RawWeights(rng, typ, shape.nb, "random")
				} else {
					blk = encode(t, typ, testData(rng, shape.nb*qkK))
				}
				copy(w[r*rb:], blk)
			}
			for n := 1; n <= 33; n++ {
				arb := shape.nb*q8_KBytes + 3
				a := make([]byte, n*arb)
				for i := 0; i < n; i++ {
					copy(a[i*arb:], quantizeAct(t, Q8_K, testData(rng, shape.nb*qkK)))
				}
				ys := shape.rows + 2
				want := make([]float32, n*ys)
				for i := 0; i < n; i++ {
					for r := 0; r < shape.rows; r++ {
						want[i*ys+r] = k35Twins[typ](w[r*rb:r*rb+shape.nb*bs], a[i*arb:])
					}
				}
				for _, tiling := range [][2]int{{16, 16}, {3, 5}, {1, 1}} {
					k35TileRows, k35Acts = tiling[0], tiling[1]
					lo, hi := 0, shape.rows
					if shape.rows > 4 {
						lo, hi = 1, shape.rows-1
					}
					y := make([]float32, n*ys)
					for i := range y {
						y[i] = -7 // outside [lo, hi) must stay
					}
					gemmK35AVX2(typ, w, rb, lo, hi, a, arb, n, y, ys)
					for i := 0; i < n; i++ {
						for r := 0; r < ys; r++ {
							g := y[i*ys+r]
							x := want[i*ys+r]
							if r < lo || r >= hi {
								x = -7
							}
							if math.Float32bits(g) != math.Float32bits(x) {
								t.Fatalf("%v rows %d nb %d n %d tiling %v: y[%d][%d] = %v, want %v",
									typ, shape.rows, shape.nb, n, tiling, i, r, g, x)
							}
						}
					}
				}
			}
		}
	}
}

// TestK35GemmKShortRows checks rows shorter than a super-block: outputs
// are cleared (the twin's empty sum), nothing is read.
func TestK35GemmKShortRows(t *testing.T) {
	for _, typ := range k35Types {
		y := []float32{1, 2, 3, 4}
		gemmK35AVX2(typ, make([]byte, 10), 5, 0, 2, nil, 0, 2, y, 2)
		if fmt.Sprint(y) != "[0 0 0 0]" {
			t.Errorf("%v: %v", typ, y)
		}
	}
}

// k35BenchShape is a 4096×4096 matrix, a 7B-class projection.
const k35BenchRows, k35BenchCols = 4096, 4096

// BenchmarkK35GemmK times MatMul-shaped products on one thread, for
// Q3_K and Q5_K on gemmK35AVX2 (the batched kernel), on the per-row loop
// (the dot kernel once per output) and, for scale, Q4_K on its gemmK, all
// in one run: compare ns/op within it.
func BenchmarkK35GemmK(b *testing.B) {
	if !haveAVX2FMA {
		b.Skip("CPU lacks AVX2, FMA or F16C")
	}
	rng := rand.New(rand.NewPCG(47, 35))
	nb := k35BenchCols / qkK
	for _, typ := range []Type{Q3_K, Q5_K, Q4_K} {
		rb, _ := typ.RowBytes(k35BenchCols)
		w := make([]byte, k35BenchRows*rb)
		row := encode(b, typ, testData(rng, k35BenchCols))
		for r := 0; r < k35BenchRows; r++ {
			copy(w[r*rb:], row)
			w[r*rb+5] ^= byte(r) // rows differ a little
		}
		for _, n := range []int{1, 8, 16} {
			arb := nb * q8_KBytes
			a := make([]byte, n*arb)
			for i := 0; i < n; i++ {
				quantizeQ8_K(testData(rng, k35BenchCols), a[i*arb:])
			}
			y := make([]float32, n*k35BenchRows)
			b.Run(fmt.Sprintf("%v/n=%d/gemmK", typ, n), func(b *testing.B) {
				for b.Loop() {
					k.gemmK(typ, w, rb, 0, k35BenchRows, a, arb, n, y, k35BenchRows)
				}
			})
			if typ == Q4_K {
				continue
			}
			dot := activationFor(typ).dotQ
			b.Run(fmt.Sprintf("%v/n=%d/rowloop", typ, n), func(b *testing.B) {
				for b.Loop() {
					for r := 0; r < k35BenchRows; r++ {
						for i := 0; i < n; i++ {
							y[i*k35BenchRows+r] = dot(w[r*rb:(r+1)*rb], a[i*arb:(i+1)*arb])
						}
					}
				}
			})
		}
	}
}
