//go:build amd64 && !noasm && gc

package quant

import "golang.org/x/sys/cpu"

// The amd64 kernels need AVX2 (256-bit integer ops), FMA and F16C (VCVTPH2PS
// for the f16 block scales). x/sys/cpu reports AVX2 only when the OS saves the
// YMM registers.
var haveAVX2FMA = cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasF16C

// avx2Kernels replaces the quantized, F16 and BF16 dot products and the Q8_0
// activation quantizer with AVX2 versions, and computes Q4_0 and Q8_0
// products with the AVX2 gemm kernels (on row panels when repacking); the
// other entries stay generic (hooks add some).
var avx2Kernels = func() kernelSet {
	s := genericKernels
	s.name = "avx2"
	s.dotQ8_0Q8_0 = dotQ8_0Q8_0_amd64
	s.dotQ4_0Q8_0 = dotQ4_0Q8_0_amd64
	s.dotQ4_KQ8_K = dotQ4_KQ8_K_amd64
	s.dotQ6_KQ8_K = dotQ6_KQ8_K_amd64
	s.gemmK = gemmKAVX2 // Q4_K and Q6_K products (gemmk_amd64.go)
	s.gemmKTypes = 1<<Q4_K | 1<<Q6_K
	s.gemmKPanel = gemmQ4KPanelsAVX2
	s.quantizeQ8_K = quantizeQ8_K_amd64
	s.dotF16 = dotF16_amd64
	s.dotBF16 = dotBF16_amd64
	s.quantizeQ8_0 = quantizeQ8_0_amd64
	s.putActs = putActs_amd64
	s.gemm = gemmAVX2
	s.gemmPanel = gemmPanelAVX2
	return s
}()

// avxvnniKernels is avx2Kernels with the Q4_0 and Q8_0 products and the
// Q4_K decode on panels on VEX VPDPBUSD (CPUs with AVX-VNNI but not AVX-512
// VNNI: Intel Alder Lake and later). The other K-quant kernels stay avx2's.
var avxvnniKernels = func() kernelSet {
	s := avx2Kernels
	s.name = "avxvnni"
	s.gemm = gemmAVXVNNI
	s.gemmPanel = gemmPanelAVXVNNI
	s.gemmKPanel = gemmQ4KPanelsAVXVNNI
	return s
}()

// avx512Kernels is avx2Kernels with the AVX-512 VNNI gemm kernels for
// Q4_0 and Q8_0 (gemm_amd64.go), for Q6_K (gemmk512_amd64.go: gemmKAVX512
// runs Q6_K products on them, decode and batches, and hands Q4_K in the
// file's layout to gemmKAVX2) and, for Q4_K on row panels, the VNNI
// kernels that take two panels (16 rows, a ZMM register's int32 lanes) at
// a time, decode and batches (gemmQ4KPanelsVNNI, q4k512_amd64.go).
var avx512Kernels = func() kernelSet {
	s := avx2Kernels
	s.name = "avx512"
	s.gemm = gemmVNNI
	s.gemmK = gemmKAVX512
	s.gemmPanel = gemmPanelVNNI
	s.gemmKPanel = gemmQ4KPanelsVNNI
	return s
}()

// archKernels are the sets this CPU can run, worst to best.
func archKernels() []kernelSet {
	var sets []kernelSet
	if haveAVX2FMA {
		sets = append(sets, avx2Kernels)
	}
	if haveAVXVNNI {
		sets = append(sets, avxvnniKernels)
	}
	if haveAVX2FMA && haveVNNI {
		sets = append(sets, avx512Kernels)
	}
	return sets
}

// The wrappers below have the signatures and semantics of the Go twins in
// dot.go: nb whole weight blocks from len(w), with a holding at least nb
// activation blocks (checked here, since the assembly reads unchecked). The
// assembly needs nb > 0 blocks and AVX2, FMA and F16C.

// dotQ8_0Q8_0_amd64 is dotQ8_0Q8_0Go. Weights may hold any int8, including
// -128; activations must not hold -128 (quantizeQ8_0 never writes it), since
// the kernel multiplies |w| by y*sign(w) as ggml's AVX2 code does.
func dotQ8_0Q8_0_amd64(w, a []byte) float32 {
	nb := len(w) / q8_0Bytes
	if nb == 0 {
		return 0
	}
	_ = a[nb*q8_0Bytes-1] // the assembly reads nb whole activation blocks
	return dotQ8_0Q8_0AVX2(&w[0], &a[0], nb)
}

