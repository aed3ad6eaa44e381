//go:build amd64 && !noasm && gc

package quant

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/cpu"
)

// haveVNNI reports the features of the gemm kernels in gemm_amd64.s
// (x/sys/cpu reports AVX-512 only when the OS saves the ZMM registers).
var haveVNNI = cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VL &&
	cpu.X86.HasAVX512VNNI && cpu.X86.HasF16C

// haveVBMI reports the byte permutes (VPERMT2B) of the decode kernels.
var haveVBMI = haveVNNI && cpu.X86.HasAVX512VBMI

// gemmKernels[t][f][c-1] computes tiles of c activation rows; t is 0 for
// Q4_0, 1 for Q8_0; f is 0 for partial tiles (gathers, masked rows) and 1 for
// whole tiles of gemmRows rows (loads and an in-register transpose).
var gemmKernels = [2][2][16]func(w *byte, nb int, a *byte, as int, side *uint32, ss int, y *float32, ys int, rb int, mask uint64){
	{
		{gemmQ4_0VNNI1, gemmQ4_0VNNI2, gemmQ4_0VNNI3, gemmQ4_0VNNI4, gemmQ4_0VNNI5, gemmQ4_0VNNI6, gemmQ4_0VNNI7, gemmQ4_0VNNI8,
			gemmQ4_0VNNI9, gemmQ4_0VNNI10, gemmQ4_0VNNI11, gemmQ4_0VNNI12, gemmQ4_0VNNI13, gemmQ4_0VNNI14, gemmQ4_0VNNI15, gemmQ4_0VNNI16},
		{gemmQ4_0Full1, gemmQ4_0Full2, gemmQ4_0Full3, gemmQ4_0Full4, gemmQ4_0Full5, gemmQ4_0Full6, gemmQ4_0Full7, gemmQ4_0Full8,
			gemmQ4_0Full9, gemmQ4_0Full10, gemmQ4_0Full11, gemmQ4_0Full12, gemmQ4_0Full13, gemmQ4_0Full14, gemmQ4_0Full15, gemmQ4_0Full16},
	},
	{
		{gemmQ8_0VNNI1, gemmQ8_0VNNI2, gemmQ8_0VNNI3, gemmQ8_0VNNI4, gemmQ8_0VNNI5, gemmQ8_0VNNI6, gemmQ8_0VNNI7, gemmQ8_0VNNI8,
			gemmQ8_0VNNI9, gemmQ8_0VNNI10, gemmQ8_0VNNI11, gemmQ8_0VNNI12, gemmQ8_0VNNI13, gemmQ8_0VNNI14, gemmQ8_0VNNI15, gemmQ8_0VNNI16},
		{gemmQ8_0Full1, gemmQ8_0Full2, gemmQ8_0Full3, gemmQ8_0Full4, gemmQ8_0Full5, gemmQ8_0Full6, gemmQ8_0Full7, gemmQ8_0Full8,
			gemmQ8_0Full9, gemmQ8_0Full10, gemmQ8_0Full11, gemmQ8_0Full12, gemmQ8_0Full13, gemmQ8_0Full14, gemmQ8_0Full15, gemmQ8_0Full16},
	},
}

// decKernels[t] computes whole tiles of gemmRows rows for a single
// activation row (gemm<t>Dec in gemm_amd64.s; t as in gemmKernels), or is
// nil without VBMI.
var decKernels = func() (ks [2]func(w *byte, ng int, a *byte, side *uint32, y *float32, rb int)) {
	if haveVBMI {
		ks = [2]func(w *byte, ng int, a *byte, side *uint32, y *float32, rb int){gemmQ4_0Dec, gemmQ8_0Dec}
	}
	return ks
}()

// decodeWithDec[t] says whether gemmVNNI sends one-row whole tiles of type t
// to decKernels[t] rather than to the whole-tile gemm kernel. Since the full
// kernels prefetch the next tile and insert scales word by word, they beat
// the Q4_0 decode kernel (BenchmarkDecKernels, one thread on an AVX-512 AMD
// EPYC: 26.6 vs 21.8 GB/s in L2, 20.2 vs 17.4 GB/s from DRAM; whole 1B-shape
// decode on two threads 8-13% faster), while the Q8_0 decode kernel still
// reads DRAM faster (25.8-26.2 vs 24.5-24.8 GB/s). gemmDec keeps both
// kernels tested so the choice can be revisited on other CPUs.
var decodeWithDec = [2]bool{false, true}

// decGroups is how many groups of four blocks a decode kernel call takes
// (its frame holds 512 bytes of scratch a group; see quant/_gen/gemm).
const decGroups = 32

