//go:build arm64 && !noasm && gc

package quant

// siluConsts are expf32's constants in the order silu_arm64.s loads them.
var siluConsts = [siluConstCount]float32{expClampLo, expClampHi, expLog2e, expC1, expC2,
	expP0, expP1, expP2, expP3, expP4, expP5, 1}

const siluConstCount = 12

// Registered from a variable initializer (see kquant_arm64.go).
var _ = func() bool { archHooks = append(archHooks, hookSiLU); return true }()

// hookSiLU adds the SiLU·mul kernel to every arm64 set.
func hookSiLU(s *kernelSet) {
	switch s.name {
	case "asimd", "dotprod", "i8mm":
		s.siluMul = siluMul_arm64
	}
}

// siluMul_arm64 runs whole groups of 4 in assembly and the rest in Go.
func siluMul_arm64(h, u []float32) {
	u = u[:len(h)]
	n := len(h) &^ 3
	if n > 0 {
		siluMulNEON(&h[0], &u[0], n, &siluConsts)
	}
	siluMulGo(h[n:], u[n:])
}
