//go:build arm64 && !noasm && gc

package quant

import "golang.org/x/sys/cpu"

// The arm64 kernel sets, worst to best (x/sys/cpu reads the HWCAP bits
// Linux and Android give every process):
//
//   - "asimd": base Advanced SIMD, every ARMv8 core: the Q4_0 and Q8_0
//     row dots with widening multiplies, the Q8_0 quantizer.
//   - "dotprod": SDOT (FEAT_DotProd, ARMv8.2: Cortex-A55/A76 on): the dots
//     with SDOT, and the Q4_0 and Q8_0 gemm on row panels by SDOT.
//   - "i8mm": SMMLA (FEAT_I8MM, ARMv8.6: Cortex-A710/X2 on): dotprod with
//     the batched gemm by SMMLA (2×8 by 8×2 tiles).
//
// Entries a set does not accelerate stay generic; hooks matched by these
// names (archHooks) add the other kernels.
var (
	haveASIMD   = cpu.ARM64.HasASIMD
	haveDotProd = haveASIMD && cpu.ARM64.HasASIMDDP
	haveI8MM    = haveDotProd && cpu.ARM64.HasI8MM
)

var asimdKernels = func() kernelSet {
	s := genericKernels
	s.name = "asimd"
	s.dotQ8_0Q8_0 = dotQ8_0Q8_0_arm64ASIMD
	s.dotQ4_0Q8_0 = dotQ4_0Q8_0_arm64ASIMD
	s.quantizeQ8_0 = quantizeQ8_0_arm64
	return s
}()

var dotprodKernels = func() kernelSet {
	s := asimdKernels
	s.name = "dotprod"
	s.dotQ8_0Q8_0 = dotQ8_0Q8_0_arm64SDOT
	s.dotQ4_0Q8_0 = dotQ4_0Q8_0_arm64SDOT
	s.gemm = gemmSDOT
	s.gemmPanel = gemmPanelSDOT
	return s
}()

var i8mmKernels = func() kernelSet {
	s := dotprodKernels
	s.name = "i8mm"
	s.gemm = gemmMMLA
	s.gemmPanel = gemmPanelMMLA
	return s
}()

// archKernels are the sets this CPU can run, worst to best.
func archKernels() []kernelSet {
	var sets []kernelSet
	if haveASIMD {
		sets = append(sets, asimdKernels)
	}
	if haveDotProd {
		sets = append(sets, dotprodKernels)
	}
	if haveI8MM {
		sets = append(sets, i8mmKernels)
	}
	return sets
}

// The wrappers below have the signatures and semantics of the Go twins in
// dot.go (as compiled for arm64): nb whole weight blocks from len(w), a
// holding at least nb activation blocks (checked here, since the assembly
// reads unchecked).

func dotQ8_0Q8_0_arm64ASIMD(w, a []byte) float32 {
	nb := len(w) / q8_0Bytes
	if nb == 0 {
		return 0
	}
	_ = a[nb*q8_0Bytes-1]
	return dotQ8_0Q8_0ASIMD(&w[0], &a[0], nb)
}

func dotQ8_0Q8_0_arm64SDOT(w, a []byte) float32 {
	nb := len(w) / q8_0Bytes
	if nb == 0 {
		return 0
	}
	_ = a[nb*q8_0Bytes-1]
	return dotQ8_0Q8_0SDOT(&w[0], &a[0], nb)
}

func dotQ4_0Q8_0_arm64ASIMD(w, a []byte) float32 {
	nb := len(w) / q4_0Bytes
	if nb == 0 {
		return 0
	}
	_ = a[nb*q8_0Bytes-1]
	return dotQ4_0Q8_0ASIMD(&w[0], &a[0], nb)
}

func dotQ4_0Q8_0_arm64SDOT(w, a []byte) float32 {
	nb := len(w) / q4_0Bytes
	if nb == 0 {
		return 0
	}
	_ = a[nb*q8_0Bytes-1]
	return dotQ4_0Q8_0SDOT(&w[0], &a[0], nb)
}

// quantizeQ8_0_arm64 is quantizeQ8_0Acts, byte for byte; the assembly hands
// back the blocks the Go code encodes (non-finite amax, overflowing 1/d).
func quantizeQ8_0_arm64(x []float32, dst []byte) {
	nb := len(x) / qk8_0
	if nb == 0 {
		return
	}
	_ = dst[nb*q8_0Bytes-1]
	for b := 0; b < nb; {
		b += quantizeQ8_0ASIMD(&x[b*qk8_0], &dst[b*q8_0Bytes], nb-b)
		if b < nb {
			quantizeQ8_0Acts(x[b*qk8_0:(b+1)*qk8_0], dst[b*q8_0Bytes:(b+1)*q8_0Bytes])
			b++
		}
	}
}

// Implemented in q8_0_arm64.s (quant/_gen/arm64); nb > 0.

//go:noescape
func dotQ8_0Q8_0ASIMD(w, a *byte, nb int) float32

//go:noescape
func dotQ8_0Q8_0SDOT(w, a *byte, nb int) float32

//go:noescape
func dotQ4_0Q8_0ASIMD(w, a *byte, nb int) float32

//go:noescape
func dotQ4_0Q8_0SDOT(w, a *byte, nb int) float32

//go:noescape
func quantizeQ8_0ASIMD(x *float32, dst *byte, nb int) int
