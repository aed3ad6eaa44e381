package quant

import "math"

// SiLUMul computes h[i] = silu(h[i]) · u[i] = h[i] / (1 + e^−h[i]) · u[i], the
// SwiGLU activation of a feed-forward block, for every i < len(h), exactly as
// llama.cpp's haswell build does (ggml_vec_swiglu_f32 with AVX2 and FMA):
// the values of a row that fill whole groups of eight take ggml's vector
// exponential (expAVX2), the last row%8 take glibc's expf (Exp32).
//
// h and u hold consecutive elements of rows of row values each, h[0] being
// element pos of its row, so a row may be split between calls (threads)
// without changing a bit: which formula an element gets depends only on
// its index within its row. Every kernel set gives the Go twin's bits.
func SiLUMul(h, u []float32, row, pos int) {
	if row <= 0 || pos < 0 || pos >= row {
		panic("quant: SiLUMul position outside its row")
	}
	u = u[:len(h)]
	vec := row &^ 7
	for len(h) > 0 {
		n := min(len(h), row-pos)
		if pos < vec {
			m := min(n, vec-pos)
			k.siluMul(h[:m], u[:m])
		}
		if t := max(vec-pos, 0); t < n {
			siluMulTail(h[t:n], u[t:n])
		}
		h, u, pos = h[n:], u[n:], 0
	}
}

// Constants of expAVX2, ggml's (from ARM's optimized routines): 1.5·2^23
// rounds to a whole number when added, ln 2 is split in two so that n·ln2Hi
// is exact, and expP0..expP4 are the polynomial's coefficients.
const (
	expShift = 0x1.8p23
	expLog2e = 0x1.715476p+0
	expLn2Hi = 0x1.62e4p-1
	expLn2Lo = 0x1.7f7d1cp-20
	expP0    = 0x1.0e4020p-7
	expP1    = 0x1.573e2ep-5
	expP2    = 0x1.555e66p-3
	expP3    = 0x1.fffdb6p-2
	expP4    = 0x1.ffffecp-1
)

// expAVX2 is one lane of ggml_v_expf as the AVX2+FMA build computes it (a
// maximum error of about 2 ulp; +Inf above 88.38, 0 below −103.97): n =
// round(x·log2 e) by the 1.5·2^23 shift, b = x − n·ln2 in two fused steps,
// e^b − 1 ≈ j by a degree-5 polynomial evaluated over b², and e^x = k + j·k
// with k = 2^n built in the exponent bits. Where |n| > 126, 2^n is not a
// normal float, and it is split into two scale factors s1·s2 (|n| > 192:
// s1² alone, which overflows to +Inf or underflows to 0).
//
// Each step is the vector instruction's single rounding: fma32 for the
// fused ones, explicit float32 conversions elsewhere (so the compiler fuses
// nothing).
func expAVX2(x float32) float32 {
	z := fma32(x, expLog2e, expShift)
	n := float32(z - expShift)
	b := fma32(-n, expLn2Lo, fma32(-n, expLn2Hi, x))
	e := math.Float32bits(z) << 23
	k := math.Float32frombits(e + 0x3f800000) // bits of 1.0
	u := float32(b * b)
	j := fma32(fma32(fma32(expP0, b, expP1), u, fma32(expP2, b, expP3)), u, float32(expP4*b))
	an := float32(math.Abs(float64(n)))
	if !(an > 126) {
		return fma32(j, k, k)
	}
	var g uint32
	if n <= 0 {
		g = 0x82000000
	}
	s1 := math.Float32frombits(g + 0x7f000000)
	s2 := math.Float32frombits(e - g)
	if an > 192 {
		return float32(s1 * s1)
	}
	return float32(fma32(s2, j, s2) * s1)
}

// siluMulGo is the Go twin of the vector kernels: ggml_v_silu(h)·u, with
// −h as 0 − h and 1 + e^−h, lane by lane (each lane's result depends on
// that lane alone, so it serves any length).
func siluMulGo(h, u []float32) {
	u = u[:len(h)]
	for i, g := range h {
		d := float32(1 + expAVX2(float32(0-g)))
		h[i] = float32(float32(g/d) * u[i])
	}
}

// siluMulTail is ggml_silu_f32(h)·u, the scalar loop after a row's last
// whole group of eight.
func siluMulTail(h, u []float32) {
	u = u[:len(h)]
	for i, g := range h {
		d := float32(1 + Exp32(-g))
		h[i] = float32(float32(g/d) * u[i])
	}
}
