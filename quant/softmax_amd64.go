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
	v := softmaxAVX2
	if s.name == "avx512" && haveAVX512F16 {
		v = softmaxAVX512
	}
	s.softmaxArgs, s.softmaxSteps = v.softmaxArgs, v.softmaxSteps
})

// softmaxVectors is one instruction set's softmax kernels, on whole
// vectors of width slots. Its methods run those in assembly and the rest
// in Go, which carries on from the maxima and rose bits the assembly
// leaves; the sums' chains run in assembly over every slot, four queries
// at a time.
type softmaxVectors struct {
	width int
	args  func(sc, ex *float32, stride, nq, nv int, scale float32, maxs *float32, rose *uint64)
	marks func(ex, w, f, raised *float32, stride, nq, nv int, rose *uint64, any uint64)
}

var (
	softmaxAVX2   = softmaxVectors{8, softmaxArgsAVX2, softmaxMarksAVX2}
	softmaxAVX512 = softmaxVectors{16, softmaxArgsAVX512, softmaxMarksAVX512}
)

func (v softmaxVectors) softmaxArgs(sc, ex []float32, stride, n int, scale float32, maxs []float32, rose []uint64) {
	whole := n / v.width * v.width
	if whole > 0 {
		v.args(&sc[0], &ex[0], stride, len(maxs), whole/v.width, scale, &maxs[0], &rose[0])
	}
	softmaxArgsGo(sc, ex, stride, whole, n, scale, maxs, rose)
}

func (v softmaxVectors) softmaxSteps(ex, w, f, raised []float32, stride, n int, rose []uint64, sums []float32) {
	whole := n / v.width * v.width
	if whole > 0 {
		v.marks(&ex[0], &w[0], &f[0], &raised[0], stride, len(rose), whole/v.width, &rose[0], orRose(rose))
	}
	softmaxMarksGo(ex, w, f, raised, stride, whole, n, rose)
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
