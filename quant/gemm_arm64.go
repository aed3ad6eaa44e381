//go:build arm64 && !noasm && gc

package quant

import (
	"fmt"
	"unsafe"
)

// The arm64 gemm kernels (q8_0_arm64.s, written by quant/_gen/arm64):
// gemmGo's bits from the row panels of panel.go, the same layout as on
// amd64 (a panel group is 4 values of each row, one 32-bit lane, exactly
// what SDOT by element multiplies; the SMMLA kernels zip two groups into
// the 8 values of a row pair in registers), so panels, and a panel cache
// file, are the same on both. One call computes one half panel (8 rows)
// by 1, 2 or 4 activation rows.

// panelKernel is the signature of the half-panel kernels.
type panelKernel func(sc, w *byte, bs, nb int, aq *byte, as int, side *uint32, ss int, y *float32, ys int)

// sdotKernels[t][c] and mmlaKernels[t][c] compute c activation rows
// (c = 1, 2 or 4; t as typeIndexArm64); the SMMLA table uses SDOT for one.
var (
	sdotKernels = [2][5]panelKernel{
		{1: gemmQ4_0SDOT1, 2: gemmQ4_0SDOT2, 4: gemmQ4_0SDOT4},
		{1: gemmQ8_0SDOT1, 2: gemmQ8_0SDOT2, 4: gemmQ8_0SDOT4},
	}
	mmlaKernels = [2][5]panelKernel{
		{1: gemmQ4_0SDOT1, 2: gemmQ4_0MMLA2, 4: gemmQ4_0MMLA4},
		{1: gemmQ8_0SDOT1, 2: gemmQ8_0MMLA2, 4: gemmQ8_0MMLA4},
	}
)

func typeIndexArm64(t Type) int {
	if t == Q8_0 {
		return 1
	}
	return 0
}

// armTile adds gemmGo's sums over blocks [b0, b0+nb) of one panel-layout
// tile of 16 rows (its block 0 at p, blocks bs bytes apart) for activation
// rows [i0, i0+c) into y[(i-i0)*ys + r], r < 16.
func armTile(ks *[5]panelKernel, p []byte, bs, b0, nb int, a *gemmActs, i0, c int, y []float32, ys int) {
	_ = p[(nb-1)*bs+bs-1]
	_ = y[(c-1)*ys+panelRows-1]
	for c0 := 0; c0 < c; {
		cc := 4
		switch {
		case c-c0 >= 4:
		case c-c0 >= 2:
			cc = 2
		default:
			cc = 1
		}
		e := b0*a.n + i0 + c0
		for h := 0; h < 2; h++ {
			ks[cc](&p[16*h], &p[32+32*h], bs, nb, &a.q[e*qk8_0], a.n*qk8_0, &a.side[2*e], a.n*8,
				&y[c0*ys+8*h], ys*int(unsafe.Sizeof(float32(0))))
		}
		c0 += cc
	}
}

func gemmPanelSDOT(t Type, panels []byte, rb, lo, hi int, a *gemmActs, c int, y []float32, ys int) {
	gemmPanelArm64(&sdotKernels, t, panels, rb, lo, hi, a, c, y, ys)
}

func gemmPanelMMLA(t Type, panels []byte, rb, lo, hi int, a *gemmActs, c int, y []float32, ys int) {
	gemmPanelArm64(&mmlaKernels, t, panels, rb, lo, hi, a, c, y, ys)
}

