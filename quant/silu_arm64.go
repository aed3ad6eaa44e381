//go:build arm64 && !noasm && gc

package quant

import "math"

// siluConsts are expAVX2's constants in the order silu_arm64.s loads them:
// the last four are bit patterns (the scale factors' 0x82000000 and
// 0x7f000000) and zeros.
var siluConsts = [siluConstCount]float32{expShift, expLog2e, expLn2Hi, expLn2Lo,
	expP0, expP1, expP2, expP3, expP4, 1, 126, 192,
	math.Float32frombits(0x82000000), math.Float32frombits(0x7f000000), 0, 0}

const siluConstCount = 16

// Registered from a variable initializer (see kquant_arm64.go).
var _ = func() bool { archHooks = append(archHooks, hookSiLU); return true }()

// hookSiLU adds the SiLU·mul kernel to every arm64 set.
func hookSiLU(s *kernelSet) {
	switch s.name {
	case "asimd", "dotprod", "i8mm":
		s.siluMul = siluMul_arm64
	}
}

// siluMul_arm64 runs whole groups of 4 in assembly and the rest in Go (the
// same formula: a lane's value does not depend on its group).
func siluMul_arm64(h, u []float32) {
	u = u[:len(h)]
	n := len(h) &^ 3
	if n > 0 {
		siluMulNEON(&h[0], &u[0], n, &siluConsts)
	}
	siluMulGo(h[n:], u[n:])
}
