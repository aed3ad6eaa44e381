//go:build amd64 && !noasm && gc

package quant

//go:noescape
func softmaxArgs4AVX512(sc, ex *float32, stride, nv int, scale float32, maxs *[4]float32, rose *[4]uint64)

//go:noescape
func softmaxSteps4AVX512(ex, w, f, raised *float32, stride, nv int, rose *[4]uint64)

//go:noescape
func softmaxArgs4AVX2(sc, ex *float32, stride, nv int, scale float32, maxs *[4]float32, rose *[4]uint64)

//go:noescape
func softmaxSteps4AVX2(ex, w, f, raised *float32, stride, nv int, rose *[4]uint64)

//go:noescape
func softmaxSums4(ex *float32, stride, n int, rose *[4]uint64, sums *[4]float32)

var _ = haveAVX2FMA && archHook(func(s *kernelSet) {
	s.softmaxArgs4 = softmaxArgs4_avx2
	s.softmaxSteps4 = softmaxSteps4_avx2
	if s.name == "avx512" && haveAVX512F16 {
		s.softmaxArgs4 = softmaxArgs4_avx512
		s.softmaxSteps4 = softmaxSteps4_avx512
	}
})

// The wrappers run the whole vectors (8 slots, 16 with AVX-512) in
// assembly and the rest in Go, which carries on from the maxima and rose
// bits the assembly leaves; the sums' chains run in assembly over every
// slot.

func softmaxArgs4_avx2(sc, ex []float32, stride, n int, scale float32, maxs *[4]float32, rose *[4]uint64) {
	if nv := n / 8; nv > 0 {
		softmaxArgs4AVX2(&sc[0], &ex[0], stride, nv, scale, maxs, rose)
	}
	softmaxArgs4Go(sc, ex, stride, n&^7, n, scale, maxs, rose)
}

func softmaxSteps4_avx2(ex, w, f, raised []float32, stride, n int, rose *[4]uint64, sums *[4]float32) {
	if nv := n / 8; nv > 0 {
		softmaxSteps4AVX2(&ex[0], &w[0], &f[0], &raised[0], stride, nv, rose)
	}
	softmaxMarks4Go(ex, w, f, raised, stride, n&^7, n, rose)
	softmaxSums4(&ex[0], stride, n, rose, sums)
}

func softmaxArgs4_avx512(sc, ex []float32, stride, n int, scale float32, maxs *[4]float32, rose *[4]uint64) {
	if nv := n / 16; nv > 0 {
		softmaxArgs4AVX512(&sc[0], &ex[0], stride, nv, scale, maxs, rose)
	}
	softmaxArgs4Go(sc, ex, stride, n&^15, n, scale, maxs, rose)
}

func softmaxSteps4_avx512(ex, w, f, raised []float32, stride, n int, rose *[4]uint64, sums *[4]float32) {
	if nv := n / 16; nv > 0 {
		softmaxSteps4AVX512(&ex[0], &w[0], &f[0], &raised[0], stride, nv, rose)
	}
	softmaxMarks4Go(ex, w, f, raised, stride, n&^15, n, rose)
	softmaxSums4(&ex[0], stride, n, rose, sums)
}
