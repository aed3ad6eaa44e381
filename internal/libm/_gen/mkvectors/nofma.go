package main

import (
	"math"

	"shade/internal/libm"
)

// expfNoFMA, sinfNoFMA and cosfNoFMA are glibc's algorithms with every
// product rounded before its sum (as glibc's non-FMA builds, or a compiler
// that does not fuse, compute them), for picking inputs where fusing
// matters. Special cases are left to libm: they do not differ.

func expfNoFMA(x float32) float32 {
	if b := math.Float32bits(x) >> 20 & 0x7ff; b >= 0x42b {
		return libm.Expf(x)
	}
	const (
		invLn2N = 0x1.71547652b82fep+0 * 32
		shift   = 0x1.8p+52
		c0      = 0x1.c6af84b912394p-5 / 32 / 32 / 32
		c1      = 0x1.ebfce50fac4f3p-3 / 32 / 32
		c2      = 0x1.62e42ff0c52d6p-1 / 32
	)
	z := float64(invLn2N * float64(x))
	kd := z + shift
	ki := math.Float64bits(kd)
	kd -= shift
	r := z - kd
	s := math.Float64frombits(expTab[ki%32] + ki<<47)
	p := float64(c0*r) + c1
	r2 := float64(r * r)
	y := float64(c2*r) + 1
	y = float64(p*r2) + y
	return float32(y * s)
}

// expTab is libm's (glibc's __exp2f_data.tab), copied.
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

var (
	cosC = [5]float64{0x1p0, -0x1.ffffffd0c621cp-2, 0x1.55553e1068f19p-5, -0x1.6c087e89a359dp-10, 0x1.99343027bf8c3p-16}
	sinS = [3]float64{-0x1.555545995a603p-3, 0x1.1107605230bc4p-7, -0x1.994eb3774cf24p-13}
)

// sincosNoFMA is the quadrant reduction for |x| < 120 and the two
// polynomials without fusing; ok is false elsewhere (left to libm).
func sincosNoFMA(y float32) (s, c float32, ok bool) {
	top := math.Float32bits(y) >> 20 & 0x7ff
	if top < 0x398 || top >= 0x42f {
		return 0, 0, false
	}
	x := float64(y)
	n := 0
	if top >= 0x3f4 {
		r := float64(x * 0x1.45F306DC9C883p+23)
		n = int((int32(r) + 0x800000) >> 24)
		x = x - float64(float64(n)*0x1.921FB54442D18p0)
	}
	neg := 1.0
	if n&2 != 0 {
		neg = -1
	}
	xs := x * [4]float64{1, -1, -1, 1}[n&3]
	x2 := float64(x * x)
	x3 := float64(xs * x2)
	sv := float64(xs+float64(x3*sinS[0])) + float64(float64(x3*x2)*float64(sinS[1]+float64(x2*sinS[2])))
	x4 := float64(x2 * x2)
	c1 := neg*cosC[0] + float64(x2*(neg*cosC[1]))
	cc := c1 + float64(x4*(neg*cosC[2]))
	c2 := neg*cosC[3] + float64(x2*(neg*cosC[4]))
	cv := cc + float64(float64(x4*x2)*c2)
	if n&1 != 0 {
		return float32(cv), float32(sv), true
	}
	return float32(sv), float32(cv), true
}

func sinfNoFMA(x float32) float32 {
	if s, _, ok := sincosNoFMA(x); ok {
		return s
	}
	return libm.Sinf(x)
}

func cosfNoFMA(x float32) float32 {
	if _, c, ok := sincosNoFMA(x); ok {
		return c
	}
	return libm.Cosf(x)
}

// taylorExp32 is quant.Exp32 before it became glibc's expf: a degree-8
// Taylor series in float64 after x = n·ln2 + r, each product rounded.
func taylorExp32(x float32) float32 {
	switch {
	case !(x > -104):
		if x != x {
			return x
		}
		return 0
	case x > 89:
		return float32(math.Inf(1))
	}
	t := float64(float64(x)*math.Log2E) + 256.5
	n := float64(int64(t)) - 256
	r := float64(x) - float64(n*math.Ln2)
	q := float64(r * (1.0 / 40320))
	for _, c := range []float64{1.0 / 5040, 1.0 / 720, 1.0 / 120, 1.0 / 24, 1.0 / 6, 1.0 / 2, 1} {
		q = float64(r * (c + q))
	}
	p := 1 + q
	return float32(p * math.Float64frombits(uint64(int64(n)+1023)<<52))
}
