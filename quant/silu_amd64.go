//go:build amd64 && !noasm && gc

package quant

//go:noescape
func siluMulAVX2(h, u *float32, n int)

var _ = haveAVX2FMA && archHook(func(s *kernelSet) { s.siluMul = siluMul_amd64 })

// siluMul_amd64 runs whole groups of 8 in assembly and the rest in Go (the
// same formula: a lane's value does not depend on its group).
func siluMul_amd64(h, u []float32) {
	u = u[:len(h)]
	n := len(h) &^ 7
	if n > 0 {
		siluMulAVX2(&h[0], &u[0], n)
	}
	siluMulGo(h[n:], u[n:])
}
