package quant

import "math"

// SiLUMul computes h[i] = silu(h[i]) · u[i] = h[i] / (1 + e^−h[i]) · u[i], the
// SwiGLU activation of a feed-forward block, for every i < len(h). The
// exponential is a Cephes-style single-precision one (Cody–Waite reduction by
// ln 2, a degree-7 polynomial; within 2 ulp of e^x), computed with the same
// operations and roundings by the Go reference and by the vector kernels, so
// every kernel set gives the same bits. For h < −87, where silu is below
// 1e-34 in magnitude, the result is tiny or −0 rather than exact.
func SiLUMul(h, u []float32) { k.siluMul(h, u[:len(h)]) }

// Constants of expf32. The clamp keeps 2^n a normal float32 at the low end
// and makes it +Inf (n = 128: all exponent bits set) where e^x overflows or
// nearly does (x ≥ 88.38), so silu of a very negative h is −0. ln 2 is split
// in two (c1 + c2) so that n·c1 is exact.
const (
	expClampLo = -87.0
	expClampHi = 89.0
	expLog2e   = 1.44269504088896341
	expC1      = 0.693359375
	expC2      = -2.12194440e-4
	expP0      = 1.9875691500e-4
	expP1      = 1.3981999507e-3
	expP2      = 8.3334519073e-3
	expP3      = 4.1665795894e-2
	expP4      = 1.6666665459e-1
	expP5      = 5.0000001201e-1
)

// expf32 is e^x as the kernels compute it (see SiLUMul).
func expf32(x float32) float32 {
	x = min(max(x, expClampLo), expClampHi)
	n := float32(math.RoundToEven(float64(float32(x * expLog2e))))
	r := fma32(n, -expC1, x)
	r = fma32(n, -expC2, r)
	p := fma32(expP0, r, expP1)
	p = fma32(p, r, expP2)
	p = fma32(p, r, expP3)
	p = fma32(p, r, expP4)
	p = fma32(p, r, expP5)
	r2 := float32(r * r)
	y := fma32(p, r2, r)
	y = float32(y + 1)
	scale := math.Float32frombits(uint32(int32(n)+127) << 23)
	return float32(y * scale)
}

func siluMulGo(h, u []float32) {
	u = u[:len(h)]
	for i, g := range h {
		d := float32(1 + expf32(-g))
		h[i] = float32(float32(g/d) * u[i])
	}
}
