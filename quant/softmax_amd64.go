//go:build amd64 && !noasm && gc

package quant

//go:noescape
func softmaxArgs4AVX512(sc, ex *float32, stride, nv int, scale float32, maxs *[4]float32, rose *[4]uint64)

//go:noescape
func softmaxSteps4AVX512(ex, w, f, raised *float32, stride, nv int, rose *[4]uint64, sums *[4]float32)

var _ = haveAVX512F16 && archHook(func(s *kernelSet) {
	if s.name == "avx512" {
		s.softmaxArgs4 = softmaxArgs4_avx512
		s.softmaxSteps4 = softmaxSteps4_avx512
	}
})

// The wrappers run the whole vectors of 16 slots in assembly and the rest
// in Go, which carries on from the maxima, sums and rose bits the
// assembly leaves.

func softmaxArgs4_avx512(sc, ex []float32, stride, n int, scale float32, maxs *[4]float32, rose *[4]uint64) {
	if nv := n / 16; nv > 0 {
		softmaxArgs4AVX512(&sc[0], &ex[0], stride, nv, scale, maxs, rose)
	}
	softmaxArgs4Go(sc, ex, stride, n&^15, n, scale, maxs, rose)
}

func softmaxSteps4_avx512(ex, w, f, raised []float32, stride, n int, rose *[4]uint64, sums *[4]float32) {
	if nv := n / 16; nv > 0 {
		softmaxSteps4AVX512(&ex[0], &w[0], &f[0], &raised[0], stride, nv, rose, sums)
	}
	softmaxSteps4Go(ex, w, f, raised, stride, n&^15, n, rose, sums)
}
