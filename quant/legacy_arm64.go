//go:build arm64 && !noasm && gc

package quant

// Until legacy_arm64.s computes the float order of legacy.go's twins
// (llama.cpp's x86 one), every arm64 set uses the twins for the legacy
// types.
var _ = archHook(func(s *kernelSet) {
	s.dotQ4_1Q8_1 = dotQ4_1Q8_1Go
	s.dotQ5_0Q8_0 = dotQ5_0Q8_0Go
	s.dotQ5_1Q8_1 = dotQ5_1Q8_1Go
	s.dotIQ4_NLQ8_0 = dotIQ4_NLQ8_0Go
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