// gemmDec is gemmGo for a whole tile of gemmRows rows and one activation row
// (a.n == 1, a.nb a multiple of 4), through decKernels[ti].
func gemmDec(ti int, w []byte, rb, r0 int, a *gemmActs, y []float32) {
	bw := 18
	if ti == 1 {
		bw = 34
	}
	// The assembly reads unchecked: check the last byte of each operand.
	_ = w[(r0+gemmRows-1)*rb+a.nb*bw-1]
	_ = a.q[a.nb*qk8_0-1]
	_ = a.side[2*a.nb-1]
	y = y[:gemmRows]
	clear(y)
	ng := a.nb / 4
	for g := 0; g < ng; g += decGroups {
		decKernels[ti](&w[r0*rb+4*g*bw], min(decGroups, ng-g), &a.q[4*g*qk8_0], &a.side[8*g], &y[0], rb)
	}
}

// gemmVNNI is gemmGo for tiles of at most gemmRows weight rows and any
// number of activation rows (taken gemmCols at a time).
func gemmVNNI(t Type, w []byte, rb, r0, rows int, a *gemmActs, i0, c int, y []float32, ys int) {
	if rows <= 0 || c <= 0 || a.nb == 0 {
		return
	}
	if rows > gemmRows || int64(rb)*gemmRows > 1<<31-1 || (t != Q4_0 && t != Q8_0) {
		panic(fmt.Sprintf("quant: gemm tile of %d rows of %d bytes of %v", rows, rb, t))
	}
	bw := t.BlockBytes()
	// The assembly reads unchecked: check the last byte of each operand.
	_ = w[(r0+rows-1)*rb+a.nb*bw-1]
	_ = a.q[((a.nb-1)*a.n+i0+c)*qk8_0-1]
	_ = a.side[((a.nb-1)*a.n+i0+c)*2-1]
	_ = y[(c-1)*ys+rows-1]
	mask := uint64(1)<<rows - 1
	ti, fi := 0, 0
	if t == Q8_0 {
		ti = 1
	}
	if rows == gemmRows {
		fi = 1
	}
	if decodeWithDec[ti] && decKernels[ti] != nil && a.n == 1 && rows == gemmRows && a.nb%4 == 0 {
		gemmDec(ti, w, rb, r0, a, y)
		return
	}
	fns := &gemmKernels[ti][fi]
	for c0 := 0; c0 < c; c0 += gemmCols {
		cc := min(c-c0, gemmCols)
		e := i0 + c0
		fns[cc-1](&w[r0*rb], a.nb, &a.q[e*qk8_0], a.n*qk8_0, &a.side[2*e], a.n*8,
			&y[c0*ys], ys*int(unsafe.Sizeof(float32(0))), rb, mask)
	}
}

// tileKernels[t][c-1] computes a tile repacked into a row panel by c
// activation rows (t as in gemmKernels): one prefetch variant.
type tileKernels = [2][16]func(w *byte, nb int, a *byte, as int, side *uint32, ss int, y *float32, ys int)

// The tile kernels come in two variants that differ only in their prefetch
// (quant/_gen/gemm, panelTileVariants): 2560 bytes ahead into L2, chosen on
// Zen 4, and 7680 bytes ahead into L1, which Zen 5 runs batches faster with
// (1B Q4_0 batch 4 ~8%, batch 16 ~5%).
var (
	tilesPrefetchL2 = tileKernels{
		{gemmQ4_0Panel1, gemmQ4_0Panel2, gemmQ4_0Panel3, gemmQ4_0Panel4, gemmQ4_0Panel5, gemmQ4_0Panel6, gemmQ4_0Panel7, gemmQ4_0Panel8, gemmQ4_0Panel9, gemmQ4_0Panel10, gemmQ4_0Panel11, gemmQ4_0Panel12, gemmQ4_0Panel13, gemmQ4_0Panel14, gemmQ4_0Panel15, gemmQ4_0Panel16},
		{gemmQ8_0Panel1, gemmQ8_0Panel2, gemmQ8_0Panel3, gemmQ8_0Panel4, gemmQ8_0Panel5, gemmQ8_0Panel6, gemmQ8_0Panel7, gemmQ8_0Panel8, gemmQ8_0Panel9, gemmQ8_0Panel10, gemmQ8_0Panel11, gemmQ8_0Panel12, gemmQ8_0Panel13, gemmQ8_0Panel14, gemmQ8_0Panel15, gemmQ8_0Panel16},
	}
	tilesPrefetchL1 = tileKernels{
		{gemmQ4_0Panel1L1, gemmQ4_0Panel2L1, gemmQ4_0Panel3L1, gemmQ4_0Panel4L1, gemmQ4_0Panel5L1, gemmQ4_0Panel6L1, gemmQ4_0Panel7L1, gemmQ4_0Panel8L1, gemmQ4_0Panel9L1, gemmQ4_0Panel10L1, gemmQ4_0Panel11L1, gemmQ4_0Panel12L1, gemmQ4_0Panel13L1, gemmQ4_0Panel14L1, gemmQ4_0Panel15L1, gemmQ4_0Panel16L1},
		{gemmQ8_0Panel1L1, gemmQ8_0Panel2L1, gemmQ8_0Panel3L1, gemmQ8_0Panel4L1, gemmQ8_0Panel5L1, gemmQ8_0Panel6L1, gemmQ8_0Panel7L1, gemmQ8_0Panel8L1, gemmQ8_0Panel9L1, gemmQ8_0Panel10L1, gemmQ8_0Panel11L1, gemmQ8_0Panel12L1, gemmQ8_0Panel13L1, gemmQ8_0Panel14L1, gemmQ8_0Panel15L1, gemmQ8_0Panel16L1},
	}
)

