package libm

import "math"

// The constants of glibc's expf (e_expf.c, e_exp2f_data.c): e^x =
// 2^(k/32) · 2^(r/32) with k = round(x·32/ln2), the first factor from a
// table, the second a cubic in r.
const (
	expInvLn2N = 0x1.71547652b82fep+0 * 32
	expShift   = 0x1.8p+52 // adding it rounds to an integer in the low bits
	expC0      = 0x1.c6af84b912394p-5 / 32 / 32 / 32
	expC1      = 0x1.ebfce50fac4f3p-3 / 32 / 32
	expC2      = 0x1.62e42ff0c52d6p-1 / 32

	expOverflow    = 0x1.62e42ep6  // above: ln(2^128), +Inf
	expUnderflow   = -0x1.9fe368p6 // below: ln(2^-150), 0
	expMayUnderflw = -0x1.9d1d9ep6 // below: ln(2^-149), the least subnormal
	expAbsTop88    = 0x42b         // top 12 bits of 88, sign cleared
	float32Inf     = 0x7f800000    // bits
	float32NegInf  = 0xff800000    // bits
	float32Quiet   = 0x00400000    // the quiet bit of a float32 NaN
	float32NaN     = 0xffc00000    // x86's default NaN (Inf - Inf)
	leastSubnormal = 0x1p-149
)

// expTab is glibc's __exp2f_data.tab: the bits of 2^(i/32) less i<<47, so
// that adding k<<47 for k ≡ i (mod 32) scales it by 2^(k>>5) in place.
var expTab = [32]uint64{
	0x3ff0000000000000, 0x3fefd9b0d3158574, 0x3fefb5586cf9890f, 0x3fef9301d0125b51,
	0x3fef72b83c7d517b, 0x3fef54873168b9aa, 0x3fef387a6e756238, 0x3fef1e9df51fdee1,
	0x3fef06fe0a31b715, 0x3feef1a7373aa9cb, 0x3feedea64c123422, 0x3feece086061892d,
	0x3feebfdad5362a27, 0x3feeb42b569d4f82, 0x3feeab07dd485429, 0x3feea47eb03a5585,
	0x3feea09e667f3bcd, 0x3fee9f75e8ec5f74, 0x3feea11473eb0187, 0x3feea589994cce13,
	0x3feeace5422aa0db, 0x3feeb737b0cdc5e5, 0x3feec49182a3f090, 0x3feed503b23e255d,
	0x3feee89f995ad3ad, 0x3feeff76f2fb5e47, 0x3fef199bdd85529c, 0x3fef3720dcef9069,
	0x3fef5818dcfba487, 0x3fef7c97337b9b5f, 0x3fefa4afa2a490da, 0x3fefd0765b6e4540,
}

// Expf is glibc's expf(x) (its FMA build), bit for bit.
func Expf(x float32) float32 {
	bits := math.Float32bits(x)
	if abstop := bits >> 20 & 0x7ff; abstop >= expAbsTop88 {
		switch {
		case bits == float32NegInf:
			return 0
		case abstop >= float32Inf>>20: // +Inf stays, NaN is quieted (x + x)
			if bits != float32Inf {
				bits |= float32Quiet
			}
			return math.Float32frombits(bits)
		case x > expOverflow:
			return float32(math.Inf(1))
		case x < expUnderflow:
			return 0
		case x < expMayUnderflw:
			return leastSubnormal
		}
	}
	xd := float64(x)
	// The FMA build never rounds z = x·32/ln2: GCC fused its product into
	// both uses, kd = z + shift and r = z − kd.
	kd := math.FMA(expInvLn2N, xd, expShift)
	ki := math.Float64bits(kd)
	kd -= expShift
	r := math.FMA(expInvLn2N, xd, -kd)
	s := math.Float64frombits(expTab[ki%32] + ki<<47)
	z := math.FMA(expC0, r, expC1)
	r2 := r * r
	y := math.FMA(expC2, r, 1)
	y = math.FMA(z, r2, y)
	return float32(y * s)
}
