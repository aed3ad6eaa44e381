package quant

// kernelSet holds every hot kernel as a function value, so that one set can be
// swapped for another: the pure-Go references (always compiled, under names
// ending in Go) or faster per-architecture kernels, chosen once at start-up.
type kernelSet struct {
	name string

	// Weight-by-activation dot products over whole blocks.
	dotQ4_0Q8_0 func(w, a []byte) float32
	dotQ8_0Q8_0 func(w, a []byte) float32
	dotQ4_KQ8_K func(w, a []byte) float32
	dotQ6_KQ8_K func(w, a []byte) float32
	dotF16      func(w []byte, x []float32) float32 // x already rounded to F16
	dotBF16     func(w []byte, x []float32) float32 // x already rounded to BF16
	dotF32      func(a, b []float32) float32

	// Activation quantizers.
	quantizeQ8_0 func(x []float32, dst []byte)
	quantizeQ8_K func(x []float32, dst []byte)

	// gemm, when set, computes MatMul on Q4_0 and Q8_0 weights for every n
	// (gemmGo in gemm.go defines its results); nil in the generic set.
	gemm func(t Type, w []byte, rb, r0, rows int, a *gemmActs, i0, c int, y []float32, ys int)
	// gemmPanel, when set, is gemm for rows [lo, hi) (multiples of
	// panelRows) of a matrix repacked into row panels (panel.go) and every
	// activation row; nil where there are no panel kernels (then nothing
	// is repacked).
	gemmPanel func(t Type, panels []byte, rb, lo, hi int, a *gemmActs, c int, y []float32, ys int)
	// gemmK, when set, computes MatMul on Q4_K and Q6_K weights for every
	// n, each output bit for bit the per-row Go twin (gemmk.go); nil in the
	// generic set.
	gemmK func(t Type, w []byte, rb, lo, hi int, a []byte, arb, n int, y []float32, ys int)

	// Half-precision vector kernels of attention over an F16 KV cache
	// (see f16vec.go for their definitions).
	madF16   func(acc []float32, v []uint16, s float32)
	scaleF16 func(acc []float32, s float32)
	toF16    func(dst []uint16, src []float32)

	// siluMul is SiLUMul (silu.go).
	siluMul func(h, u []float32)
}

var genericKernels = kernelSet{
	name:         "generic",
	dotQ4_0Q8_0:  dotQ4_0Q8_0Go,
	dotQ8_0Q8_0:  dotQ8_0Q8_0Go,
	dotQ4_KQ8_K:  dotQ4_KQ8_KGo,
	dotQ6_KQ8_K:  dotQ6_KQ8_KGo,
	dotF16:       dotF16Go,
	dotBF16:      dotBF16Go,
	dotF32:       dotF32FloatsGo,
	quantizeQ8_0: quantizeQ8_0,
	quantizeQ8_K: quantizeQ8_K,
	madF16:       madF16Go,
	scaleF16:     scaleF16Go,
	toF16:        toF16Go,
	siluMul:      siluMulGo,
}

// archKernels is the best set for this machine, or nil when there is none
// beyond the generic one. A per-architecture file (for example
// kernels_amd64.go, built under "amd64 && !noasm && gc", with a negated twin
// that leaves this nil) sets it from its init after checking CPU features
// with golang.org/x/sys/cpu; entries it does not accelerate stay generic.
var archKernels *kernelSet

// archHooks add kernels to the machine's set: UseGeneric(false) applies them
// in order to a copy of *archKernels (or of the generic set). Per-architecture
// files append to it from their init, whatever order those run in.
var archHooks []func(*kernelSet)

// archSet is the set built by UseGeneric(false) when there are hooks.
var archSet kernelSet

// k is the kernel set in use.
var k = &genericKernels

func init() { UseGeneric(false) }

// UseGeneric switches every kernel to its pure-Go reference (true) or back to
// the best available for this machine (false). It is meant for tests and
// benchmarks and must not be called while kernels are running.
func UseGeneric(generic bool) {
	switch {
	case generic || archKernels == nil && len(archHooks) == 0:
		k = &genericKernels
	case len(archHooks) == 0:
		k = archKernels
	default:
		archSet = genericKernels
		if archKernels != nil {
			archSet = *archKernels
		}
		for _, h := range archHooks {
			h(&archSet)
		}
		k = &archSet
	}
}

// Kernels names the kernel set in use, for logs ("generic" or an
// architecture's name, with "+panels" when Q4_0 and Q8_0 weights are
// repacked into row panels).
func Kernels() string {
	if k.gemmPanel != nil && repackOn.Load() {
		return k.name + "+panels"
	}
	return k.name
}
