//go:build amd64 && !noasm && gc

package quant

//go:noescape
func exp32sAVX2(x *float32, n int)

//go:noescape
func exp32sAVX512(x *float32, n int)

var _ = haveAVX2FMA && archHook(func(s *kernelSet) {
	s.exp32s = exp32s_amd64
	if s.name == "avx512" && haveAVX512F16 {
		s.exp32s = exp32s_avx512
	}
})

// exp32s_amd64 runs whole groups of 8 in assembly and the rest in Go.
func exp32s_amd64(x []float32) {
	n := len(x) &^ 7
	if n > 0 {
		exp32sAVX2(&x[0], n)
	}
	exp32sGo(x[n:])
}

// exp32s_avx512 runs whole groups of 32 in the AVX-512 kernel, then
// exp32s_amd64's way.
func exp32s_avx512(x []float32) {
	n := len(x) &^ 31
	if n > 0 {
		exp32sAVX512(&x[0], n)
	}
	exp32s_amd64(x[n:])
}
