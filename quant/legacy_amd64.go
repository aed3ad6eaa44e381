//go:build amd64 && !noasm && gc

package quant

// Every amd64 set (each has AVX2, FMA and F16C) computes the legacy types
// with the AVX2 kernels of legacy_amd64.s. The VNNI sets keep them: the
// float order (legacy.go) chains every block's VFMADD231PS into the one
// accumulator, and that chain, not the multiplies a VNNI instruction would
// fuse, bounds them.
var _ = archHook(func(s *kernelSet) {
	s.dotQ4_1Q8_1 = dotQ4_1Q8_1_amd64
	s.dotQ5_0Q8_0 = dotQ5_0Q8_0_amd64
	s.dotQ5_1Q8_1 = dotQ5_1Q8_1_amd64
	s.dotIQ4_NLQ8_0 = dotIQ4_NLQ8_0_amd64
})

// The wrappers have the signatures and bits of the Go twins in legacy.go
// for any bytes in either argument: nb whole weight blocks from len(w),
// with a holding at least nb activation blocks (checked here, since the
// assembly reads unchecked).

func dotQ4_1Q8_1_amd64(w, a []byte) float32 {
	nb := len(w) / q4_1Bytes
	if nb == 0 {
		return 0
	}
	_ = a[nb*q8_1Bytes-1]
	return dotQ4_1Q8_1AVX2(&w[0], &a[0], nb)
}

func dotQ5_0Q8_0_amd64(w, a []byte) float32 {
	nb := len(w) / q5_0Bytes
	if nb == 0 {
		return 0
	}
	_ = a[nb*q8_0Bytes-1]
	return dotQ5_0Q8_0AVX2(&w[0], &a[0], nb)
}

func dotQ5_1Q8_1_amd64(w, a []byte) float32 {
	nb := len(w) / q5_1Bytes
	if nb == 0 {
		return 0
	}
	_ = a[nb*q8_1Bytes-1]
	return dotQ5_1Q8_1AVX2(&w[0], &a[0], nb)
}

func dotIQ4_NLQ8_0_amd64(w, a []byte) float32 {
	nb := len(w) / iq4nlBytes
	if nb == 0 {
		return 0
	}
	_ = a[nb*q8_0Bytes-1]
	return dotIQ4_NLQ8_0AVX2(&w[0], &a[0], nb)
}

// Implemented in legacy_amd64.s; nb > 0 blocks at w and a.

//go:noescape
func dotQ4_1Q8_1AVX2(w, a *byte, nb int) float32

//go:noescape
func dotQ5_0Q8_0AVX2(w, a *byte, nb int) float32

//go:noescape
func dotQ5_1Q8_1AVX2(w, a *byte, nb int) float32

//go:noescape
func dotIQ4_NLQ8_0AVX2(w, a *byte, nb int) float32
