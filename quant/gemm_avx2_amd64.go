//go:build amd64 && !noasm && gc

package quant

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/cpu"
)

// The YMM gemm kernels (gemm_avx2_amd64.s and gemm_avxvnni_amd64.s, written
// by quant/_gen/gemmavx2): gemmGo's bits on CPUs without AVX-512, from the
// same row panels as the AVX-512 kernels, one half panel (8 rows) by up to
// avx2TileCols activation rows a call. Two families share this code: avx2
// (VPMADDUBSW chains, any AVX2 CPU) and avxvnni (VEX VPDPBUSD: Intel Alder
// Lake and later, AMD Zen 4 and later).

// ymmFamily names a family of YMM kernels.
type ymmFamily int

const (
	famAVX2 ymmFamily = iota
	famAVXVNNI
)

// haveAVXVNNI reports the VEX-encoded VPDPBUSD (the avxvnni kernels).
var haveAVXVNNI = haveAVX2FMA && cpu.X86.HasAVXVNNI

// half calls f's half-panel kernel for c activation rows (avx2Half and
// avxvnniHalf are switches, so that no pointer argument escapes).
func (f ymmFamily) half(ti, c int, ws, wg *byte, bs, nb int, a *byte, as int, side *uint32, ss int, y *float32, ys int, pf int) {
	if f == famAVXVNNI {
		avxvnniHalf(ti, c, ws, wg, bs, nb, a, as, side, ss, y, ys, pf)
		return
	}
	avx2Half(ti, c, ws, wg, bs, nb, a, as, side, ss, y, ys, pf)
}

// streams returns f's one-row kernel reading s panels at once.
func (f ymmFamily) streams(ti, s int) func(w *byte, ws, nb int, a *byte, side *uint32, y *float32, yst int, pf int) {
	if f == famAVXVNNI {
		return avxvnniStreamKernels[ti][s-1]
	}
	return avx2StreamKernels[ti][s-1]
}

// avx2Streams is how many panels far apart the one-row kernels (of both
// families) read at once, and avx2Prefetch how many bytes ahead in each
// they prefetch (BenchmarkPanelStreams; docs/kernels-avx2.md).
var (
	avx2Streams  = 4
	avx2Prefetch = 1024
)

// avx2TilePrefetchBlocks is how many blocks ahead the batch kernels on
// panels prefetch (avx2Tile). Eight blocks (2.3 KB of Q4_0, 4.4 KB of
// Q8_0) beat a whole panel ahead, which the kernels prefetched until
// 2026-12-03: a panel ahead, the lines arrived in L1 a panel before their
// use and were evicted by the panel being computed, so the first half of
// the next panel missed L1 again. On Zen 4 (avx2 set) 8B Q4_0 passes of
// 2-5 rows ran 1.03-1.14x faster, 1B Q8_0 ones of 2-8 rows 1.05-1.10x (at 4 KB; alternated in
// one process; docs/kernels-avx2.md).
const avx2TilePrefetchBlocks = 8

// typeIndex is t's index in the kernel tables (Q4_0 or Q8_0).
func typeIndex(t Type) int {
	if t == Q8_0 {
		return 1
	}
	return 0
}

// avx2Tile adds gemmGo's sums over blocks [b0, b0+nb) of one panel-layout
// tile (its block 0 at p, blocks bs bytes apart) and activation rows
// [i0, i0+c) into y[(i-i0)*ys + r], r < 16, with f's kernels. The first
// kernel call on each half of the tile prefetches ahead of each block, the
// first half pf bytes and the second 2*pf (0: nothing); prefetches never
// fault, so pf may point past the end of p.
func avx2Tile(f ymmFamily, ti int, p []byte, bs, b0, nb int, a *gemmActs, i0, c int, y []float32, ys int, pf int) {
	_ = p[(nb-1)*bs+bs-1]
	_ = y[(c-1)*ys+panelRows-1]
	// As few calls as the widest kernel allows, of even widths (16 rows
	// go 6+5+5 rather than 6+6+4): each call unpacks the weights once.
	calls := (c + avx2TileCols - 1) / avx2TileCols
	for c0, j := 0, 0; c0 < c; c0, j = c0+c/calls+b2i(j < c%calls), j+1 {
		cc := c/calls + b2i(j < c%calls)
		e := b0*a.n + i0 + c0
		for h := 0; h < 2; h++ {
			hp := pf // the first half prefetches pf ahead, the second twice that
			if h == 1 {
				hp = 2 * pf
			}
			f.half(ti, cc, &p[16*h], &p[32+32*h], bs, nb, &a.q[e*qk8_0], a.n*qk8_0, &a.side[2*e], a.n*8,
				&y[c0*ys+8*h], ys*int(unsafe.Sizeof(float32(0))), hp)
		}
		pf = 0
	}
}