// panelStreams is how many tiles far apart gemm<t>PanelStreams reads at
// once (quant/_gen/gemm).
const panelStreams = 8

// streamsKernels is one variant of the streams kernels, for Q4_0 and Q8_0.
type streamsKernels = [2]func(w *byte, ws int, nb int, a *byte, side *uint32, y *float32, yst int)

// The streams kernels come in two variants that differ only in their
// prefetch instruction (quant/_gen/gemm, panelStreamsVariants): into L2,
// which Zen 4 needs (27.7 against 20.0 GB/s), and into L1, which Zen 5
// reads faster with (1B Q4_0 decode ~5% faster, every alternated pair).
var (
	streamsPrefetchL2 = streamsKernels{gemmQ4_0PanelStreams, gemmQ8_0PanelStreams}
	streamsPrefetchL1 = streamsKernels{gemmQ4_0PanelStreamsL1, gemmQ8_0PanelStreamsL1}
)

// prefetchVariant is the kernels of one prefetch choice, for the three
// kernel families whose best prefetch went opposite ways on Zen 4 and Zen 5:
// the one-row streams kernels (streams[t], panelStreams tiles far apart;
// t as in gemmKernels), the tile kernels and the Q4_K decode kernel
// (q4k512_amd64.go). Every variant computes the same bits.
type prefetchVariant struct {
	name      string
	streams   streamsKernels
	tiles     tileKernels
	q4kDecode q4kPairKernel
}

// prefetchVariants: [0] into L2 or not at all, measured best on Zen 4 and
// kept where nothing was measured; [1] into L1, farther ahead, for Zen 5.
var prefetchVariants = [2]prefetchVariant{
	{"L2", streamsPrefetchL2, tilesPrefetchL2, gemmQ4KPanel2V},
	{"L1", streamsPrefetchL1, tilesPrefetchL1, gemmQ4KPanel2VL1},
}

// prefetchFor picks the variant for a CPU.
func prefetchFor(c x86CPU) *prefetchVariant {
	if c.zen5() {
		return &prefetchVariants[1]
	}
	return &prefetchVariants[0]
}

// tuned is the variant this CPU runs (the tests and benchmarks swap it).
var tuned = prefetchFor(thisX86)

// gemmPanelVNNI is gemmGo for rows [lo, hi) (multiples of panelRows) of a
// matrix repacked into panels, rows of rb bytes, and the c activation rows
// of a, which the tile kernels take gemmCols at a time. With one
// activation row the range is cut into panelStreams parts read together.
func gemmPanelVNNI(t Type, panels []byte, rb, lo, hi int, a *gemmActs, c int, y []float32, ys int) {
	if c <= 0 || a.nb == 0 || hi <= lo {
		return
	}
	if lo%panelRows != 0 || hi%panelRows != 0 || (t != Q4_0 && t != Q8_0) || a.nb*t.BlockBytes() != rb {
		panic(fmt.Sprintf("quant: panel rows [%d, %d) of %v, %d bytes a row, %d blocks", lo, hi, t, rb, a.nb))
	}
	ti := 0
	if t == Q8_0 {
		ti = 1
	}
	// The assembly reads unchecked: check the last byte of each operand.
	_ = panels[hi*rb-1]
	_ = a.q[a.nb*a.n*qk8_0-1]
	_ = a.side[a.nb*a.n*2-1]
	_ = y[(c-1)*ys+hi-1]
	r0 := lo
	if c == 1 && a.n == 1 {
		per := (hi - lo) / panelRows / panelStreams * panelRows // rows of each stream
		for r := lo; r < lo+per; r += panelRows {
			tuned.streams[ti](&panels[r*rb], per*rb, a.nb, &a.q[0], &a.side[0], &y[r], per*4)
		}
		r0 = lo + panelStreams*per
	}
	fns := &tuned.tiles[ti]
	for ; r0 < hi; r0 += panelRows {
		for c0 := 0; c0 < c; c0 += gemmCols {
			cc := min(c-c0, gemmCols)
			fns[cc-1](&panels[r0*rb], a.nb, &a.q[c0*qk8_0], a.n*qk8_0, &a.side[2*c0], a.n*8,
				&y[c0*ys+r0], ys*int(unsafe.Sizeof(float32(0))))
		}
	}
}
