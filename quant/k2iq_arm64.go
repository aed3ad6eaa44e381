//go:build arm64 && !noasm && gc

package quant

// The Q2_K and IQ4_XS dots of k2iq_arm64.s go into the arm64 sets by
// name: widening multiplies in "asimd", SDOT in "dotprod" and "i8mm". A
// set that does not exist on this CPU is never built, so the hook needs no
// feature check of its own.
var _ = archHook(func(s *kernelSet) {
	switch s.name {
	case "asimd":
		s.dotQ2_KQ8_K = dotQ2_KQ8_K_arm64ASIMD
		s.dotIQ4_XSQ8_K = dotIQ4_XSQ8_K_arm64ASIMD
	case "dotprod", "i8mm":
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

// dotQ2_KQ8_K_arm64ASIMD is dotQ2_KQ8_K_arm64SDOT without SDOT.
func dotQ2_KQ8_K_arm64ASIMD(w, a []byte) float32 {
	nb := len(w) / q2_KBytes
	if nb == 0 {
		return 0
	}
	_ = a[nb*q8_KBytes-1]
	return dotQ2_KQ8_KASIMD(&w[0], &a[0], nb)
}

// dotIQ4_XSQ8_K_arm64ASIMD is dotIQ4_XSQ8_K_arm64SDOT without SDOT.
func dotIQ4_XSQ8_K_arm64ASIMD(w, a []byte) float32 {
	nb := len(w) / iq4_XSBytes
	if nb == 0 {
		return 0
	}
	_ = a[nb*q8_KBytes-1]
	return dotIQ4_XSQ8_KASIMD(&w[0], &a[0], nb)
}

// Implemented in k2iq_arm64.s; nb > 0 whole blocks at w and a. The SDOT
// kernels need FEAT_DotProd.
//
//go:noescape
func dotQ2_KQ8_KSDOT(w, a *byte, nb int) float32

//go:noescape
func dotIQ4_XSQ8_KSDOT(w, a *byte, nb int) float32

//go:noescape
func dotQ2_KQ8_KASIMD(w, a *byte, nb int) float32

//go:noescape
func dotIQ4_XSQ8_KASIMD(w, a *byte, nb int) float32
