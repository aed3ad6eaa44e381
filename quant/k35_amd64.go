//go:build amd64 && !noasm && gc

package quant

import "sync"

// The Q3_K and Q5_K kernels go into every amd64 set, as dot products and
// as gemmK (the set's gemmK keeps Q4_K and Q6_K and hands these two types to
// gemmK35): the AVX2 ones (k35_amd64.s) in avx2 and avxvnni, the AVX-512
// ones (k35z_amd64.s) in avx512.
var _ = archHook(hookK35)

func hookK35(s *kernelSet) {
	var rows k35Rows
	switch s.name {
	case "avx2", "avxvnni":
		rows = k35AVX2
	case "avx512":
		rows = k35Z
	default:
		return
	}
	s.dotQ3_KQ8_K = func(w, a []byte) float32 { return dotK35(rows.row[0], q3_KBytes, w, a) }
	s.dotQ5_KQ8_K = func(w, a []byte) float32 { return dotK35(rows.row[1], q5_KBytes, w, a) }
	prev := s.gemmK
	s.gemmK = func(t Type, w []byte, rb, lo, hi int, a []byte, arb, n int, y []float32, ys int) {
		switch t {
		case Q3_K:
			gemmK35(rows.row[0], rows.row4[0], q3_KBytes, w, rb, lo, hi, a, arb, n, y, ys)
		case Q5_K:
			gemmK35(rows.row[1], rows.row4[1], q5_KBytes, w, rb, lo, hi, a, arb, n, y, ys)
		default:
			prev(t, w, rb, lo, hi, a, arb, n, y, ys)
		}
	}
	s.gemmKTypes |= 1<<Q3_K | 1<<Q5_K
}

// k35RowFunc is the signature of the row kernels: one weight row of nb > 0
// super-blocks against 0 < c <= 16 activation rows arb bytes apart (both
// types keep eight float32 lanes a row on the stack), output i at y[i*ys].
type k35RowFunc = func(w, a *byte, arb, nb int, y *float32, ys, c int)

// k35Row4Func is the signature of the grouped row kernels: k35RowFunc for
// c a multiple of 4 (at most k35Acts), with the rows' scales by super-block
// in dy[b*c+i].
type k35Row4Func = func(w, a *byte, arb, nb int, y *float32, ys, c int, dy *float32)

// k35Rows holds a set's row kernels for Q3_K and Q5_K, and its grouped
// ones where it has them.
type k35Rows struct {
	row  [2]k35RowFunc
	row4 [2]k35Row4Func
}

var (
	k35AVX2 = k35Rows{row: [2]k35RowFunc{q3kRowAVX2, q5kRowAVX2}, row4: [2]k35Row4Func{q3kRowAVX2G, q5kRowAVX2G}}
	k35Z    = k35Rows{row: [2]k35RowFunc{q3kRowZ, q5kRowZ}, row4: [2]k35Row4Func{q3kRowZ4, q5kRowZ4}}
)

// k35DyBufs holds gemmK35's tables of activation scales.
var k35DyBufs = sync.Pool{New: func() any { return new([]float32) }}

// dotQ3_KQ8_K_amd64 is dotQ3_KQ8_KGo on the AVX2 kernel, bit for bit.
func dotQ3_KQ8_K_amd64(w, a []byte) float32 { return dotK35(q3kRowAVX2, q3_KBytes, w, a) }

// dotQ5_KQ8_K_amd64 is dotQ5_KQ8_KGo on the AVX2 kernel, bit for bit.
func dotQ5_KQ8_K_amd64(w, a []byte) float32 { return dotK35(q5kRowAVX2, q5_KBytes, w, a) }

// dotK35 is the dot of whole blocks of bs bytes of w with a on row kernel
// f, for any bytes.
func dotK35(f k35RowFunc, bs int, w, a []byte) float32 {
	nb := len(w) / bs
	if nb == 0 {
		return 0
	}
	_ = a[nb*q8_KBytes-1] // the assembly reads nb whole activation blocks
	var y float32
	f(&w[0], &a[0], 0, nb, &y, 0, 1)
	return y
}

