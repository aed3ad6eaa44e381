package quant

import (
	"fmt"
	"os"
	"strings"
)

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
	dotQ3_KQ8_K func(w, a []byte) float32
	dotQ5_KQ8_K func(w, a []byte) float32
	dotF16      func(w []byte, x []float32) float32 // x already rounded to F16
	dotBF16     func(w []byte, x []float32) float32 // x already rounded to BF16
	dotF32      func(a, b []float32) float32

	// The legacy 32-value types and IQ4_NL (legacy.go), and the Q8_1
	// activations of Q4_1 and Q5_1.
	dotQ4_1Q8_1                func(w, a []byte) float32
	dotQ5_0Q8_0                func(w, a []byte) float32
	dotQ5_1Q8_1                func(w, a []byte) float32
	dotIQ4_NLQ8_0              func(w, a []byte) float32
	quantizeQ8_1               func(x []float32, dst []byte)
	dotQ2_KQ8_K, dotIQ4_XSQ8_K func(w, a []byte) float32 // k2iq.go

	// Activation quantizers.
	quantizeQ8_0 func(x []float32, dst []byte)
	quantizeQ8_K func(x []float32, dst []byte)
	// putActs lays out one Q8_0 activation row for the gemm kernels
	// (gemmActs.put).
	putActs func(g *gemmActs, t Type, i int, src []byte)

	// gemm, when set, computes MatMul on Q4_0 and Q8_0 weights for every n
	// (gemmGo in gemm.go defines its results); nil in the generic set.
	gemm func(t Type, w []byte, rb, r0, rows int, a *gemmActs, i0, c int, y []float32, ys int)
	// gemmPanel, when set, is gemm for rows [lo, hi) (multiples of
	// panelRows) of a matrix repacked into row panels (panel.go) and every
	// activation row; nil where there are no panel kernels (then nothing
	// is repacked).
	gemmPanel func(t Type, panels []byte, rb, lo, hi int, a *gemmActs, c int, y []float32, ys int)
	// gemmK, when set, computes MatMul on Q4_K and Q6_K weights (and the
	// types hooks add to gemmKTypes: Q3_K, Q5_K and, on amd64, Q2_K and
	// IQ4_XS) for every n, each output bit for bit the per-row Go twin
	// (gemmk.go); nil in the generic set.
	gemmK func(t Type, w []byte, rb, lo, hi int, a []byte, arb, n int, y []float32, ys int)
	// gemmKTypes has bit t set for each Type t gemmK computes (hasGemmK);
	// MatMul computes other Q8_K-paired types with the per-row dots.
	gemmKTypes uint64
	// gemmKPanel, when set, is gemmK for rows [lo, hi) (multiples of
	// q4kPanelRows) of a Q4_K matrix repacked into row panels of nb
	// super-blocks a row (panelk.go); nil where there are no Q4_K panel
	// kernels (then Q4_K is not repacked).
	gemmKPanel func(panels []byte, nb, lo, hi int, a []byte, arb, n int, y []float32, ys int)
	// gemmQ8, when set, computes MatMul on the legacy types whose bit is
	// set in gemmQ8Types (hasGemmQ8; on amd64 Q4_1, Q5_0, Q5_1 and IQ4_NL)
	// from their Q8_0 or Q8_1 activations (n rows arb bytes apart) for
	// every n, each output bit for bit the type's per-row Go twin
	// (legacy.go); nil in the generic and arm64 sets, which take the
	// per-row loop.
	gemmQ8      func(t Type, w []byte, rb, lo, hi int, a []byte, arb, n int, y []float32, ys int)
	gemmQ8Types uint64

	// Half-precision vector kernels of attention over an F16 KV cache
	// (see f16vec.go for their definitions).
	madF16   func(acc []float32, v []uint16, s float32)
	scaleF16 func(acc []float32, s float32)
	toF16    func(dst []uint16, src []float32)
	roundF16 func(x []float32)

	// siluMul is siluMulGo (silu.go), the vector formula of SiLUMul, for
	// any length.
	siluMul func(h, u []float32)
	// exp32s is Exp32s (exp.go).
	exp32s func(x []float32)
	// softmaxArgs and softmaxSteps are SoftmaxArgs and SoftmaxSteps
	// (softmax.go) after their checks, with n > 0.
	softmaxArgs  func(sc, ex []float32, stride, n int, scale float32, maxs []float32, rose []uint64)
	softmaxSteps func(ex, w, f, raised []float32, stride, n int, rose []uint64, sums []float32)
}

var genericKernels = kernelSet{
	name:         "generic",
	dotQ4_0Q8_0:  dotQ4_0Q8_0Go,
	dotQ8_0Q8_0:  dotQ8_0Q8_0Go,
	dotQ4_KQ8_K:  dotQ4_KQ8_KGo,
	dotQ6_KQ8_K:  dotQ6_KQ8_KGo,
	dotQ3_KQ8_K:  dotQ3_KQ8_KGo,
	dotQ5_KQ8_K:  dotQ5_KQ8_KGo,
	dotF16:       dotF16Go,
	dotBF16:      dotBF16Go,
	dotF32:       dotF32FloatsGo,
	quantizeQ8_0: quantizeQ8_0Acts,
	quantizeQ8_K: quantizeQ8_K,
	putActs:      (*gemmActs).putGo,
	madF16:       madF16Go,
	scaleF16:     scaleF16Go,
	toF16:        toF16Go,
	roundF16:     roundF16Go,
	siluMul:      siluMulGo,
	exp32s:       exp32sGo,
	softmaxArgs: func(sc, ex []float32, stride, n int, scale float32, maxs []float32, rose []uint64) {
		softmaxArgsGo(sc, ex, stride, 0, n, scale, maxs, rose)
	},
	softmaxSteps: softmaxStepsGo,

	dotQ4_1Q8_1:   dotQ4_1Q8_1Go,
	dotQ5_0Q8_0:   dotQ5_0Q8_0Go,
	dotQ5_1Q8_1:   dotQ5_1Q8_1Go,
	dotIQ4_NLQ8_0: dotIQ4_NLQ8_0Go,
	quantizeQ8_1:  quantizeQ8_1,
	dotQ2_KQ8_K:   dotQ2_KQ8_KGo, dotIQ4_XSQ8_K: dotIQ4_XSQ8_KGo,
}

