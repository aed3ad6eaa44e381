//go:build amd64 && !noasm && gc

package quant

//go:noescape
func softmaxArgsAVX512(sc, ex *float32, stride, nq, nv int, scale float32, maxs *float32, rose *uint64)

//go:noescape
func softmaxMarksAVX512(ex, w, f, raised *float32, stride, nq, nv int, rose *uint64, any uint64)

//go:noescape
func softmaxArgsAVX2(sc, ex *float32, stride, nq, nv int, scale float32, maxs *float32, rose *uint64)

//go:noescape
func softmaxMarksAVX2(ex, w, f, raised *float32, stride, nq, nv int, rose *uint64, any uint64)

//go:noescape
func softmaxSums4(e0, e1, e2, e3 *float32, n int, rose *[4]uint64, sums *[4]float32)

var _ = haveAVX2FMA && archHook(func(s *kernelSet) {
	s.softmaxArgs = softmaxArgs_avx2
	s.softmaxSteps = softmaxSteps_avx2
	if s.name == "avx512" && haveAVX512F16 {
		s.softmaxArgs = softmaxArgs_avx512
		s.softmaxSteps = softmaxSteps_avx512
	}
})

// The wrappers run the whole vectors (8 slots, 16 with AVX-512) in
// assembly and the rest in Go, which carries on from the maxima and rose
// bits the assembly leaves; the sums' chains run in assembly over every
// slot, four queries at a time.

func softmaxArgs_avx2(sc, ex []float32, stride, n int, scale float32, maxs []float32, rose []uint64) {
	if nv := n / 8; nv > 0 {
		softmaxArgsAVX2(&sc[0], &ex[0], stride, len(maxs), nv, scale, &maxs[0], &rose[0])
	}
	softmaxArgsGo(sc, ex, stride, n&^7, n, scale, maxs, rose)
}

func softmaxSteps_avx2(ex, w, f, raised []float32, stride, n int, rose []uint64, sums []float32) {
	if nv := n / 8; nv > 0 {
		softmaxMarksAVX2(&ex[0], &w[0], &f[0], &raised[0], stride, len(rose), nv, &rose[0], orRose(rose))
	}
	softmaxMarksGo(ex, w, f, raised, stride, n&^7, n, rose)
	softmaxSums(ex, stride, n, rose, sums)
}

func softmaxArgs_avx512(sc, ex []float32, stride, n int, scale float32, maxs []float32, rose []uint64) {
	if nv := n / 16; nv > 0 {
		softmaxArgsAVX512(&sc[0], &ex[0], stride, len(maxs), nv, scale, &maxs[0], &rose[0])
	}
	softmaxArgsGo(sc, ex, stride, n&^15, n, scale, maxs, rose)
}

func softmaxSteps_avx512(ex, w, f, raised []float32, stride, n int, rose []uint64, sums []float32) {
	if nv := n / 16; nv > 0 {
		softmaxMarksAVX512(&ex[0], &w[0], &f[0], &raised[0], stride, len(rose), nv, &rose[0], orRose(rose))
	}
	softmaxMarksGo(ex, w, f, raised, stride, n&^15, n, rose)
	softmaxSums(ex, stride, n, rose, sums)
}

func orRose(rose []uint64) uint64 {
	var any uint64
	for _, r := range rose {
		any |= r
	}
	return any
}

// softmaxSums runs softmaxSums4 on the queries four at a time; a last
// group of one to three repeats its last query in the missing places, whose
// sums are dropped.
func softmaxSums(ex []float32, stride, n int, rose []uint64, sums []float32) {
	for q0 := 0; q0 < len(sums); q0 += 4 {
		var r4 [4]uint64
		var s4 [4]float32
		var e [4]*float32
		for k := range 4 {
			q := min(q0+k, len(sums)-1)
			r4[k], s4[k], e[k] = rose[q], sums[q], &ex[q*stride]
		}
		softmaxSums4(e[0], e[1], e[2], e[3], n, &r4, &s4)
		copy(sums[q0:], s4[:min(4, len(sums)-q0)])
	}
}
