//go:build amd64 && !noasm && gc

package quant

// q4kTile2Width is the most activation rows gemmQ4KPanelsVNNI gives one
// gemmQ4KTile2V kernel call (at most q4kTile2Cols); a variable so that
// the tests can run every width.
var q4kTile2Width = 8

// q4kPairKernel is a one-row Q4_K kernel on two panels far apart
// (gemmQ4KPanelsDecode's pair). The AVX-512 one comes in two variants
// (quant/_gen/q4k512, decodeVariants): without a prefetch (Zen 4 measured
// it slower with one) and with a PREFETCHT0 four super-blocks ahead (1B
// Q4_K decode ~1.15x faster on Zen 5); tuned.q4kDecode is this CPU's.
type q4kPairKernel = func(t *byte, toff int, nb int, a *byte, bp *int16, y *float32, yoff int)

// gemmQ4KPanelsVNNI is gemmQ4KPanelsAVX2 with the AVX-512 VNNI tile
// kernels (q4k512_amd64.s, quant/_gen/q4k512) for batches: rows
// [lo, hi) (multiples of q4kPanelRows) of a Q4_K matrix repacked into
// panels of nb super-blocks a row, decode (n = 1) included
// (gemmQ4KPanel2V). Every output is dotQ4_KQ8_KGo's bits, as on the AVX2 path.
func gemmQ4KPanelsVNNI(panels []byte, nb, lo, hi int, a []byte, arb, n int, y []float32, ys int) {
	if nb == 0 || n == 0 || lo >= hi {
		return
	}
	if lo%q4kPanelRows != 0 || hi%q4kPanelRows != 0 || len(panels) < hi/q4kPanelRows*nb*q4kTileBytes ||
		arb < nb*q8_KBytes || len(a) < (n-1)*arb+nb*q8_KBytes || ys < hi || len(y) < (n-1)*ys+hi {
		panic("quant: gemmQ4KPanelsVNNI: bad shape")
	}
	if n == 1 && nb <= q4kDecMaxBlocks {
		gemmQ4KPanelsDecode(tuned.q4kDecode, panels, nb, lo, hi, a, y)
		return
	}
	pairs := lo + (hi-lo)/(2*q4kPanelRows)*(2*q4kPanelRows)
	if pairs > lo {
		gemmQ4KTiles2(panels, lo, pairs, a, arb, n, nb, y, ys)
	}
	if pairs < hi { // an odd last panel
		gemmQ4KTiles(nil, 0, panels, pairs, hi, a, arb, n, nb, y, ys)
	}
}

// gemmQ4KTiles2 is gemmQ4KTiles on panels for rows [lo, hi) (a multiple of
// two panels) on the VNNI kernels, two panels a call: every activation row
// is applied to a chunk of kTileChunk super-blocks of the two panels (all
// of them when one call takes every activation row), at most q4kTile2Width
// a call, before the next chunk. The kernels add into y (the sums) and a
// buffer (the mins' smin) super-block by super-block in the twin's order,
// so both start cleared, the chunks change no bit, and the calls on the
// last chunk store sum - smin into y.
func gemmQ4KTiles2(panels []byte, lo, hi int, a []byte, arb, n, nb int, y []float32, ys int) {
	pb := q4kPairBufs.Get().(*[]int16)
	defer q4kPairBufs.Put(pb)
	if cap(*pb) < nb*n*8 {
		*pb = make([]int16, nb*n*8)
	}
	bp := (*pb)[:nb*n*8]
	q4kBsumPairs(bp, a, arb, n, nb)
	mb := q4kMinBuf(n * 2 * q4kPanelRows)
	defer q4kMinBufs.Put(mb)
	m := *mb
	calls := (n + q4kTile2Width - 1) / q4kTile2Width
	chunk := kTileChunk
	if calls == 1 {
		chunk = nb // one call reads each panel once: no reuse to keep in L1
	}
	pbytes := nb * q4kTileBytes // one panel
	for r0 := lo; r0 < hi; r0 += 2 * q4kPanelRows {
		for i := 0; i < n; i++ {
			clear(y[i*ys+r0 : i*ys+r0+2*q4kPanelRows])
		}
		clear(m)
		for b0 := 0; b0 < nb; b0 += chunk {
			cnt := min(chunk, nb-b0)
			t := &panels[(r0/q4kPanelRows*nb+b0)*q4kTileBytes]
			// Balanced widths: each call reads the chunk once.
			for c0, j := 0, 0; c0 < n; j++ {
				cc := n/calls + b2i(j < n%calls)
				q4kTile2Kernels[cc-1](t, pbytes, cnt, &a[c0*arb+b0*q8_KBytes], arb,
					&bp[(b0*n+c0)*8], n*16, &y[c0*ys+r0], ys*4, &m[c0*2*q4kPanelRows], b2i(b0+cnt == nb))
				c0 += cc
			}
		}
	}
}
