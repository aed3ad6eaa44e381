package quant

import "shade/internal/libm"

// Exp32 is e^x in float32, bit for bit glibc's expf as llama.cpp's
// reference gets it on an x86-64 CPU with FMA (libm.Expf): its
// flash-attention softmax takes expf of every score's step, so shade's
// softmax weights round as its do. glibc's algorithm works in float64: k =
// round(x·32/ln2), 2^(k/32) from a 32-entry table with k>>5 added to its
// exponent, and a cubic in the remainder r with fused multiply-adds. NaN
// comes back quieted, x ≤ -103.98 gives 0, x in (-103.98, -103.28) the
// least subnormal, x > 88.73 +Inf, and results between are subnormal where
// e^x is. The same on every architecture, and equal to Exp32s' vector
// kernels lane by lane.
func Exp32(x float32) float32 { return libm.Expf(x) }

// Exp32s replaces every x[i] by Exp32(x[i]).
func Exp32s(x []float32) { k.exp32s(x) }

func exp32sGo(x []float32) {
	for i, v := range x {
		x[i] = libm.Expf(v)
	}
}
