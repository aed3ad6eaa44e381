//go:build amd64 && !noasm && gc

package quant

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// k2iqRawWeights returns nb super-blocks of typ (Q2_K or IQ4_XS) of random
// bytes with finite f16 scales, or with every quant and scale at its
// largest ("max").
func k2iqRawWeights(rng *rand.Rand, typ Type, nb int, kind string) []byte {
	bs := typ.BlockBytes()
	b := make([]byte, nb*bs)
	halves := []uint16{0x3c00, 0xb800, 0x2e66, 0x1400, 0x5640, 0x0001, 0x8123, 0x7bff}
	for i := range b {
		b[i] = byte(rng.Uint32())
		if kind == "max" {
			b[i] = 0xff
		}
	}
	for blk := 0; blk < nb; blk++ {
		x := b[blk*bs:]
		if typ == Q2_K {
			binary.LittleEndian.PutUint16(x[80:], halves[rng.IntN(len(halves))])
			binary.LittleEndian.PutUint16(x[82:], halves[rng.IntN(len(halves))])
		} else {
			binary.LittleEndian.PutUint16(x[0:], halves[rng.IntN(len(halves))])
		}
	}
	return b
}

// TestK2IQGemmK holds every amd64 set's gemmK on Q2_K and IQ4_XS bit for
// bit to the per-row twins for batches of 1..33 activation rows, odd row
// counts and ranges, rows with padding past their blocks, misaligned
// buffers, random, extreme and quantized data, and tilings smaller than
// the batch.
func TestK2IQGemmK(t *testing.T) {
	if !haveAVX2FMA {
		t.Skip("CPU lacks AVX2, FMA or F16C")
	}
	savedRows, savedActs := k35TileRows, k35Acts
	defer func() { k35TileRows, k35Acts = savedRows, savedActs }()
	rng := rand.New(rand.NewPCG(43, 2))
	for _, s := range archSets {
		t.Log("set", s.name)
	}
	for _, c := range k2iqTypes {
		typ := c.typ
		for _, shape := range []struct{ rows, nb, pad int }{{1, 1, 0}, {5, 3, 0}, {19, 2, 7}, {37, 5, 0}} {
			bs := typ.BlockBytes()
			rb := shape.nb*bs + shape.pad
			w := make([]byte, shape.rows*rb)
			for r := 0; r < shape.rows; r++ {
				var blk []byte
				switch r % 5 {
				case 2:
					blk = k2iqRawWeights(rng, typ, shape.nb, "random")
				case 4:
					blk = k2iqRawWeights(rng, typ, shape.nb, "max")
				default:
					blk = encode(t, typ, testData(rng, shape.nb*qkK))
				}
				copy(w[r*rb:], blk)
			}
			w = misaligned(w, rng.IntN(8))
			for n := 1; n <= 33; n++ {
				arb := shape.nb*q8_KBytes + 3
				a := make([]byte, n*arb)
				for i := 0; i < n; i++ {
					var row []byte
					if i%4 == 3 {
						row = kActRows(rng, 1, shape.nb, "random")
					} else {
						row = quantizeAct(t, Q8_K, testData(rng, shape.nb*qkK))
					}
					copy(a[i*arb:], row)
				}
				a = misaligned(a, rng.IntN(8))
				ys := shape.rows + 2
				want := make([]float32, n*ys)
				for i := 0; i < n; i++ {
					for r := 0; r < shape.rows; r++ {
						want[i*ys+r] = c.twin(w[r*rb:r*rb+shape.nb*bs], a[i*arb:])
					}
				}
				for _, tiling := range [][2]int{{16, 16}, {3, 5}, {1, 1}} {
					k35TileRows, k35Acts = tiling[0], tiling[1]
					lo, hi := 0, shape.rows
					if shape.rows > 4 {
						lo, hi = 1, shape.rows-1
					}
					y := make([]float32, n*ys)
					for _, s := range archSets {
						if !s.hasGemmK(typ) {
							t.Fatalf("%s does not claim %v", s.name, typ)
						}
						for i := range y {
							y[i] = -7 // outside [lo, hi) must stay
						}
						s.gemmK(typ, w, rb, lo, hi, a, arb, n, y, ys)
						for i := 0; i < n; i++ {
							for r := 0; r < ys; r++ {
								g, x := y[i*ys+r], want[i*ys+r]
								if r < lo || r >= hi {
									x = -7
								}
								if !sameFloat(g, x) {
									t.Fatalf("%s %v rows %d nb %d n %d tiling %v: y[%d][%d] = %v (%#x), twin %v (%#x)",
										s.name, typ, shape.rows, shape.nb, n, tiling, i, r, g, math.Float32bits(g), x, math.Float32bits(x))
								}
							}
						}
					}
				}
			}
		}
	}
}

// TestK2IQGemmKShortRows checks rows shorter than a super-block: outputs
// are cleared (the twin's empty sum), nothing is read.
func TestK2IQGemmKShortRows(t *testing.T) {
	for _, s := range archSets {
		for _, typ := range []Type{Q2_K, IQ4_XS} {
			y := []float32{1, 2, 3, 4}
			s.gemmK(typ, make([]byte, 10), 5, 0, 2, nil, 0, 2, y, 2)
			if fmt.Sprint(y) != "[0 0 0 0]" {
				t.Errorf("%s %v: %v", s.name, typ, y)
			}
		}
	}
}

// BenchmarkK2IQGemmK times MatMul-shaped products on one thread, for
// Q2_K and IQ4_XS on the batched kernels (gemmK), on the per-row loop (the
// dot kernel once per output) and, for scale, Q4_K on its gemmK, all in one
// run: compare ns/op within it.
func BenchmarkK2IQGemmK(b *testing.B) {
	if !haveAVX2FMA {
		b.Skip("CPU lacks AVX2, FMA or F16C")
	}
	rng := rand.New(rand.NewPCG(47, 2))
	nb := k35BenchCols / qkK
	for _, typ := range []Type{Q2_K, IQ4_XS, Q4_K} {
		rb, _ := typ.RowBytes(k35BenchCols)
		w := make([]byte, k35BenchRows*rb)
		row := encode(b, typ, testData(rng, k35BenchCols))
		for r := 0; r < k35BenchRows; r++ {
			copy(w[r*rb:], row)
			w[r*rb+5] ^= byte(r) // rows differ a little
		}
		for _, n := range []int{1, 2, 4, 8, 16} {
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