// Tiling of gemmK35: k35TileRows weight rows are swept against each
// group of at most k35Acts activation rows (at most 16: the grouped
// kernels keep 16 sums), each row's super-blocks unpacked once per group;
// the tile's rows stay in cache for the next group.
var (
	k35TileRows = 16
	k35Acts     = 16
)

// gemmK35 is gemmKGo for Q3_K or Q5_K weights (blocks of bs bytes) on
// row kernel f and, for groups of 4 activation rows, f4 if not nil: every
// output is the per-row twin's bits whatever n or the split.
func gemmK35(f k35RowFunc, f4 k35Row4Func, bs int, w []byte, rb, lo, hi int, a []byte, arb, n int, y []float32, ys int) {
	if lo >= hi || n <= 0 {
		return
	}
	nb := rb / bs
	// The kernels keep at most 16 rows' sums (Q3_K's row kernels eight
	// float32 lanes a row on the stack): no more, whatever k35Acts says.
	acts := min(k35Acts, 16)
	if nb == 0 {
		for i := 0; i < n; i++ {
			clear(y[i*ys+lo : i*ys+hi])
		}
		return
	}
	// The assembly reads and writes unchecked: check the last of each.
	_ = w[(hi-1)*rb+nb*bs-1]
	_ = a[(n-1)*arb+nb*q8_KBytes-1]
	_ = y[(n-1)*ys+hi-1]
	// With a grouped kernel, the scales of each chunk's first c&^3 rows,
	// super-block by super-block: chunk c0's at dy[c0*nb:].
	var dy []float32
	if f4 != nil && n >= 4 {
		pb := k35DyBufs.Get().(*[]float32)
		defer k35DyBufs.Put(pb)
		if cap(*pb) < nb*n {
			*pb = make([]float32, nb*n)
		}
		dy = (*pb)[:nb*n]
		for c0 := 0; c0 < n; c0 += acts {
			c4 := min(acts, n-c0) &^ 3
			for b := 0; b < nb; b++ {
				for i := 0; i < c4; i++ {
					dy[c0*nb+b*c4+i] = f32At(a[(c0+i)*arb+b*q8_KBytes:])
				}
			}
		}
	}
	for r0 := lo; r0 < hi; r0 += k35TileRows {
		r1 := min(r0+k35TileRows, hi)
		for c0 := 0; c0 < n; c0 += acts {
			c := min(acts, n-c0)
			c4 := 0
			if dy != nil {
				c4 = c &^ 3
			}
			for r := r0; r < r1; r++ {
				if c4 > 0 {
					f4(&w[r*rb], &a[c0*arb], arb, nb, &y[c0*ys+r], ys, c4, &dy[c0*nb])
				}
				if c > c4 {
					f(&w[r*rb], &a[(c0+c4)*arb], arb, nb, &y[(c0+c4)*ys+r], ys, c-c4)
				}
			}
		}
	}
}

//go:noescape
func q3kRowAVX2(w, a *byte, arb, nb int, y *float32, ys, c int)

//go:noescape
func q5kRowAVX2(w, a *byte, arb, nb int, y *float32, ys, c int)

//go:noescape
func q3kRowZ(w, a *byte, arb, nb int, y *float32, ys, c int)

//go:noescape
func q5kRowZ(w, a *byte, arb, nb int, y *float32, ys, c int)

//go:noescape
func q5kRowZ4(w, a *byte, arb, nb int, y *float32, ys, c int, dy *float32)

//go:noescape
func q3kRowZ4(w, a *byte, arb, nb int, y *float32, ys, c int, dy *float32)

//go:noescape
func q3kRowAVX2G(w, a *byte, arb, nb int, y *float32, ys, c int, dy *float32)

//go:noescape
func q5kRowAVX2G(w, a *byte, arb, nb int, y *float32, ys, c int, dy *float32)