// Named kernel sets: "generic" (the pure-Go references, always there) and
// the per-architecture sets this CPU can run, worst to best ("avx2",
// "avxvnni", "avx512" on amd64; "asimd", "dotprod", "i8mm" on arm64). The best one is
// in use unless UseKernels or the environment variable SHADE_KERNELS (read
// once, at package init) names another.
//
// The choice is made once, by selectKernels from this file's init, the
// package's only kernel-selecting init. Everything it reads is ready by
// then whatever the file order, because Go initializes every package-level
// variable before running any init:
//
//   - archKernels (one per architecture: kernels_amd64.go, kernels_arm64.go,
//     and kernels_other.go returning none) gives the sets this CPU can run,
//     worst to best, after checking its features with golang.org/x/sys/cpu;
//     entries a set does not accelerate stay generic;
//   - archHooks add kernels to those sets; a file registers one from a
//     package-level variable's initializer (var _ = archHook(...)), never
//     from an init. A hook that only suits some sets tests s.name.
//
// Below the sets, a few kernels whose best prefetch differs between CPUs
// of the same instruction set are generated in variants and picked from
// CPUID's vendor and family when the package's variables are initialized
// (amd64: prefetchFor); every variant computes the same bits and is
// tested on any CPU that runs its set.

// archHooks are applied in order to a copy of each of archKernels' sets.
var archHooks []func(*kernelSet)

// archHook registers h in archHooks. It returns true, so that a file can
// call it from a package-level variable's initializer.
func archHook(h func(*kernelSet)) bool {
	archHooks = append(archHooks, h)
	return true
}

// archSets is archKernels() with the hooks applied.
var archSets []kernelSet

// k is the kernel set in use.
var k = &genericKernels

// envKernelsErr is the error of the set SHADE_KERNELS names, if any.
var envKernelsErr error

// KernelsEnv is the environment variable naming the kernel set to use.
const KernelsEnv = "SHADE_KERNELS"

func init() { selectKernels() }

// selectKernels builds the sets and picks the default one: the set
// SHADE_KERNELS names if it is valid, else the best for this machine.
func selectKernels() {
	rebuild()
	k = &genericKernels
	if len(archSets) > 0 {
		k = &archSets[len(archSets)-1]
	}
	envKernelsErr = nil
	if name, ok := os.LookupEnv(KernelsEnv); ok && name != "" {
		if err := UseKernels(name); err != nil {
			envKernelsErr = fmt.Errorf("%s: %w", KernelsEnv, err)
		}
	}
}

// rebuild applies the hooks to every per-architecture set.
func rebuild() {
	archSets = archSets[:0]
	for _, b := range archKernels() {
		s := b
		for _, h := range archHooks {
			h(&s)
		}
		archSets = append(archSets, s)
	}
}

// find returns the set named name, or nil.
func find(name string) *kernelSet {
	if name == genericKernels.name {
		return &genericKernels
	}
	for i := range archSets {
		if archSets[i].name == name {
			return &archSets[i]
		}
	}
	return nil
}

// KernelSets names the kernel sets this CPU can run, worst to best (the
// last is the default).
func KernelSets() []string {
	names := []string{genericKernels.name}
	for _, s := range archSets {
		names = append(names, s.name)
	}
	return names
}

// UseKernels switches to the kernel set named name, one of KernelSets, or
// returns an error naming those. It is meant for tests, benchmarks and
// start-up, and must not be called while kernels are running.
func UseKernels(name string) error {
	s := find(name)
	if s == nil {
		return fmt.Errorf("quant: no kernel set %q on this CPU (available: %s)", name, strings.Join(KernelSets(), ", "))
	}
	k = s
	return nil
}

// KernelsEnvError reports why the kernel set SHADE_KERNELS names could not
// be used (the best set is used instead), or nil.
func KernelsEnvError() error { return envKernelsErr }

// UseGeneric switches every kernel to its pure-Go reference (true) or back to
// the default set (false), chosen again as at start-up (selectKernels). It
// is meant for tests and benchmarks and must not be called while kernels
// are running.
func UseGeneric(generic bool) {
	if generic {
		k = &genericKernels
		return
	}
	selectKernels()
}

// Kernels names the kernel set in use, for logs ("generic" or an
// architecture's name, with "+panels" when weights are repacked into row
// panels).
func Kernels() string {
	if PanelsInUse() {
		return k.name + "+panels"
	}
	return k.name
}

// KernelRevision identifies this build's kernels: a digest of the
// package's Go and assembly sources, written by go generate
// (quant/_gen/kernelrev). Two builds with the same kernel set and revision
// run the same code at the same speed on one machine; measurements of that
// speed (calib) are keyed by it.
func KernelRevision() string { return kernelRevision }
