package quant

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"shade/par"
)

// TestPanelRoundTrip checks that packPanel and panelBlock invert each other
// on arbitrary bytes (any scale bits, any weights).
func TestPanelRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 52))
	for _, typ := range []Type{Q4_0, Q8_0} {
		bw := typ.BlockBytes()
		for _, nb := range []int{1, 3, 8} {
			rb := nb * bw
			src := make([]byte, panelRows*rb)
			for i := range src {
				src[i] = byte(rng.Uint32())
			}
			dst := make([]byte, len(src))
			packPanel(typ, src, rb, dst)
			for r := range panelRows {
				for b := range nb {
					blk := make([]byte, bw)
					panelBlock(typ, dst, rb, r, b, blk)
					if want := src[r*rb+b*bw : r*rb+(b+1)*bw]; !bytes.Equal(blk, want) {
						t.Fatalf("%v %d blocks: row %d block %d comes back as %x, was %x", typ, nb, r, b, blk, want)
					}
				}
			}
		}
	}
	// Q4_K: every 12 bytes of packed scales are 16 values of 6 bits, so
	// any bytes come back.
	for _, nb := range []int{1, 3} {
		rb := nb * q4_KBytes
		src := make([]byte, q4kPanelRows*rb)
		for i := range src {
			src[i] = byte(rng.Uint32())
		}
		dst := make([]byte, nb*q4kTileBytes)
		packQ4KPanel(src, rb, nb, dst)
		blk := make([]byte, q4_KBytes)
		for r := range q4kPanelRows {
			for b := range nb {
				q4kPanelBlock(dst, nb, r, b, blk)
				if want := src[r*rb+b*q4_KBytes : r*rb+(b+1)*q4_KBytes]; !bytes.Equal(blk, want) {
					t.Fatalf("Q4_K %d blocks: row %d block %d comes back as %x, was %x", nb, r, b, blk, want)
				}
			}
		}
	}
}

// randomQ4KWeights is randomWeights for Q4_K with a finite dmin too, so
// that no output is NaN (whose payload is not part of the kernels'
// contract).
func randomQ4KWeights(rng *rand.Rand, rows, cols int) []byte {
	data := randomWeights(rng, Q4_K, rows, cols)
	for b := 0; b < len(data)/q4_KBytes; b++ {
		dm := F32ToF16(float32(math.Ldexp(1+rng.Float64(), -10+rng.IntN(6))))
		data[b*q4_KBytes+2], data[b*q4_KBytes+3] = byte(dm), byte(dm>>8)
	}
	return data
}

// TestRepackedMatMulMatches holds MatMul on a repackable matrix to MatMul
// on the same bytes in the file's layout, bit for bit, for batch sizes
// across the kernels' column tiles and with repacking turned off again; it
// checks DequantizeRow on the panels and that release gets the file's bytes
// once.
func TestRepackedMatMulMatches(t *testing.T) {
	defer UseGeneric(false)
	for _, set := range KernelSets() {
		if err := UseKernels(set); err != nil {
			t.Fatal(err)
		}
		t.Run(set, testRepackedMatMulMatches)
	}
}

func testRepackedMatMulMatches(t *testing.T) {
	rng := rand.New(rand.NewPCG(53, 54))
	p := par.New(2)
	defer p.Close()
	defer UseRepack(true)
	for _, typ := range []Type{Q4_0, Q8_0, Q4_K} {
		// Shapes from one panel to several per thread, with and without
		// a remainder beside the one-row kernel's streams.
		shapes := [][2]int{{16, 32}, {48, 96}, {64, 2048}, {128, 64}, {272, 32}, {1040, 128}}
		if typ == Q4_K {
			// Panels of 8 rows: an odd count of them ends a thread's
			// chunk in half a row tile.
			shapes = [][2]int{{8, 256}, {24, 512}, {64, 2048}, {136, 256}, {520, 768}}
		}
		for _, shape := range shapes {
			rows, cols := shape[0], shape[1]
			data := randomWeights(rng, typ, rows, cols)
			if typ == Q4_K {
				data = randomQ4KWeights(rng, rows, cols)
			}
			plain, err := NewMatrix(typ, rows, cols, data)
			if err != nil {
				t.Fatal(err)
			}
			released := 0
			packed := Repackable(plain, func(b []byte) {
				released++
				if &b[0] != &data[0] || len(b) != len(plain.Data) {
					t.Errorf("release got %d bytes at %p, want the matrix's %d at %p", len(b), &b[0], len(plain.Data), &data[0])
				}
			})
			for _, n := range []int{1, 2, 5, 16, 17, 33} {
				UseRepack(n != 5)
				x := testData(rng, n*cols)
				want := make([]float32, n*rows)
				got := make([]float32, n*rows)
				MatMul(p, plain, x, n, want, nil)
				MatMul(p, packed, x, n, got, nil)
				for e := range got {
					if math.Float32bits(got[e]) != math.Float32bits(want[e]) {
						t.Fatalf("%v %dx%d n=%d: output %d is %v repacked, %v in place", typ, rows, cols, n, e, got[e], want[e])
					}
				}
			}
			UseRepack(true)
			if !plain.panelKernels() {
				if packed.Repacked() || released != 0 {
					t.Fatalf("%v: repacked without panel kernels", typ)
				}
				continue
			}
			if !packed.Repacked() || released != 1 {
				t.Fatalf("%v %dx%d: repacked %v, released %d times; want true, once", typ, rows, cols, packed.Repacked(), released)
			}
			// Dropped, the panels are rebuilt on the next product.
			packed.DropPanels()
			if packed.Repacked() {
				t.Fatalf("%v: still repacked after DropPanels", typ)
			}
			if !packed.Repack(p) || released != 2 {
				t.Fatalf("%v: Repack after DropPanels: repacked %v, released %d times", typ, packed.Repacked(), released)
			}
			a, b := make([]float32, cols), make([]float32, cols)
			for r := range rows {
				plain.DequantizeRow(r, a)
				packed.DequantizeRow(r, b)
				for e := range a {
					if math.Float32bits(a[e]) != math.Float32bits(b[e]) {
						t.Fatalf("%v row %d value %d: %v from panels, %v in place", typ, r, e, b[e], a[e])
					}
				}
			}
		}
	}
}

