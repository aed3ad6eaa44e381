//go:build arm64 && !noasm && gc

package quant

// The arm64 float kernels (f16vec_arm64.s, generated): F16, BF16 and F32
// dot products and the F16 attention helpers, in every arm64 kernel set
// (they need only ARMv8 Advanced SIMD), and the multi-row attention
// kernels behind ScoresF16 and MadsF16 (f16Runs, used with any of those
// sets).

// Registered from variable initializers, before dispatch.go's init picks
// the kernel set (see kquant_arm64.go).
var (
	_ = func() bool { archHooks = append(archHooks, hookF16); return true }()
	_ = func() bool { f16Runs = &f16RunKernels{scores: scoresF16_arm64, mads: madsF16_arm64}; return true }()
)

// hookF16 adds the float kernels to every arm64 set.
func hookF16(s *kernelSet) {
	switch s.name {
	case "asimd", "dotprod", "i8mm":
		s.dotF16 = dotF16_arm64
		s.dotBF16 = dotBF16_arm64
		s.dotF32 = dotF32_arm64
		s.madF16 = madF16_arm64
		s.scaleF16 = scaleF16_arm64
		s.toF16 = toF16_arm64
	}
}

// dotF16_arm64 is dotF16Go: float32 products of halves (exact) summed in
// float64, sixteen values at a time in the assembly (eight lanes, a fixed
// tree) and the rest here.
func dotF16_arm64(w []byte, x []float32) float32 {
	w = w[:2*len(x)]
	n := len(x) &^ 15
	var sum float64
	if n > 0 {
		sum = dotF16NEON(&w[0], &x[0], n)
	}
	for i := n; i < len(x); i++ {
		sum += float64(f16Table[le16(w[2*i:])] * x[i])
	}
	return float32(sum)
}

// dotBF16_arm64 is dotBF16Go, split like dotF16_arm64.
func dotBF16_arm64(w []byte, x []float32) float32 {
	w = w[:2*len(x)]
	n := len(x) &^ 15
	var sum float64
	if n > 0 {
		sum = dotBF16NEON(&w[0], &x[0], n)
	}
	for i := n; i < len(x); i++ {
		sum += float64(BF16ToF32(le16(w[2*i:])) * x[i])
	}
	return float32(sum)
}

// dotF32_arm64 runs whole groups of 16 in assembly (sixteen FMLA lanes)
// and the rest in Go.
func dotF32_arm64(a, b []float32) float32 {
	b = b[:len(a)]
	n := len(a) &^ 15
	var sum float32
	if n > 0 {
		sum = dotF32NEON(&a[0], &b[0], n)
	}
	return sum + dotF32FloatsGo(a[n:], b[n:])
}

// The helpers run whole groups of 8 in assembly and the rest in Go; the
// slices were length-checked by the exported functions.

func madF16_arm64(acc []float32, v []uint16, s float32) {
	n := len(acc) &^ 7
	if n > 0 {
		_ = v[n-1]
		madF16NEON(&acc[0], &v[0], n, s)
	}
	madF16Go(acc[n:], v[n:len(acc)], s)
}

func scaleF16_arm64(acc []float32, s float32) {
	n := len(acc) &^ 7
	if n > 0 {
		scaleF16NEON(&acc[0], n, s)
	}
	scaleF16Go(acc[n:], s)
}

func toF16_arm64(dst []uint16, src []float32) {
	n := len(src) &^ 7
	if n > 0 {
		_ = dst[n-1]
		toF16NEON(&dst[0], &src[0], n)
	}
	toF16Go(dst[n:len(src)], src[n:])
}

// scoresF16_arm64 takes head sizes that are a multiple of 32 (ggml's
// usual 64 and 128 are); others go back to the Go loop.
func scoresF16_arm64(out []float32, ldo int, q []float32, hd int, keys []uint16, stride, count int, kbuf []float32) bool {
	if hd <= 0 || hd%32 != 0 {
		return false
	}
	scoresF16NEON(&out[0], 4*ldo, &q[0], len(q)/hd, &keys[0], 2*stride, count, hd)
	return true
}

// madsF16_arm64 takes lengths that are a multiple of 8, as madF16_arm64
// runs them wholly in assembly.
func madsF16_arm64(acc []float32, v []uint16, stride int, w []float32) bool {
	if len(acc) == 0 || len(acc)%8 != 0 {
		return false
	}
	madsF16NEON(&acc[0], &v[0], 2*stride, &w[0], len(w), len(acc))
	return true
}
