//go:build amd64 && !noasm && gc

package quant

import "sync"

// The AVX-512 VNNI Q6_K kernels (gemmk512_amd64.s, from quant/_gen/kquant512;
// docs/kernels-kquant.md, "AVX-512 Q6_K").
//
// q6kZDecRows is the number of row streams decode reads at once (the rows of
// the decode kernel it runs), q6kZDecPF how far ahead of each stream the
// kernel prefetches, in bytes, q6kZTileRows the weight rows a batch
// sweeps against its activation rows before the next rows, q6kZChunk the
// super-blocks of those rows it takes at a time: variables so that
// the tests and measurements can try others.
var (
	q6kZDecRows  = 4
	q6kZDecPF    = 2048
	q6kZTileRows = 16
	q6kZChunk    = 2
)

// q6kActBufs holds gemmQ6KZBatch's rearranged activations.
var q6kActBufs = sync.Pool{New: func() any { return new([]byte) }}

// q6kDyBufs holds gemmQ6KZBatch's tables of activation scales.
var q6kDyBufs = sync.Pool{New: func() any { return new([]float32) }}

// gemmKAVX512 is gemmKGo on the AVX-512 Q6_K kernels; Q4_K goes to
// gemmKAVX2 unchanged. Like gemmKAVX2's, every output is the Go twin's bits
// whatever n, the row range or the thread split.
func gemmKAVX512(t Type, w []byte, rb, lo, hi int, a []byte, arb, n int, y []float32, ys int) {
	if t != Q6_K {
		gemmKAVX2(t, w, rb, lo, hi, a, arb, n, y, ys)
		return
	}
	_, nb := gemmKShape(t, w, rb, lo, hi, a, arb, n, y, ys)
	if nb == 0 {
		return
	}
	if n == 1 {
		gemmQ6KZDecode(w, rb, lo, hi, a, nb, y, q6kZDecRows)
		return
	}
	gemmQ6KZBatch(w, rb, lo, hi, a, arb, n, nb, y, ys)
}

// gemmQ6KZDecode computes rows [lo, hi) against one activation row: the
// range in s parts (s one of q6kZDec's row counts), row i of each part read
// by one kernel call (s streams far apart), the rows left over one at a time.
func gemmQ6KZDecode(w []byte, rb, lo, hi int, a []byte, nb int, y []float32, s int) {
	f := gemmQ6KZDecR1
	for _, d := range q6kZDec {
		if d.r == s {
			f = d.f
		}
	}
	q := (hi - lo) / s
	pf := q6kZDecPF
	for r := lo; r < lo+q; r++ {
		f(&w[r*rb], q*rb, &a[0], nb, &y[r], q, pf)
	}
	for r := lo + s*q; r < hi; r++ {
		gemmQ6KZDecR1(&w[r*rb], rb, &a[0], nb, &y[r], 1, pf)
	}
}

// gemmQ6KZBatch computes rows [lo, hi) against n ≥ 2 activation rows:
// q6kZTileRows weight rows at a time, q6kZChunk super-blocks at a time,
// against every activation row, at most q6kZCols a kernel call, in balanced
// widths. The kernels add each super-block's terms to eight float32 lanes
// per output, kept per (row, call), in the twin's order, so the chunks
// change no bit; the lanes' hsum8 goes to y when a tile is done.
func gemmQ6KZBatch(w []byte, rb, lo, hi int, a []byte, arb, n, nb int, y []float32, ys int) {
	calls := (n + q6kZCols - 1) / q6kZCols
	tr := q6kZTileRows
	// The activations' scales by super-block (dy[b*n+i]), with room for
	// the kernels' 16-float loads past the last, then the tile's sums.
	pb := q6kDyBufs.Get().(*[]float32)
	defer q6kDyBufs.Put(pb)
	need := nb*n + q6kZCols + 8*tr*calls*q6kZCols
	if cap(*pb) < need {
		*pb = make([]float32, need)
	}
	dy := (*pb)[:nb*n+q6kZCols]
	sums := (*pb)[nb*n+q6kZCols : need]
	for i := 0; i < n; i++ {
		for b := 0; b < nb; b++ {
			dy[b*n+i] = f32At(a[i*arb+b*q8_KBytes:])
		}
	}
	// The activations rearranged for the kernels, super-block by
	// super-block: at[(b*n+i)*q6kZActBytes:].
	ab := q6kActBufs.Get().(*[]byte)
	defer q6kActBufs.Put(ab)
	if cap(*ab) < nb*n*q6kZActBytes {
		*ab = make([]byte, nb*n*q6kZActBytes)
	}
	at := (*ab)[:nb*n*q6kZActBytes]
	for i := 0; i < n; i++ {
		q6kZActs(&a[i*arb], nb, &at[i*q6kZActBytes], n*q6kZActBytes)
	}
	for r0 := lo; r0 < hi; r0 += tr {
		r1 := min(r0+tr, hi)
		clear(sums)
		for b0 := 0; b0 < nb; b0 += q6kZChunk {
			cnt := min(q6kZChunk, nb-b0)
			// Each call prefetches the chunk its row takes next, or, on
			// the row's last chunk, that row's first a tile on: the tile's
			// rows are rb apart and read a chunk at a time, which the
			// hardware prefetchers do not follow (Zen 4: 8192×2048 at n =
			// 16 ran at 0.54× the AVX2 path without it).
			pf := cnt * q6_KBytes
			if b0+cnt >= nb {
				pf = tr*rb - b0*q6_KBytes
			}
			for c0, j := 0, 0; c0 < n; j++ {
				cc := n/calls + b2i(j < n%calls)
				f := q6kZTBatch[cc-1]
				for r := r0; r < r1; r++ {
					f(&w[r*rb+b0*q6_KBytes], &at[(b0*n+c0)*q6kZActBytes], n*q6kZActBytes, cnt, &dy[b0*n+c0], 4*n,
						&sums[8*((r-r0)*calls+j)*q6kZCols], pf)
				}
				c0 += cc
			}
		}
		for r := r0; r < r1; r++ {
			for c0, j := 0, 0; c0 < n; j++ {
				cc := n/calls + b2i(j < n%calls)
				s := sums[8*((r-r0)*calls+j)*q6kZCols:]
				for i := 0; i < cc; i++ {
					y[(c0+i)*ys+r] = hsum8((*[8]float32)(s[8*i:]))
				}
				c0 += cc
			}
		}
	}
}