// TestRepackableLeavesOthers checks which matrices are left in the file's
// layout.
func TestRepackableLeavesOthers(t *testing.T) {
	for _, tc := range []struct {
		typ  Type
		rows int
		want bool
	}{{Q4_0, 16, true}, {Q8_0, 32, true}, {Q4_0, 24, false}, {Q4_K, 24, k.gemmKPanel != nil}, {Q4_K, 12, false},
		{Q6_K, 16, false}, {F16, 16, false}, {Q4_0, 0, false}} {
		cols := 256
		size, _ := tc.typ.RowBytes(tc.rows * cols)
		m, err := NewMatrix(tc.typ, tc.rows, cols, make([]byte, size))
		if err != nil {
			t.Fatal(err)
		}
		if got := Repackable(m, nil).pk != nil; got != tc.want {
			t.Errorf("%v with %d rows: repackable %v, want %v", tc.typ, tc.rows, got, tc.want)
		}
	}
}

// BenchmarkPanelDecode sweeps LM-head-size and layer-size matrices with one
// activation row, in the file's layout and repacked, on one and on two
// threads: MB/s is the weights' read rate.
func BenchmarkPanelDecode(b *testing.B) {
	rng := rand.New(rand.NewPCG(55, 56))
	defer UseRepack(true)
	for _, typ := range []Type{Q4_0, Q8_0, Q4_K} {
		for _, shape := range [][2]int{{128256, 2048}, {512, 2048}} {
			rows, cols := shape[0], shape[1]
			data := randomWeights(rng, typ, rows, cols)
			if typ == Q4_K {
				data = randomQ4KWeights(rng, rows, cols)
			}
			m, _ := NewMatrix(typ, rows, cols, data)
			m = Repackable(m, nil)
			x := testData(rng, cols)
			y := make([]float32, rows)
			for _, threads := range []int{1, 2} {
				p := par.New(threads)
				for _, repack := range []bool{false, true} {
					UseRepack(repack)
					MatMul(p, m, x, 1, y, nil) // repack outside the timing
					var buf Scratch
					b.Run(fmt.Sprintf("%v/%dx%d/threads=%d/repack=%v", typ, rows, cols, threads, repack), func(b *testing.B) {
						b.SetBytes(int64(len(m.Data)))
						for b.Loop() {
							MatMul(p, m, x, 1, y, &buf)
						}
					})
				}
				p.Close()
			}
		}
	}
}

// BenchmarkPackPanels repacks a layer-size matrix held in cache-cold memory
// (the shuffle alone: the destination is reused). MB/s is the matrix's
// bytes.
func BenchmarkPackPanels(b *testing.B) {
	rng := rand.New(rand.NewPCG(59, 60))
	for _, typ := range []Type{Q4_0, Q8_0} {
		rows, cols := 14336, 4096
		m, _ := NewMatrix(typ, rows, cols, randomWeights(rng, typ, rows, cols))
		out := alignedBytes(len(m.Data))
		b.Run(typ.String(), func(b *testing.B) {
			b.SetBytes(int64(len(m.Data)))
			for b.Loop() {
				packPanels(nil, m, out)
			}
		})
	}
}
