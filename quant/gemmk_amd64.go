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

// q4kMinBufs holds the tile kernels' smin accumulators (dotQ4_KQ8_KGo's
// second float32 sum) between chunks, grown as needed.
var q4kMinBufs = sync.Pool{New: func() any { return new([]float32) }}

// q4kMinBuf returns a buffer of n cleared floats from q4kMinBufs; put it
// back when done.
func q4kMinBuf(n int) *[]float32 {
	mb := q4kMinBufs.Get().(*[]float32)
	if cap(*mb) < n {
		*mb = make([]float32, n)
	}
	*mb = (*mb)[:n]
	clear(*mb)
	return mb
}

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
		gemmQ4KTiles(w, rb, nil, lo, tiled, a, arb, n, nb, y, ys)
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

// gemmQ4KPanelsAVX2 is gemmKAVX2 for rows [lo, hi) (multiples of
// q4kPanelRows) of a Q4_K matrix repacked into panels of nb super-blocks a
// row (panelk.go): the tile kernels run on the panels in place.
func gemmQ4KPanelsAVX2(panels []byte, nb, lo, hi int, a []byte, arb, n int, y []float32, ys int) {
	gemmQ4KPanelsTiles(gemmQ4KPanel2C1, panels, nb, lo, hi, a, arb, n, y, ys)
}

// gemmQ4KPanelsAVXVNNI is gemmQ4KPanelsAVX2 with decode on VEX VPDPBUSD
// (gemmQ4KPanel2VX, for CPUs with AVX-VNNI but not AVX-512); batches stay
// on the AVX2 tiles.
func gemmQ4KPanelsAVXVNNI(panels []byte, nb, lo, hi int, a []byte, arb, n int, y []float32, ys int) {
	gemmQ4KPanelsTiles(gemmQ4KPanel2VX, panels, nb, lo, hi, a, arb, n, y, ys)
}

// gemmQ4KPanelsTiles is gemmQ4KPanelsAVX2 with decode's pair of panels on
// kernel pair (gemmQ4KPanelsDecode).
func gemmQ4KPanelsTiles(pair func(t *byte, toff int, nb int, a *byte, bp *int16, y *float32, yoff int),
	panels []byte, nb, lo, hi int, a []byte, arb, n int, y []float32, ys int) {
	if nb == 0 || n == 0 || lo >= hi {
		return
	}
	if lo%q4kPanelRows != 0 || hi%q4kPanelRows != 0 || len(panels) < hi/q4kPanelRows*nb*q4kTileBytes ||
		arb < nb*q8_KBytes || len(a) < (n-1)*arb+nb*q8_KBytes || ys < hi || len(y) < (n-1)*ys+hi {
		panic("quant: gemmQ4KPanelsAVX2: bad shape")
	}
	if n == 1 && nb <= q4kDecMaxBlocks {
		gemmQ4KPanelsDecode(pair, panels, nb, lo, hi, a, y)
		return
	}
	gemmQ4KTiles(nil, 0, panels, lo, hi, a, arb, n, nb, y, ys)
}

// q4kDecMaxBlocks bounds the super-blocks of a row gemmQ4KPanelsDecode
// takes (its bsum pairs live on the stack); longer rows take the tile path.
const q4kDecMaxBlocks = 64

// gemmQ4KPanelsDecode is gemmQ4KPanelsAVX2 for one activation row: the
// panels in two halves, panel i of each half beside the other's in one
// call of pair (gemmQ4KPanel2C1, gemmQ4KPanel2VX with AVX-VNNI or
// gemmQ4KPanel2V with AVX-512 VNNI: two
// streams far apart, and two panels' work in flight), an odd last panel
// alone.
func gemmQ4KPanelsDecode(pair func(t *byte, toff int, nb int, a *byte, bp *int16, y *float32, yoff int),
	panels []byte, nb, lo, hi int, a []byte, y []float32) {
	var bp [8 * q4kDecMaxBlocks]int16
	q4kBsumPairs(bp[:8*nb], a, 0, 1, nb)
	clear(y[lo:hi])
	np := (hi - lo) / q4kPanelRows
	half := np / 2
	p0 := lo / q4kPanelRows
	for i := 0; i < half; i++ {
		pn := p0 + i
		pair(&panels[pn*nb*q4kTileBytes], half*nb*q4kTileBytes, nb, &a[0], &bp[0],
			&y[pn*q4kPanelRows], half*q4kPanelRows*4)
	}
	if np%2 == 1 {
		pn := p0 + np - 1
		var m [q4kPanelRows]float32
		gemmQ4KTileC1(&panels[pn*nb*q4kTileBytes], nb, &a[0], 0, &bp[0], 16, &y[pn*q4kPanelRows], 0, &m[0], 1)
	}
}

