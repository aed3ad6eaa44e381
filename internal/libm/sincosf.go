package libm

import "math"

// sincosPoly is one entry of glibc's __sincosf_table: the cosine (c0..c4)
// and sine (s1..s3) polynomials on [-π/4, π/4]. The second entry negates
// the cosine's, which quadrants 2 and 3 need.
type sincosPoly struct {
	c0, c1, c2, c3, c4 float64
	s1, s2, s3         float64
}

var sincosTable = [2]sincosPoly{
	{
		c0: 0x1p0, c1: -0x1.ffffffd0c621cp-2, c2: 0x1.55553e1068f19p-5,
		c3: -0x1.6c087e89a359dp-10, c4: 0x1.99343027bf8c3p-16,
		s1: -0x1.555545995a603p-3, s2: 0x1.1107605230bc4p-7, s3: -0x1.994eb3774cf24p-13,
	},
	{
		c0: -0x1p0, c1: 0x1.ffffffd0c621cp-2, c2: -0x1.55553e1068f19p-5,
		c3: 0x1.6c087e89a359dp-10, c4: -0x1.99343027bf8c3p-16,
		s1: -0x1.555545995a603p-3, s2: 0x1.1107605230bc4p-7, s3: -0x1.994eb3774cf24p-13,
	},
}

// sincosSign is the sign of the sine in quadrants 0..3.
var sincosSign = [4]float64{1, -1, -1, 1}

const (
	hpiInv = 0x1.45F306DC9C883p+23 // 2/π · 2^24: the quadrant lands in bits 24..31
	hpi    = 0x1.921FB54442D18p0   // π/2
	pi63   = 0x1.921FB54442D18p-62 // 2π · 2^-64

	// Top 12 bits (sign cleared) of the float32 thresholds glibc compares:
	// π/4 (the polynomial alone), 2^-12 (x itself, or 1), 120 (the
	// one-step reduction; above it the exact integer one).
	top12Pio4  = 0x3f4
	top12Tiny  = 0x398
	top12Large = 0x42f
)

// invPio4 is 4/π to 192 bits, 8 new bits per entry (glibc's __inv_pio4),
// so that three loads at a shifting offset give a 96-bit window.
var invPio4 = [24]uint32{
	0xa2, 0xa2f9, 0xa2f983, 0xa2f9836e,
	0xf9836e4e, 0x836e4e44, 0x6e4e4415, 0x4e441529,
	0x441529fc, 0x1529fc27, 0x29fc2757, 0xfc2757d1,
	0x2757d1f5, 0x57d1f534, 0xd1f534dd, 0xf534ddc0,
	0x34ddc0db, 0xddc0db62, 0xc0db6295, 0xdb629599,
	0x6295993c, 0x95993c43, 0x993c4390, 0x3c439041,
}

// reduceFast returns x − n·π/2 (one fused multiply-add, as the FMA build
// does) and the quadrant n, for |x| < 120.
func reduceFast(x float64) (float64, int) {
	r := x * hpiInv
	n := (int32(r) + 0x800000) >> 24
	return math.FMA(-float64(n), hpi, x), int(n)
}

// reduceLarge reduces |x| ≥ 120 (x's float32 bits; the sign is ignored)
// modulo π/2 exactly in fixed point: a 32×96-bit product with 4/π gives the
// quadrant in the top two bits and the remainder below.
func reduceLarge(xi uint32) (float64, int) {
	arr := invPio4[(xi>>26)&15:]
	shift := (xi >> 23) & 7
	xi = (xi&0xffffff | 0x800000) << shift
	res0 := uint64(xi * arr[0])
	res1 := uint64(xi) * uint64(arr[4])
	res2 := uint64(xi) * uint64(arr[8])
	res0 = res2>>32 | res0<<32
	res0 += res1
	n := (res0 + 1<<61) >> 62
	res0 -= n << 62
	return float64(int64(res0)) * pi63, int(n)
}

// sinPoly is glibc's sinf_poly: the sine polynomial of x for even n, the
// cosine polynomial for odd n; x2 is x·x. Each a*b+c is one FMA, as GCC
// fused them; products feeding only products stay rounded.
func sinPoly(x, x2 float64, p *sincosPoly, n int) float32 {
	if n&1 == 0 {
		return float32(sinEven(x, x2, p))
	}
	return float32(cosEven(x2, p))
}

