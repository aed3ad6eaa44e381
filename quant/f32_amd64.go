//go:build amd64 && !noasm && gc

package quant

//go:noescape
func dotF32AVX2(a, b *float32, n int) float32

var _ = haveAVX2FMA && archHook(func(s *kernelSet) { s.dotF32 = dotF32_amd64 })

// dotF32_amd64 runs whole groups of 32 in assembly and the rest in Go.
func dotF32_amd64(a, b []float32) float32 {
	b = b[:len(a)]
	n := len(a) &^ 31
	var sum float32
	if n > 0 {
		sum = dotF32AVX2(&a[0], &b[0], n)
	}
	return sum + dotF32FloatsGo(a[n:], b[n:])
}
