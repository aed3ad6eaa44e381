//go:build arm64 && !noasm && gc

package quant

// The "dotprod" and "i8mm" sets take the SDOT Q2_K and IQ4_XS dots of
// k2iq_arm64.s; "asimd" keeps the Go twins. A set that does not exist on
// this CPU is never built, so the hook needs no feature check of its own.
var _ = archHook(func(s *kernelSet) {
	if s.name == "dotprod" || s.name == "i8mm" {
		s.dotQ2_KQ8_K = dotQ2_KQ8_K_arm64SDOT
		s.dotIQ4_XSQ8_K = dotIQ4_XSQ8_K_arm64SDOT
	}
})

// dotQ2_KQ8_K_arm64SDOT is dotQ2_KQ8_KGo, bit for bit, for any bytes in
// either argument.
func dotQ2_KQ8_K_arm64SDOT(w, a []byte) float32 {
	nb := len(w) / q2_KBytes
	if nb == 0 {
		return 0
	}
	_ = a[nb*q8_KBytes-1] // the assembly reads nb whole activation blocks
	return dotQ2_KQ8_KSDOT(&w[0], &a[0], nb)
}

// dotIQ4_XSQ8_K_arm64SDOT is dotIQ4_XSQ8_KGo, bit for bit, for any bytes
// in either argument.
func dotIQ4_XSQ8_K_arm64SDOT(w, a []byte) float32 {
	nb := len(w) / iq4_XSBytes
	if nb == 0 {
		return 0
	}
	_ = a[nb*q8_KBytes-1] // the assembly reads nb whole activation blocks
	return dotIQ4_XSQ8_KSDOT(&w[0], &a[0], nb)
}

// Implemented in k2iq_arm64.s; nb > 0 whole blocks at w and a,
// FEAT_DotProd.
//
//go:noescape
func dotQ2_KQ8_KSDOT(w, a *byte, nb int) float32

//go:noescape
func dotIQ4_XSQ8_KSDOT(w, a *byte, nb int) float32