// gemmPanelArm64 is gemmGo for rows [lo, hi) (multiples of panelRows) of
// a matrix repacked into panels, rows of rb bytes, and the c activation
// rows of a.
func gemmPanelArm64(ks *[2][5]panelKernel, t Type, panels []byte, rb, lo, hi int, a *gemmActs, c int, y []float32, ys int) {
	if c <= 0 || a.nb == 0 || hi <= lo {
		return
	}
	if lo%panelRows != 0 || hi%panelRows != 0 || (t != Q4_0 && t != Q8_0) || a.nb*t.BlockBytes() != rb || c > a.n {
		panic(fmt.Sprintf("quant: panel rows [%d, %d) of %v, %d bytes a row, %d blocks, %d of %d activation rows", lo, hi, t, rb, a.nb, c, a.n))
	}
	bs := panelRows * t.BlockBytes()
	// The assembly reads unchecked: check the last byte of each operand.
	_ = panels[hi*rb-1]
	_ = a.q[a.nb*a.n*qk8_0-1]
	_ = a.side[a.nb*a.n*2-1]
	_ = y[(c-1)*ys+hi-1]
	for i := 0; i < c; i++ {
		clear(y[i*ys+lo : i*ys+hi])
	}
	kt := &ks[typeIndexArm64(t)]
	for r0 := lo; r0 < hi; r0 += panelRows {
		armTile(kt, panels[r0*rb:], bs, 0, a.nb, a, 0, c, y[r0:], ys)
	}
}

func gemmSDOT(t Type, w []byte, rb, r0, rows int, a *gemmActs, i0, c int, y []float32, ys int) {
	gemmArm64(&sdotKernels, t, w, rb, r0, rows, a, i0, c, y, ys)
}

func gemmMMLA(t Type, w []byte, rb, r0, rows int, a *gemmActs, i0, c int, y []float32, ys int) {
	gemmArm64(&mmlaKernels, t, w, rb, r0, rows, a, i0, c, y, ys)
}

// gemmArm64 is gemmGo on the file's layout (gemmChunked) through the panel
// kernels ks.
func gemmArm64(ks *[2][5]panelKernel, t Type, w []byte, rb, r0, rows int, a *gemmActs, i0, c int, y []float32, ys int) {
	kt, bw := &ks[typeIndexArm64(t)], t.BlockBytes()
	gemmChunked(t, w, rb, r0, rows, a, i0, c, y, ys,
		func(tw []byte, b0, nb int, buf []byte) { packChunk(t, tw, rb, rows, b0, nb, buf) },
		func(buf []byte, b0, nb, i0, cc int, dst []float32, dys int) {
			armTile(kt, buf, panelRows*bw, b0, nb, a, i0, cc, dst, dys)
		})
}

// Implemented in q8_0_arm64.s: 8 rows (a half panel) by 1, 2 or 4
// activation rows, nb > 0 blocks, adding into y.

//go:noescape
func gemmQ4_0SDOT1(sc, w *byte, bs, nb int, aq *byte, as int, side *uint32, ss int, y *float32, ys int)

//go:noescape
func gemmQ4_0SDOT2(sc, w *byte, bs, nb int, aq *byte, as int, side *uint32, ss int, y *float32, ys int)

//go:noescape
func gemmQ4_0SDOT4(sc, w *byte, bs, nb int, aq *byte, as int, side *uint32, ss int, y *float32, ys int)

//go:noescape
func gemmQ4_0MMLA2(sc, w *byte, bs, nb int, aq *byte, as int, side *uint32, ss int, y *float32, ys int)

//go:noescape
func gemmQ4_0MMLA4(sc, w *byte, bs, nb int, aq *byte, as int, side *uint32, ss int, y *float32, ys int)

//go:noescape
func gemmQ8_0SDOT1(sc, w *byte, bs, nb int, aq *byte, as int, side *uint32, ss int, y *float32, ys int)

//go:noescape
func gemmQ8_0SDOT2(sc, w *byte, bs, nb int, aq *byte, as int, side *uint32, ss int, y *float32, ys int)

//go:noescape
func gemmQ8_0SDOT4(sc, w *byte, bs, nb int, aq *byte, as int, side *uint32, ss int, y *float32, ys int)

//go:noescape
func gemmQ8_0MMLA2(sc, w *byte, bs, nb int, aq *byte, as int, side *uint32, ss int, y *float32, ys int)

//go:noescape
func gemmQ8_0MMLA4(sc, w *byte, bs, nb int, aq *byte, as int, side *uint32, ss int, y *float32, ys int)