// dotQ4_0Q8_0_amd64 is dotQ4_0Q8_0Go; activations must not hold -128, as for
// dotQ8_0Q8_0_amd64.
func dotQ4_0Q8_0_amd64(w, a []byte) float32 {
	nb := len(w) / q4_0Bytes
	if nb == 0 {
		return 0
	}
	_ = a[nb*q8_0Bytes-1] // the assembly reads nb whole activation blocks
	return dotQ4_0Q8_0AVX2(&w[0], &a[0], nb)
}

// dotQ4_KQ8_K_amd64 is dotQ4_KQ8_KGo for any bytes in either argument.
func dotQ4_KQ8_K_amd64(w, a []byte) float32 {
	nb := len(w) / q4_KBytes
	if nb == 0 {
		return 0
	}
	_ = a[nb*q8_KBytes-1] // the assembly reads nb whole activation blocks
	return dotQ4_KQ8_KAVX2(&w[0], &a[0], nb)
}

// dotQ6_KQ8_K_amd64 is dotQ6_KQ8_KGo for any bytes in either argument.
func dotQ6_KQ8_K_amd64(w, a []byte) float32 {
	nb := len(w) / q6_KBytes
	if nb == 0 {
		return 0
	}
	_ = a[nb*q8_KBytes-1] // the assembly reads nb whole activation blocks
	return dotQ6_KQ8_KAVX2(&w[0], &a[0], nb)
}

// dotF16_amd64 is dotF16Go: float32 products of halves (exact) summed in
// float64, sixteen values at a time in the assembly and the rest here.
func dotF16_amd64(w []byte, x []float32) float32 {
	w = w[:2*len(x)]
	n := len(x) &^ 15
	var sum float64
	if n > 0 {
		sum = dotF16AVX2(&w[0], &x[0], n)
	}
	for i := n; i < len(x); i++ {
		sum += float64(f16Table[le16(w[2*i:])] * x[i])
	}
	return float32(sum)
}

// dotBF16_amd64 is dotBF16Go, split like dotF16_amd64.
func dotBF16_amd64(w []byte, x []float32) float32 {
	w = w[:2*len(x)]
	n := len(x) &^ 15
	var sum float64
	if n > 0 {
		sum = dotBF16AVX2(&w[0], &x[0], n)
	}
	for i := n; i < len(x); i++ {
		sum += float64(BF16ToF32(le16(w[2*i:])) * x[i])
	}
	return float32(sum)
}

// quantizeQ8_0_amd64 is quantizeQ8_0Acts, byte for byte. The assembly hands back
// blocks with a non-finite largest magnitude or an overflowing 1/d, which
// the Go code encodes.
func quantizeQ8_0_amd64(x []float32, dst []byte) {
	nb := len(x) / qk8_0
	if nb == 0 {
		return
	}
	_ = dst[nb*q8_0Bytes-1] // the assembly writes nb whole blocks
	for b := 0; b < nb; {
		b += quantizeQ8_0AVX2(&x[b*qk8_0], &dst[b*q8_0Bytes], nb-b)
		if b < nb {
			quantizeQ8_0Acts(x[b*qk8_0:(b+1)*qk8_0], dst[b*q8_0Bytes:(b+1)*q8_0Bytes])
			b++
		}
	}
}

// Implemented in dot_amd64.s; the quantized ones need nb > 0 blocks at w
// and a.

//go:noescape
func dotQ8_0Q8_0AVX2(w, a *byte, nb int) float32

//go:noescape
func dotQ4_0Q8_0AVX2(w, a *byte, nb int) float32

//go:noescape
func dotQ4_KQ8_KAVX2(w, a *byte, nb int) float32

//go:noescape
func dotQ6_KQ8_KAVX2(w, a *byte, nb int) float32

// n > 0 is a multiple of 16.
//
//go:noescape
func dotF16AVX2(w *byte, x *float32, n int) float64

// n > 0 is a multiple of 16.
//
//go:noescape
func dotBF16AVX2(w *byte, x *float32, n int) float64

// Implemented in quantize_amd64.s.
//
//go:noescape
func quantizeQ8_0AVX2(x *float32, dst *byte, nb int) int