// gemmQ4KTiles is gemmKAVX2 for Q4_K rows [lo, hi) (a multiple of 8 rows)
// and n activation rows, on the tile kernels. With panels nil, each tile of
// 8 rows of w (rb bytes apart) is unpacked kTileChunk super-blocks at a time
// into an L1 buffer; otherwise the tiles are panels' super-blocks in place.
// Every activation row is applied to a chunk, at most q4kTileWidth per
// call, before the next chunk. The kernels add into y (the sums) and a
// buffer (the mins' smin) super-block by super-block in the twin's order,
// so both start cleared, the chunks change no bit, and the calls on the
// last chunk store sum - smin into y.
func gemmQ4KTiles(w []byte, rb int, panels []byte, lo, hi int, a []byte, arb, n, nb int, y []float32, ys int) {
	pb := q4kPairBufs.Get().(*[]int16)
	defer q4kPairBufs.Put(pb)
	if cap(*pb) < nb*n*8 {
		*pb = make([]int16, nb*n*8)
	}
	bp := (*pb)[:nb*n*8]
	q4kBsumPairs(bp, a, arb, n, nb)
	mb := q4kMinBuf(n * 8)
	defer q4kMinBufs.Put(mb)
	m := *mb
	calls := (n + q4kTileWidth - 1) / q4kTileWidth
	chunk := kTileChunk
	var buf *[kTileChunk * q4kTileBytes]byte
	if panels == nil {
		buf = q4kTileBufs.Get().(*[kTileChunk * q4kTileBytes]byte)
		defer q4kTileBufs.Put(buf)
	} else if calls == 1 {
		chunk = nb // one call reads each panel once: no reuse to keep in L1
	}
	for r0 := lo; r0 < hi; r0 += 8 {
		for i := 0; i < n; i++ {
			clear(y[i*ys+r0 : i*ys+r0+8])
		}
		clear(m)
		for b0 := 0; b0 < nb; b0 += chunk {
			cnt := min(chunk, nb-b0)
			var t *byte
			if panels != nil {
				t = &panels[(r0/q4kPanelRows*nb+b0)*q4kTileBytes]
			} else {
				pf := cnt * q4_KBytes // the next chunk, or the next tile's first
				if b0+cnt == nb {
					pf = 8*rb - b0*q4_KBytes
				}
				packQ4KTile(&buf[0], &w[r0*rb+b0*q4_KBytes], rb, cnt, pf)
				t = &buf[0]
			}
			// Balanced widths: each call reads the tile once.
			for c0, j := 0, 0; c0 < n; j++ {
				cc := n/calls + b2i(j < n%calls)
				q4kTileKernels[cc-1](t, cnt, &a[c0*arb+b0*q8_KBytes], arb,
					&bp[(b0*n+c0)*8], n*16, &y[c0*ys+r0], ys*4, &m[c0*8], b2i(b0+cnt == nb))
				c0 += cc
			}
		}
	}
}

// q4kBsumPairs writes into bp what the tile kernels take the mins off
// against: bp[(b*n+i)*8+j] = bsum[2j]+bsum[2j+1] of activation row i (of n,
// arb bytes apart), super-block b (of nb). Each bsum is at most 16·128 in
// magnitude, so the pair fits int16. The batch paths call it once per call
// of theirs, that is per block a thread claims (matmul.go): the assembly
// costs a VPHADDW a super-block where q4kBsumPairsGo took 3% of a 1B Q4_K
// batch-16 pass.
func q4kBsumPairs(bp []int16, a []byte, arb, n, nb int) {
	if n <= 0 || nb <= 0 {
		return
	}
	// The assembly reads and writes unchecked: check the last of each.
	_ = a[(n-1)*arb+nb*q8_KBytes-1]
	_ = bp[nb*n*8-1]
	q4kBsumPairsAVX(&a[0], arb, n, nb, &bp[0])
}

//go:noescape
func q4kBsumPairsAVX(a *byte, arb, n, nb int, bp *int16)

// q4kBsumPairsGo is q4kBsumPairs in Go, the assembly's twin.
func q4kBsumPairsGo(bp []int16, a []byte, arb, n, nb int) {
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
