//go:build amd64 && !noasm && gc

package quant

// Every amd64 set (all need AVX2) takes the AVX2 Q2_K and IQ4_XS dots of
// k2iq_amd64.s; neither type has batched kernels, so MatMul runs these per
// row.
var _ = haveAVX2FMA && archHook(func(s *kernelSet) {
	s.dotQ2_KQ8_K = dotQ2_KQ8_K_amd64
	s.dotIQ4_XSQ8_K = dotIQ4_XSQ8_K_amd64
})

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

// Implemented in k2iq_amd64.s; nb > 0 whole blocks at w and a, AVX2 and
// F16C.
//
//go:noescape
func dotQ2_KQ8_KAVX2(w, a *byte, nb int) float32

//go:noescape
func dotIQ4_XSQ8_KAVX2(w, a *byte, nb int) float32