// gemmPanelAVX2 and gemmPanelAVXVNNI are gemmGo for rows [lo, hi)
// (multiples of panelRows) of a matrix repacked into panels, rows of rb
// bytes, and the c activation rows of a.
func gemmPanelAVX2(t Type, panels []byte, rb, lo, hi int, a *gemmActs, c int, y []float32, ys int) {
	gemmPanelYMM(famAVX2, t, panels, rb, lo, hi, a, c, y, ys)
}

func gemmPanelAVXVNNI(t Type, panels []byte, rb, lo, hi int, a *gemmActs, c int, y []float32, ys int) {
	gemmPanelYMM(famAVXVNNI, t, panels, rb, lo, hi, a, c, y, ys)
}

// gemmPanelYMM is gemmPanelAVX2 on f's kernels. With one activation row the
// range is cut into avx2Streams parts read together.
func gemmPanelYMM(f ymmFamily, t Type, panels []byte, rb, lo, hi int, a *gemmActs, c int, y []float32, ys int) {
	if c <= 0 || a.nb == 0 || hi <= lo {
		return
	}
	if lo%panelRows != 0 || hi%panelRows != 0 || (t != Q4_0 && t != Q8_0) || a.nb*t.BlockBytes() != rb || c > a.n {
		panic(fmt.Sprintf("quant: panel rows [%d, %d) of %v, %d bytes a row, %d blocks, %d of %d activation rows", lo, hi, t, rb, a.nb, c, a.n))
	}
	ti := typeIndex(t)
	bs := panelRows * t.BlockBytes()
	// The assembly reads unchecked: check the last byte of each operand.
	_ = panels[hi*rb-1]
	_ = a.q[a.nb*a.n*qk8_0-1]
	_ = a.side[a.nb*a.n*2-1]
	_ = y[(c-1)*ys+hi-1]
	for i := 0; i < c; i++ {
		clear(y[i*ys+lo : i*ys+hi])
	}
	r0 := lo
	if c == 1 && a.n == 1 {
		per := (hi - lo) / panelRows / avx2Streams * panelRows // rows of each stream
		for r := lo; r < lo+per; r += panelRows {
			f.streams(ti, avx2Streams)(&panels[r*rb], per*rb, a.nb, &a.q[0], &a.side[0], &y[r], per*4, avx2Prefetch)
		}
		r0 = lo + avx2Streams*per
	}
	for ; r0 < hi; r0 += panelRows {
		avx2Tile(f, ti, panels[r0*rb:], bs, 0, a.nb, a, 0, c, y[r0:], ys, avx2TilePrefetchBlocks*bs)
	}
}

// gemmAVX2 and gemmAVXVNNI are gemmGo on the file's layout (gemmChunked):
// whole tiles are repacked in assembly (packAVX2), partial ones by
// packChunk.
func gemmAVX2(t Type, w []byte, rb, r0, rows int, a *gemmActs, i0, c int, y []float32, ys int) {
	gemmYMM(famAVX2, t, w, rb, r0, rows, a, i0, c, y, ys)
}

func gemmAVXVNNI(t Type, w []byte, rb, r0, rows int, a *gemmActs, i0, c int, y []float32, ys int) {
	gemmYMM(famAVXVNNI, t, w, rb, r0, rows, a, i0, c, y, ys)
}

func gemmYMM(f ymmFamily, t Type, w []byte, rb, r0, rows int, a *gemmActs, i0, c int, y []float32, ys int) {
	ti, bw := typeIndex(t), t.BlockBytes()
	gemmChunked(t, w, rb, r0, rows, a, i0, c, y, ys,
		func(tw []byte, b0, nb int, buf []byte) {
			if rows == gemmRows {
				packAVX2(t, tw, rb, b0, nb, buf)
			} else {
				packChunk(t, tw, rb, rows, b0, nb, buf)
			}
		},
		func(buf []byte, b0, nb, i0, cc int, dst []float32, dys int) {
			avx2Tile(f, ti, buf, panelRows*bw, b0, nb, a, i0, cc, dst, dys, 0)
		})
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// packAVX2 is packChunk for 16 whole rows, in assembly.
func packAVX2(t Type, w []byte, rb, b0, nb int, dst []byte) {
	bw := t.BlockBytes()
	_ = w[(gemmRows-1)*rb+(b0+nb)*bw-1]
	_ = dst[nb*panelRows*bw-1]
	if t == Q4_0 {
		packQ4_0AVX2(&dst[0], &w[b0*bw], rb, nb)
	} else {
		packQ8_0AVX2(&dst[0], &w[b0*bw], rb, nb)
	}
}
