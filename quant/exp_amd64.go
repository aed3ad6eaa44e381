//go:build amd64 && !noasm && gc

package quant

//go:noescape
func exp32sAVX2(x *float32, n int)

var _ = haveAVX2FMA && archHook(func(s *kernelSet) { s.exp32s = exp32s_amd64 })

// exp32s_amd64 runs whole groups of 8 in assembly and the rest in Go.
func exp32s_amd64(x []float32) {
	n := len(x) &^ 7
	if n > 0 {
		exp32sAVX2(&x[0], n)
	}
	exp32sGo(x[n:])
}