func sinEven(x, x2 float64, p *sincosPoly) float64 {
	x3 := x * x2
	s1 := math.FMA(x2, p.s3, p.s2)
	x7 := x3 * x2
	s := math.FMA(x3, p.s1, x)
	return math.FMA(s1, x7, s)
}

func cosEven(x2 float64, p *sincosPoly) float64 {
	x4 := x2 * x2
	c2 := math.FMA(x2, p.c4, p.c3)
	c1 := math.FMA(x2, p.c1, p.c0)
	x6 := x4 * x2
	c := math.FMA(x4, p.c2, c1)
	return math.FMA(c2, x6, c)
}

// invalid is glibc's __math_invalidf(y) = (y − y)/(y − y) for y = ±Inf or
// NaN on x86: Inf gives the default NaN, a NaN comes back quieted.
func invalid(bits uint32) float32 {
	if bits&0x7fffffff == float32Inf {
		return math.Float32frombits(float32NaN)
	}
	return math.Float32frombits(bits | float32Quiet)
}

// Sinf is glibc's sinf(y) (its FMA build), bit for bit.
func Sinf(y float32) float32 {
	bits := math.Float32bits(y)
	top := bits >> 20 & 0x7ff
	x := float64(y)
	p := &sincosTable[0]
	switch {
	case top < top12Pio4:
		if top < top12Tiny {
			return y
		}
		return sinPoly(x, x*x, p, 0)
	case top < top12Large:
		x, n := reduceFast(x)
		if n&2 != 0 {
			p = &sincosTable[1]
		}
		return sinPoly(x*sincosSign[n&3], x*x, p, n)
	case top < float32Inf>>20:
		x, n := reduceLarge(bits)
		q := n + int(bits>>31)
		if q&2 != 0 {
			p = &sincosTable[1]
		}
		return sinPoly(x*sincosSign[q&3], x*x, p, n)
	}
	return invalid(bits)
}

// Cosf is glibc's cosf(y) (its FMA build), bit for bit.
func Cosf(y float32) float32 {
	bits := math.Float32bits(y)
	top := bits >> 20 & 0x7ff
	x := float64(y)
	p := &sincosTable[0]
	switch {
	case top < top12Pio4:
		if top < top12Tiny {
			return 1
		}
		return sinPoly(x, x*x, p, 1)
	case top < top12Large:
		x, n := reduceFast(x)
		if n&2 != 0 {
			p = &sincosTable[1]
		}
		return sinPoly(x*sincosSign[n&3], x*x, p, n^1)
	case top < float32Inf>>20:
		x, n := reduceLarge(bits)
		q := n + int(bits>>31)
		if q&2 != 0 {
			p = &sincosTable[1]
		}
		return sinPoly(x*sincosSign[q&3], x*x, p, n^1)
	}
	return invalid(bits)
}

// Sincosf returns Sinf(y) and Cosf(y) with one range reduction, the bits
// of glibc's sincosf (equal to its sinf and cosf over every float32).
func Sincosf(y float32) (sin, cos float32) {
	bits := math.Float32bits(y)
	top := bits >> 20 & 0x7ff
	x := float64(y)
	p := &sincosTable[0]
	var n int
	switch {
	case top < top12Pio4:
		if top < top12Tiny {
			return y, 1
		}
	case top < top12Large:
		x, n = reduceFast(x)
		if n&2 != 0 {
			p = &sincosTable[1]
		}
		x *= sincosSign[n&3]
	case top < float32Inf>>20:
		x, n = reduceLarge(bits)
		q := n + int(bits>>31)
		if q&2 != 0 {
			p = &sincosTable[1]
		}
		x *= sincosSign[q&3]
	default:
		nan := invalid(bits)
		return nan, nan
	}
	// x·x is the same square as before the sign, which is ±1.
	x2 := x * x
	s, c := float32(sinEven(x, x2, p)), float32(cosEven(x2, p))
	if n&1 != 0 {
		return c, s
	}
	return s, c
}
