//go:build amd64 && !noasm && gc

package quant

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
)

// gemmKAVX2 is gemmKGo (for Q4_K or Q6_K weights) on the AVX2 kernels.
// The activations must be quantizeQ8_K's: Q6_K's kernels take the -32
// offset off through the bsums.
func gemmKAVX2(t Type, w []byte, rb, lo, hi int, a []byte, arb, n int, y []float32, ys int) {
	if lo >= hi || n <= 0 {
		return
	}
	ti, bs := 0, q4_KBytes
	if t == Q6_K {
		ti, bs = 1, q6_KBytes
	} else if t != Q4_K {
		panic("quant: gemmK on " + t.String())
	}
	nb := rb / bs
	if nb == 0 {
		for i := 0; i < n; i++ {
			clear(y[i*ys+lo : i*ys+hi])
		}
		return
	}
	// The assembly reads unchecked: rows [lo, hi) of nb blocks, n
	// activation rows of nb blocks, n output rows.
	_ = w[(hi-1)*rb+nb*bs-1]
	_ = a[(n-1)*arb+nb*q8_KBytes-1]
	_ = y[(n-1)*ys+hi-1]
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
