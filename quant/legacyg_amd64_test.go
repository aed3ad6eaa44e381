//go:build amd64 && !noasm && gc

package quant

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"shade/par"
)

// legacyGActs returns n activation rows of typ (Q8_0 or Q8_1), nb blocks
// each, arb bytes apart: quantized, random (quants within ±127, as the
// quantizers write them) or at ±127.
func legacyGActs(t *testing.T, rng *rand.Rand, typ Type, n, nb, arb int) []byte {
	a := make([]byte, n*arb)
	hdr := 2
	if typ == Q8_1 {
		hdr = 4
	}
	bs := typ.BlockBytes()
	for i := 0; i < n; i++ {
		var row []byte
		switch i % 4 {
		case 1:
			row = legacyRaw(rng, typ, nb, "random")
		case 3:
			row = legacyRaw(rng, typ, nb, []string{"0x7f", "0x81"}[rng.IntN(2)])
		default:
			row = legacyAct(t, typ, testData(rng, nb*32))
		}
		for b := 0; b < nb; b++ {
			for j := hdr; j < bs; j++ {
				if row[b*bs+j] == 0x80 {
					row[b*bs+j] = 0x81
				}
			}
		}
		copy(a[i*arb:], row)
	}
	return a
}

// TestLegacyGemmQ8 holds every amd64 set's gemmQ8 on Q4_1, Q5_0, Q5_1 and
// IQ4_NL bit for bit to the per-row twins for batches of 1..33 activation
// rows, 1/5/19/37 weight rows with ranges starting inside the matrix,
// padded weight and activation strides, misaligned buffers, quantized,
// random and extreme blocks, and tilings smaller than the batch.
func TestLegacyGemmQ8(t *testing.T) {
	if !haveAVX2FMA {
		t.Skip("CPU lacks AVX2, FMA or F16C")
	}
	savedRows, savedActs := legTileRows, legActs
	defer func() { legTileRows, legActs = savedRows, savedActs }()
	rng := rand.New(rand.NewPCG(71, 72))
	for _, d := range legacyTypes {
		typ := d.w
		bs := typ.BlockBytes()
		for _, shape := range []struct{ rows, nb, pad int }{{1, 1, 0}, {5, 3, 0}, {19, 2, 7}, {37, 9, 0}} {
			rb := shape.nb*bs + shape.pad
			w := make([]byte, shape.rows*rb)
			for r := 0; r < shape.rows; r++ {
				var blk []byte
				switch r % 5 {
				case 2:
					blk = legacyRaw(rng, typ, shape.nb, "random")
				case 4:
					blk = legacyRaw(rng, typ, shape.nb, []string{"0xff", "0x00", "0x0f", "0xf0"}[rng.IntN(4)])
				default:
					blk = encode(t, typ, testData(rng, shape.nb*32))
				}
				copy(w[r*rb:], blk)
			}
			w = misaligned(w, rng.IntN(8))
			for n := 1; n <= 33; n++ {
				arb := shape.nb*d.act.BlockBytes() + 3
				a := misaligned(legacyGActs(t, rng, d.act, n, shape.nb, arb), rng.IntN(8))
				ys := shape.rows + 2
				want := make([]float32, n*ys)
				for i := 0; i < n; i++ {
					for r := 0; r < shape.rows; r++ {
						want[i*ys+r] = d.twin(w[r*rb:r*rb+shape.nb*bs], a[i*arb:])
					}
				}
				for _, tiling := range [][2]int{{16, 16}, {3, 5}, {1, 4}} {
					legTileRows, legActs = tiling[0], tiling[1]
					lo, hi := 0, shape.rows
					if shape.rows > 4 {
						lo, hi = 1, shape.rows-1
					}
					y := make([]float32, n*ys)
					for _, s := range archSets {
						if !s.hasGemmQ8(typ) {
							t.Fatalf("%s does not claim %v", s.name, typ)
						}
						for i := range y {
							y[i] = -7 // outside [lo, hi) must stay
						}
						s.gemmQ8(typ, w, rb, lo, hi, a, arb, n, y, ys)
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

// TestLegacyGemmQ8ShortRows checks rows shorter than a block: outputs are
// cleared (the twin's empty sum), nothing is read.
func TestLegacyGemmQ8ShortRows(t *testing.T) {
	for _, s := range archSets {
		for _, d := range legacyTypes {
			y := []float32{1, 2, 3, 4}
			s.gemmQ8(d.w, make([]byte, 10), 5, 0, 2, nil, 0, 2, y, 2)
			if fmt.Sprint(y) != "[0 0 0 0]" {
				t.Errorf("%s %v: %v", s.name, d.w, y)
			}
		}
	}
}

// TestLegacyMatMulSets holds MatMul on Q4_1, Q5_0, Q5_1 and IQ4_NL, on
// every amd64 set and on pools of 1 and 3 threads, to the per-row twins
// (the generic set one row at a time) for batches 1..33.
func TestLegacyMatMulSets(t *testing.T) {
	rng := rand.New(rand.NewPCG(73, 74))
	pools := []*par.Pool{nil, par.New(1), par.New(3)}
	defer func() {
		for _, p := range pools {
			p.Close()
		}
	}()
	saved := k
	defer func() { k = saved }()
	var buf Scratch
	const rows, cols, maxN = 37, 96, 33
	for _, d := range legacyTypes {
		m, err := NewMatrix(d.w, rows, cols, encode(t, d.w, testData(rng, rows*cols)))
		if err != nil {
			t.Fatal(err)
		}
		x := testData(rng, maxN*cols)
		k = &genericKernels
		one := make([]float32, maxN*rows)
		for i := 0; i < maxN; i++ {
			MatMul(nil, m, x[i*cols:(i+1)*cols], 1, one[i*rows:(i+1)*rows], &buf)
		}
		for si := range archSets {
			k = &archSets[si]
			for n := 1; n <= maxN; n++ {
				for pi, p := range pools {
					y := make([]float32, n*rows)
					MatMul(p, m, x[:n*cols], n, y, &buf)
					for e, v := range y {
						if want := one[e]; math.Float32bits(v) != math.Float32bits(want) {
							t.Fatalf("%s %v n=%d pool %d: y[%d][%d] = %v (%#x), generic one row at a time %v (%#x)",
								archSets[si].name, d.w, n, pi, e/rows, e%rows, v, math.Float32bits(v), want, math.Float32bits(want))
						}
					}
				}
			}
		}
	}
}

// BenchmarkLegacyGemmQ8 times MatMul-shaped products on one thread for
// batches 1, 4, 7, 8 and 16, on gemmQ8 ("batched") and on partRows' per-row
// loop ("rows", the dot kernel once per output), in one run: compare
// ns/op within it.
func BenchmarkLegacyGemmQ8(b *testing.B) {
	if !haveAVX2FMA {
		b.Skip("CPU lacks AVX2, FMA or F16C")
	}
	rng := rand.New(rand.NewPCG(75, 76))
	const rows, cols = 512, 2048
	s := &archSets[0]
	for ti, d := range legacyTypes {
		w := encode(b, d.w, testData(rng, rows*cols))
		rb := len(w) / rows
		arb := cols / 32 * d.act.BlockBytes()
		dot := legacyEntries(s)[ti]
		for _, n := range []int{1, 4, 7, 8, 16} {
			a := legacyGActs(&testing.T{}, rng, d.act, n, cols/32, arb)
			y := make([]float32, n*rows)
			b.Run(fmt.Sprintf("%v/n=%d/batched", d.w, n), func(b *testing.B) {
				for b.Loop() {
					s.gemmQ8(d.w, w, rb, 0, rows, a, arb, n, y, rows)
				}
			})
			b.Run(fmt.Sprintf("%v/n=%d/rows", d.w, n), func(b *testing.B) {
				for b.Loop() {
					for r0 := 0; r0 < rows; r0 += rowTile {
						for i0 := 0; i0 < n; i0 += actTile {
							for r := r0; r < r0+rowTile; r++ {
								for i := i0; i < min(i0+actTile, n); i++ {
									y[i*rows+r] = dot(w[r*rb:(r+1)*rb], a[i*arb:(i+1)*arb])
								}
							}
						}
					}
				}
			})
		}
	}
}
