//go:build arm64 && !noasm && gc

package quant

// The legacy types' row dots on arm64 (legacy_arm64.s, written by
// quant/_gen/legacyarm64): widening multiplies on "asimd", SDOT on
// "dotprod" and "i8mm", each bit for bit its Go twin in legacy.go (the
// same float order, with fused FMLA and FMADD).
var _ = archHook(func(s *kernelSet) {
	if s.name == "asimd" {
		s.dotQ4_1Q8_1 = legacyDot(q4_1Bytes, q8_1Bytes, dotQ4_1Q8_1ASIMD)
		s.dotQ5_0Q8_0 = legacyDot(q5_0Bytes, q8_0Bytes, dotQ5_0Q8_0ASIMD)
		s.dotQ5_1Q8_1 = legacyDot(q5_1Bytes, q8_1Bytes, dotQ5_1Q8_1ASIMD)
		s.dotIQ4_NLQ8_0 = legacyDot(iq4nlBytes, q8_0Bytes, dotIQ4_NLQ8_0ASIMD)
		return
	}
	s.dotQ4_1Q8_1 = legacyDot(q4_1Bytes, q8_1Bytes, dotQ4_1Q8_1SDOT)
	s.dotQ5_0Q8_0 = legacyDot(q5_0Bytes, q8_0Bytes, dotQ5_0Q8_0SDOT)
	s.dotQ5_1Q8_1 = legacyDot(q5_1Bytes, q8_1Bytes, dotQ5_1Q8_1SDOT)
	s.dotIQ4_NLQ8_0 = legacyDot(iq4nlBytes, q8_0Bytes, dotIQ4_NLQ8_0SDOT)
})

// legacyDot wraps an assembly kernel with the signature and bits of its Go
// twin for any bytes in either argument: nb whole weight blocks of wb bytes
// from len(w), with a holding at least nb activation blocks of ab bytes
// (checked here, since the assembly reads unchecked).
func legacyDot(wb, ab int, kern func(w, a *byte, nb int) float32) func(w, a []byte) float32 {
	return func(w, a []byte) float32 {
		nb := len(w) / wb
		if nb == 0 {
			return 0
		}
		_ = a[nb*ab-1]
		return kern(&w[0], &a[0], nb)
	}
}

// Implemented in legacy_arm64.s; nb > 0 blocks at w and a. The SDOT ones
// need FEAT_DotProd.

//go:noescape
func dotQ4_1Q8_1ASIMD(w, a *byte, nb int) float32

//go:noescape
func dotQ5_0Q8_0ASIMD(w, a *byte, nb int) float32

//go:noescape
func dotQ5_1Q8_1ASIMD(w, a *byte, nb int) float32

//go:noescape
func dotIQ4_NLQ8_0ASIMD(w, a *byte, nb int) float32

//go:noescape
func dotQ4_1Q8_1SDOT(w, a *byte, nb int) float32

//go:noescape
func dotQ5_0Q8_0SDOT(w, a *byte, nb int) float32

//go:noescape
func dotQ5_1Q8_1SDOT(w, a *byte, nb int) float32

//go:noescape
func dotIQ4_NLQ8_0SDOT(w, a *byte, nb int) float32
