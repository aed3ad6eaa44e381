//go:build amd64 && !noasm && gc

package quant

import "unsafe"

// Every amd64 set (all need AVX2) takes the AVX2 Q2_K and IQ4_XS dots of
// k2iq_amd64.s and, as gemmK (the set's gemmK keeps its other types), the
// batched row kernels of k2iqg_amd64.s on gemmK35's tiling.
var _ = haveAVX2FMA && archHook(func(s *kernelSet) {
	s.dotQ2_KQ8_K = dotQ2_KQ8_K_amd64
	s.dotIQ4_XSQ8_K = dotIQ4_XSQ8_K_amd64
	prev := s.gemmK
	s.gemmK = func(t Type, w []byte, rb, lo, hi int, a []byte, arb, n int, y []float32, ys int) {
		switch t {
		case Q2_K:
			gemmK2IQ(dotQ2_KQ8_KAVX2, q2kRowAVX2, q2_KBytes, w, rb, lo, hi, a, arb, n, y, ys)
		case IQ4_XS:
			gemmK2IQ(dotIQ4_XSQ8_KAVX2, iq4xsRowK35, iq4_XSBytes, w, rb, lo, hi, a, arb, n, y, ys)
		default:
			prev(t, w, rb, lo, hi, a, arb, n, y, ys)
		}
	}
	s.gemmKTypes |= 1<<Q2_K | 1<<IQ4_XS
})

// gemmK2IQ is gemmKGo for Q2_K or IQ4_XS weights (blocks of bs bytes):
// one activation row takes the row dot kernel dot (unpacking a super-block
// for one row costs more than it saves), more take the batched row kernel
// f on gemmK35's tiling. Both give every output the twin's bits.
func gemmK2IQ(dot func(w, a *byte, nb int) float32, f k35RowFunc, bs int, w []byte, rb, lo, hi int, a []byte, arb, n int, y []float32, ys int) {
	nb := rb / bs
	if n != 1 || nb == 0 || lo >= hi {
		gemmK35(f, nil, bs, w, rb, lo, hi, a, arb, n, y, ys)
		return
	}
	// The assembly reads unchecked: check the last of each.
	_ = w[(hi-1)*rb+nb*bs-1]
	_ = a[nb*q8_KBytes-1]
	y = y[lo:hi]
	for r := range y {
		y[r] = dot(&w[(lo+r)*rb], &a[0], nb)
	}
}

// dotQ2_KQ8_K_amd64 is dotQ2_KQ8_KGo, bit for bit, for any bytes in
// either argument.
func dotQ2_KQ8_K_amd64(w, a []byte) float32 {
	nb := len(w) / q2_KBytes
	if nb == 0 {
		return 0
	}
	_ = a[nb*q8_KBytes-1] // the assembly reads nb whole activation blocks
	return dotQ2_KQ8_KAVX2(&w[0], &a[0], nb)
}

// dotIQ4_XSQ8_K_amd64 is dotIQ4_XSQ8_KGo, bit for bit, for any bytes in
// either argument.
func dotIQ4_XSQ8_K_amd64(w, a []byte) float32 {
	nb := len(w) / iq4_XSBytes
	if nb == 0 {
		return 0
	}
	_ = a[nb*q8_KBytes-1] // the assembly reads nb whole activation blocks
	return dotIQ4_XSQ8_KAVX2(&w[0], &a[0], nb)
}

// iq4xsRowK35 is iq4xsRowAVX2 as a k35RowFunc, for gemmK35's tiling: the
// kernel leaves each row's eight lanes, added here in hsum8's order. c is
// at most 16 (gemmK35's groups).
func iq4xsRowK35(w, a *byte, arb, nb int, y *float32, ys, c int) {
	var acc [16 * 8]float32
	iq4xsRowAVX2(w, a, arb, nb, &acc[0], c)
	out := unsafe.Slice(y, (c-1)*ys+1)
	for i := range c {
		out[i*ys] = hsum8((*[8]float32)(acc[8*i:]))
	}
}

// Implemented in k2iq_amd64.s; nb > 0 whole blocks at w and a, AVX2 and
// F16C.
//
//go:noescape
func dotQ2_KQ8_KAVX2(w, a *byte, nb int) float32

//go:noescape
func dotIQ4_XSQ8_KAVX2(w, a *byte, nb int) float32

// The batched row kernels (k2iqg_amd64.s) have k35RowFunc's signature: one
// weight row of nb > 0 super-blocks against c > 0 activation rows arb bytes
// apart, output i at y[i*ys]; AVX2 and F16C.
//
//go:noescape
func q2kRowAVX2(w, a *byte, arb, nb int, y *float32, ys, c int)

// iq4xsRowAVX2 (k2iqg_amd64.s) takes one weight row of nb > 0
// super-blocks against c > 0 activation rows arb bytes apart and leaves
// row i's eight float32 lane accumulators at acc[8i:8i+8]; AVX2, FMA and
// F16C.
//
//go:noescape
func iq4xsRowAVX2(w, a *byte, arb, nb int, acc *float32, c int)
