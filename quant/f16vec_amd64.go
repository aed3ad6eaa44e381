//go:build amd64 && !noasm && gc

package quant

//go:noescape
func madF16AVX2(acc *float32, v *uint16, n int, s float32)

//go:noescape
func scaleF16AVX2(acc *float32, n int, s float32)

//go:noescape
func toF16AVX2(dst *uint16, src *float32, n int)

func init() {
	if !haveAVX2FMA {
		return
	}
	archHooks = append(archHooks, func(s *kernelSet) {
		s.madF16 = madF16_amd64
		s.scaleF16 = scaleF16_amd64
		s.toF16 = toF16_amd64
	})
	UseGeneric(false)
}

// The wrappers run whole groups of 8 in assembly and the rest in Go; the
// slices were length-checked by the exported functions.

func madF16_amd64(acc []float32, v []uint16, s float32) {
	n := len(acc) &^ 7
	if n > 0 {
		_ = v[n-1]
		madF16AVX2(&acc[0], &v[0], n, s)
	}
	madF16Go(acc[n:], v[n:len(acc)], s)
}

func scaleF16_amd64(acc []float32, s float32) {
	n := len(acc) &^ 7
	if n > 0 {
		scaleF16AVX2(&acc[0], n, s)
	}
	scaleF16Go(acc[n:], s)
}

func toF16_amd64(dst []uint16, src []float32) {
	n := len(src) &^ 7
	if n > 0 {
		_ = dst[n-1]
		toF16AVX2(&dst[0], &src[0], n)
	}
	toF16Go(dst[n:len(src)], src[n:])
}
