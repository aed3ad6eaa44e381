//go:build amd64 && !noasm && gc

package quant

import "sync"

// gemmKFunc is the signature of the generated kernels (gemmk_amd64.s).
type gemmKFunc = func(w *byte, rb int, a *byte, arb int, nb int, y *float32, ys int)

// gemmKKernels[t][r][c] is the kernel for r weight rows by c activation
// rows (t: 0 for Q4_K, 1 for Q6_K), nil for shapes not generated.
var gemmKKernels = func() (k [2][9][9]gemmKFunc) {
	for _, s := range gemmKShapes {
		k[0][s.r][s.c] = s.q4k
		k[1][s.r][s.c] = s.q6k
	}
	return k
}()

// Tiling of gemmKAVX2, chosen by measurement on AMD EPYC Zen 3 (see
// docs/kernels-kquant.md). A batch sweeps kTileRows weight rows against
// up to kActs activation rows at a time, so that the rows' super-blocks
// stay in L1 while the activation rows are reused from L2; decode reads
// kDecRows rows at once.
const (
	kTileRows = 16
	kActs     = 8
	kDecRows  = 4

	// Q4_K tiles (gemmQ4KTiles) are unpacked kTileChunk super-blocks at a
	// time: about 6 KiB of tile, with up to q4kTileCols activation rows'
	// 7 KiB beside it in L1 (8 measured the same within the noise).
	kTileChunk = 4
)

// q4kTileMin is the fewest activation rows for which Q4_K runs on tiles
// of 8 rows unpacked into L1 (gemmQ4KTiles) rather than on the per-row
// kernels; a variable so that TestGemmKCPUTime can compare the two.
var q4kTileMin = 10

// q4kTileWidth is the most activation rows gemmQ4KTiles gives one tile
// kernel call (at most q4kTileCols). 6 fit the registers but measured
// slower than 4 and 5, which measured alike (docs/kernels-kquant.md).
var q4kTileWidth = 5

// q4kTileBufs holds gemmQ4KTiles' unpacked tiles.
var q4kTileBufs = sync.Pool{New: func() any { return new([kTileChunk * q4kTileBytes]byte) }}

// q4kPairBufs holds gemmQ4KTiles' bsum pairs, grown as needed.
var q4kPairBufs = sync.Pool{New: func() any { return new([]int16) }}

// gemmKAVX2 is gemmKGo (for Q4_K or Q6_K weights) on the AVX2 kernels.
// The activations must be quantizeQ8_K's: Q6_K's kernels take the -32
// offset off through the bsums.
func gemmKAVX2(t Type, w []byte, rb, lo, hi int, a []byte, arb, n int, y []float32, ys int) {
	ti, nb := gemmKShape(t, w, rb, lo, hi, a, arb, n, y, ys)
	if nb == 0 {
		return
	}
	kern := &gemmKKernels[ti]
	if n == 1 {
		// Decode: kDecRows streams of rows far apart (the chunk in
		// kDecRows parts), which the memory serves faster than one.
		q := (hi - lo) / kDecRows
		f := kern[kDecRows][1]
		for r := lo; r < lo+q; r++ {
			f(&w[r*rb], q*rb, &a[0], arb, nb, &y[r], q)
		}
		f = kern[1][1]
		for r := lo + kDecRows*q; r < hi; r++ {
			f(&w[r*rb], rb, &a[0], arb, nb, &y[r], ys)
		}
		return
	}
	if t == Q4_K && n >= q4kTileMin && hi-lo >= 8 {
		tiled := lo + (hi-lo)/8*8
		gemmQ4KTiles(w, rb, lo, tiled, a, arb, n, nb, y, ys)
		lo = tiled
	}
	for r0 := lo; r0 < hi; r0 += kTileRows {
		r1 := min(r0+kTileRows, hi)
		for c0 := 0; c0 < n; c0 += kActs {
			f := kern[1][min(kActs, n-c0)]
			for r := r0; r < r1; r++ {
				f(&w[r*rb], rb, &a[c0*arb], arb, nb, &y[c0*ys+r], ys)
			}
		}
	}
}

// gemmQ4KTiles is gemmKAVX2 for Q4_K rows [lo, hi) (a multiple of 8 rows)
// and n activation rows, on the tile kernels: each tile of 8 rows is
// unpacked kTileChunk super-blocks at a time and every activation row is
// applied to it, at most q4kTileWidth per call. The kernels add into y
// super-block by super-block in the twin's order, so y starts cleared and
// the chunks change no bit.
func gemmQ4KTiles(w []byte, rb, lo, hi int, a []byte, arb, n, nb int, y []float32, ys int) {
	// bp[(b*n+i)*8+j] = bsum[2j]+bsum[2j+1] of activation row i, super-block b
	// (each bsum is at most 16·128 in magnitude: the pair fits int16).
	pb := q4kPairBufs.Get().(*[]int16)
	defer q4kPairBufs.Put(pb)
	if cap(*pb) < nb*n*8 {
		*pb = make([]int16, nb*n*8)
	}
	bp := (*pb)[:nb*n*8]
	for i := 0; i < n; i++ {
		for b := 0; b < nb; b++ {
			bs := a[i*arb+b*q8_KBytes+4+qkK:]
			bs = bs[:32]
			o := bp[(b*n+i)*8:]
			o = o[:8]
			for j := range o {
				o[j] = int16(le16(bs[4*j:])) + int16(le16(bs[4*j+2:]))
			}
		}
	}
	buf := q4kTileBufs.Get().(*[kTileChunk * q4kTileBytes]byte)
	defer q4kTileBufs.Put(buf)
	calls := (n + q4kTileWidth - 1) / q4kTileWidth
	for r0 := lo; r0 < hi; r0 += 8 {
		for i := 0; i < n; i++ {
			clear(y[i*ys+r0 : i*ys+r0+8])
		}
		for b0 := 0; b0 < nb; b0 += kTileChunk {
			cnt := min(kTileChunk, nb-b0)
			pf := cnt * q4_KBytes // the next chunk, or the next tile's first
			if b0+cnt == nb {
				pf = 8*rb - b0*q4_KBytes
			}
			packQ4KTile(&buf[0], &w[r0*rb+b0*q4_KBytes], rb, cnt, pf)
			// Balanced widths: each call reads the tile once.
			for c0, j := 0, 0; c0 < n; j++ {
				cc := n/calls + b2i(j < n%calls)
				q4kTileKernels[cc-1](&buf[0], cnt, &a[c0*arb+b0*q8_KBytes], arb,
					&bp[(b0*n+c0)*8], n*16, &y[c0*ys+r0], ys*4)
				c0 += cc
			}
		}
	}
}

// quantizeQ8_K_amd64 is quantizeQ8_K, byte for byte. The assembly hands
// back blocks with an infinite largest magnitude or an overflowing scale,
// which the Go code encodes.
func quantizeQ8_K_amd64(x []float32, dst []byte) {
	nb := len(x) / qkK
	if nb == 0 {
		return
	}
	_ = dst[nb*q8_KBytes-1] // the assembly writes nb whole blocks
	for b := 0; b < nb; {
		b += quantizeQ8_KAVX2(&x[b*qkK], &dst[b*q8_KBytes], nb-b)
		if b < nb {
			quantizeQ8_K(x[b*qkK:(b+1)*qkK], dst[b*q8_KBytes:(b+1)*q8_KBytes])
			b++
		}
	}
}

// Implemented in gemmk_q8k_amd64.s: nb > 0 blocks of 256 floats at x, room
// for nb Q8_K blocks at dst.
//
//go:noescape
func quantizeQ8_KAVX2(x *float32, dst *byte, nb int) int
