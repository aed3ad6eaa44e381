//go:build arm64 && !noasm && gc

package quant

// The arm64 K-quant kernels (kquant_arm64.s, generated): Q4_K and Q6_K
// weights against Q8_K activations, as dot products and as gemmK, and the
// Q8_K activation quantizer. They go into the kernel sets kernels_arm64.go
// defines by name: the "asimd" set gets the kernels built on widening
// multiplies (SMULL/SMLAL, every ARMv8), "dotprod" and "i8mm" those built
// on SDOT. A set that does not exist on this CPU is never built, so the
// hook needs no feature checks of its own.
//
// Exactness: each super-block's integer sums are exact in int32 (Q4_K: a
// sub-block's lane sums are at most 4·15·128 in int16 lanes, times a 6-bit
// scale; Q6_K: pairs of at most 2·63·128 in int16, times an int8 scale;
// the totals stay far below 2^31), so they are the Go twins' sums whatever
// the order (Q6_K: the twin's eight lanes, ggml's AVX2 ones); the float32
// steps are the twins', in their order (Q4_K: an FMLA into each of two
// accumulators, sum - smin at the end; Q6_K: FMLA by element into eight
// float32 lanes a row, hsum8 at the end), each rounded once. A
// kernel for c activation rows gives each row the bits of the one-row
// kernel, which is the dot product: outputs do not depend on the batch.

// kSetAsimd and kSetDot index kquantKernels by variant.
const (
	kSetAsimd = 0
	kSetDot   = 1
)

// kTileRowsNEON weight rows are swept against every group of maxActs
// activation rows before the next rows are read, so that their
// super-blocks are reused from L1 (a 4096-wide Q4_K row is 2.3 KB).
const kTileRowsNEON = 8

// kActsNEON is the most activation rows one generated kernel takes.
const kActsNEON = len(kquantKernels[0][0])

// The hook is registered from a variable initializer, not an init: every
// package-level variable is set before dispatch.go's init chooses the
// kernel set, whatever the file order.
var _ = func() bool { archHooks = append(archHooks, hookKQuant); return true }()

// hookKQuant adds the K-quant kernels to the arm64 sets by name: widening
// multiplies in "asimd", SDOT in "dotprod" and "i8mm".
func hookKQuant(s *kernelSet) {
	switch s.name {
	case "asimd":
		s.gemmK = gemmKAsimd
		s.dotQ4_KQ8_K = dotQ4_KQ8_KAsimd
		s.dotQ6_KQ8_K = dotQ6_KQ8_KAsimd
	case "dotprod", "i8mm":
		s.gemmK = gemmKDot
		s.dotQ4_KQ8_K = dotQ4_KQ8_KDot
		s.dotQ6_KQ8_K = dotQ6_KQ8_KDot
	default:
		return
	}
	s.gemmKTypes = 1<<Q4_K | 1<<Q6_K | 1<<Q3_K | 1<<Q5_K
	s.quantizeQ8_K = quantizeQ8_K_arm64
}

func gemmKAsimd(t Type, w []byte, rb, lo, hi int, a []byte, arb, n int, y []float32, ys int) {
	gemmKNEON(kSetAsimd, t, w, rb, lo, hi, a, arb, n, y, ys)
}

func gemmKDot(t Type, w []byte, rb, lo, hi int, a []byte, arb, n int, y []float32, ys int) {
	gemmKNEON(kSetDot, t, w, rb, lo, hi, a, arb, n, y, ys)
}

func dotQ4_KQ8_KAsimd(w, a []byte) float32 { return dotKNEON(kSetAsimd, 0, w, a) }
func dotQ6_KQ8_KAsimd(w, a []byte) float32 { return dotKNEON(kSetAsimd, 1, w, a) }
func dotQ4_KQ8_KDot(w, a []byte) float32   { return dotKNEON(kSetDot, 0, w, a) }
func dotQ6_KQ8_KDot(w, a []byte) float32   { return dotKNEON(kSetDot, 1, w, a) }

// dotKNEON is dotQ4_KQ8_KGo (ti 0) or dotQ6_KQ8_KGo (ti 1) on the one-row
// kernel of the set, for any bytes in either argument.
func dotKNEON(set, ti int, w, a []byte) float32 {
	bs := q4_KBytes
	if ti == 1 {
		bs = q6_KBytes
	}
	nb := len(w) / bs
	if nb == 0 {
		return 0
	}
	_ = a[nb*q8_KBytes-1] // the assembly reads nb whole activation blocks
	var y float32
	kquantKernels[set][ti][0](&w[0], &a[0], 0, nb, &y, 0)
	return y
}

// gemmKNEON is gemmKGo (for Q4_K, Q6_K, and Q3_K, Q5_K in k35_arm64.go)
// on the kernels of set.
func gemmKNEON(set int, t Type, w []byte, rb, lo, hi int, a []byte, arb, n int, y []float32, ys int) {
	if t == Q3_K || t == Q5_K {
		gemmK35NEON(set, t, w, rb, lo, hi, a, arb, n, y, ys) // k35_arm64.go
		return
	}
	ti, nb := gemmKShape(t, w, rb, lo, hi, a, arb, n, y, ys)
	if nb == 0 {
		return
	}
	kern := &kquantKernels[set][ti]
	for r0 := lo; r0 < hi; r0 += kTileRowsNEON {
		r1 := min(r0+kTileRowsNEON, hi)
		for c0 := 0; c0 < n; c0 += kActsNEON {
			f := kern[min(kActsNEON, n-c0)-1]
			for r := r0; r < r1; r++ {
				f(&w[r*rb], &a[c0*arb], arb, nb, &y[c0*ys+r], ys)
			}
		}
	}
}

// quantizeQ8_K_arm64 is quantizeQ8_K, byte for byte. The assembly hands
// back the blocks it does not encode (see q8k_arm64.s: NaNs, ties of the
// largest magnitude, all zeros, an infinite or overflowing scale), which
// the Go code encodes.
func quantizeQ8_K_arm64(x []float32, dst []byte) {
	nb := len(x) / qkK
	if nb == 0 {
		return
	}
	_ = dst[nb*q8_KBytes-1] // the assembly writes nb whole blocks
	for b := 0; b < nb; {
		b += quantizeQ8_KNEON(&x[b*qkK], &dst[b*q8_KBytes], nb-b)
		if b < nb {
			quantizeQ8_K(x[b*qkK:(b+1)*qkK], dst[b*q8_KBytes:(b+1)*q8_KBytes])
			b++
		}
	}
}
