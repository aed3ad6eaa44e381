package quant

import (
	"encoding/binary"
	"math"
)

// Quantize encodes src as type t into dst, which must hold at least
// t.RowBytes(len(src)) bytes; len(src) must be a multiple of t's block size.
//
// Q8_0 and Q4_0 use ggml's reference quantizers (quantize_row_q8_0_ref,
// quantize_row_q4_0_ref) and so produce the same bytes. Q4_K and Q6_K use
// simpler quantizers than ggml's (no error search): a valid encoding whose
// error is that of the bit width, but not ggml's bytes. Q3_K and Q5_K use
// ggml's reference quantizers (quantize_row_q3_K_ref, quantize_row_q5_K_ref:
// scale searches of make_q3_quants and make_qkx2_quants, k35.go), byte for
// byte what llama-quantize writes without an importance matrix
// (synth's TestQuantizeMatchesLlamaQuantize); Q2_K and
// IQ4_XS follow ggml's quantizers without an importance matrix (k2iq.go);
// Q4_1, Q5_0 and Q5_1 follow ggml's reference quantizers, IQ4_NL
// llama-quantize's (its scale search, without an importance matrix;
// legacy.go). Quantize is meant for
// writing model files and for tests; it is fast (a few ns per value) but not
// tuned.
func Quantize(t Type, src []float32, dst []byte) error {
	need, err := checkSizes("quantize", t, len(src), len(dst))
	if err != nil {
		return err
	}
	dst = dst[:need]
	switch t {
	case F32:
		for i, v := range src {
			binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(v))
		}
	case F16:
		for i, v := range src {
			binary.LittleEndian.PutUint16(dst[2*i:], F32ToF16(v))
		}
	case BF16:
		for i, v := range src {
			binary.LittleEndian.PutUint16(dst[2*i:], F32ToBF16(v))
		}
	case Q8_0:
		quantizeQ8_0(src, dst)
	case Q4_0:
		quantizeQ4_0(src, dst)
	case Q4_K:
		for b := 0; b < len(src)/qkK; b++ {
			quantizeQ4_KBlock((*[qkK]float32)(src[b*qkK:]), (*[q4_KBytes]byte)(dst[b*q4_KBytes:]))
		}
	case Q6_K:
		for b := 0; b < len(src)/qkK; b++ {
			quantizeQ6_KBlock((*[qkK]float32)(src[b*qkK:]), (*[q6_KBytes]byte)(dst[b*q6_KBytes:]))
		}
	case Q4_1:
		quantizeQ4_1(src, dst)
	case Q5_0:
		quantizeQ5_0(src, dst)
	case Q5_1:
		quantizeQ5_1(src, dst)
	case IQ4_NL:
		quantizeIQ4_NL(src, dst)
	case Q3_K:
		for b := 0; b < len(src)/qkK; b++ {
			quantizeQ3_KBlock((*[qkK]float32)(src[b*qkK:]), (*[q3_KBytes]byte)(dst[b*q3_KBytes:]))
		}
	case Q5_K:
		for b := 0; b < len(src)/qkK; b++ {
			quantizeQ5_KBlock((*[qkK]float32)(src[b*qkK:]), (*[q5_KBytes]byte)(dst[b*q5_KBytes:]))
		}
	case Q2_K:
		for b := 0; b < len(src)/qkK; b++ {
			quantizeQ2_KBlock((*[qkK]float32)(src[b*qkK:]), (*[q2_KBytes]byte)(dst[b*q2_KBytes:]))
		}
	case IQ4_XS:
		for b := 0; b < len(src)/qkK; b++ {
			quantizeIQ4_XSBlock((*[qkK]float32)(src[b*qkK:]), (*[iq4_XSBytes]byte)(dst[b*iq4_XSBytes:]))
		}
	}
	return nil
}

// nearestInt rounds to the nearest integer, ties to even, by ggml's trick of
// adding 1.5*2^23 so that the float32 adder does the rounding. Valid for
// |f| <= 4194303. The explicit conversion keeps a caller's multiply from
// being fused into the add.
func nearestInt(f float32) int32 {
	v := float32(f) + 12582912
	return int32(math.Float32bits(v)&0x007fffff) - 0x00400000
}

// roundAway rounds half away from zero, as C's roundf.
func roundAway(f float32) int32 { return int32(math.Round(float64(f))) }

// quantizeQ8_0Acts encodes activations as Q8_0 the way llama.cpp's x86
// CPU backend does (quantize_row_q8_0 on AVX2 and AVX-512), against whose
// outputs shade is checked: d = amax/127 as in the reference, but
// q = x*(127/amax) rounded half to even, which lands on the other side of
// the reference's round(x/d) for a few values a row. Those few quants flip
// later rounding steps and put whole rows of the reference logits 0.02-0.05
// std away (the conformance pack's Q5_0 file, 2026-12-05); weights keep
// the reference's quantizeQ8_0. An amax so small that 127/amax overflows
// (below ~3.7e-37, where d is a zero F16 anyway) gives zero quants.
func quantizeQ8_0Acts(x []float32, dst []byte) {
	for b := 0; b < len(x)/qk8_0; b++ {
		y := (*[q8_0Bytes]byte)(dst[b*q8_0Bytes:])
		d, _ := quantizeActsBlock((*[qk8_0]float32)(x[b*qk8_0:]), (*[qk8_0]byte)(y[2:]))
		binary.LittleEndian.PutUint16(y[0:], F32ToF16(d))
	}
}

// quantizeActsBlock writes the quants of one block of activations as
// quantize_row_q8_0 and quantize_row_q8_1 on x86 compute them (see
// quantizeQ8_0Acts) and returns the block's d, before its rounding to F16,
// and the sum of the quants (Q8_1's s is d times it).
func quantizeActsBlock(xb *[qk8_0]float32, qs *[qk8_0]byte) (d float32, sum int32) {
	var amax float32
	for _, v := range xb {
		amax = max(amax, abs32(v))
	}
	d = amax / 127
	var id float32
	if amax != 0 {
		if id = 127 / amax; id > math.MaxFloat32 {
			id = 0
		}
	}
	for j, v := range xb {
		q := roundEven(v * id)
		qs[j] = byte(int8(q))
		sum += q
	}
	return d, sum
}

// roundEven rounds half to even, as the CPU's default rounding mode.
func roundEven(f float32) int32 { return int32(math.RoundToEven(float64(f))) }

// quantizeQ8_0 is ggml's quantize_row_q8_0_ref: d = amax/127, q = round(x/d).
// It encodes both Q8_0 weights and the Q8_0 activations of Q8_0 and Q4_0 dot
// products.
func quantizeQ8_0(x []float32, dst []byte) {
	for b := 0; b < len(x)/qk8_0; b++ {
		xb := (*[qk8_0]float32)(x[b*qk8_0:])
		y := (*[q8_0Bytes]byte)(dst[b*q8_0Bytes:])
		var amax float32
		for _, v := range xb {
			amax = max(amax, abs32(v))
		}
		d := amax / 127
		var id float32
		if d != 0 {
			id = 1 / d
		}
		binary.LittleEndian.PutUint16(y[0:], F32ToF16(d))
		for j, v := range xb {
			y[2+j] = byte(int8(roundAway(v * id)))
		}
	}
}

// quantizeQ4_0 is ggml's quantize_row_q4_0_ref: the value of largest
// magnitude maps to -8, d = max/-8, q = min(15, trunc(x/d + 8.5)).
func quantizeQ4_0(x []float32, dst []byte) {
	for b := 0; b < len(x)/qk4_0; b++ {
		xb := (*[qk4_0]float32)(x[b*qk4_0:])
		y := (*[q4_0Bytes]byte)(dst[b*q4_0Bytes:])
		var amax, mx float32
		for _, v := range xb {
			if amax < abs32(v) {
				amax, mx = abs32(v), v
			}
		}
		d := mx / -8
		var id float32
		if d != 0 {
			id = 1 / d
		}
		binary.LittleEndian.PutUint16(y[0:], F32ToF16(d))
		for j := 0; j < qk4_0/2; j++ {
			x0 := min(15, int32(float32(xb[j]*id)+8.5))
			x1 := min(15, int32(float32(xb[j+qk4_0/2]*id)+8.5))
			y[2+j] = byte(x0) | byte(x1)<<4
		}
	}
}

// quantizeQ4_KBlock is ggml's quantize_row_q4_K_ref (no importance
// matrix): quantizeScaleMinK with levels 0..15 and make_qkx2_quants' search
// from -1 in 20 steps, then the nibbles, sub-blocks 2g and 2g+1 sharing a
// byte run. Every block is llama-quantize's byte for byte
// (synth's TestQuantizeMatchesLlamaQuantize).
func quantizeQ4_KBlock(x *[qkK]float32, y *[q4_KBytes]byte) {
	var L [qkK]uint8
	quantizeScaleMinK(x, 15, -1, 20, (*[4]byte)(y[0:]), (*[kScaleSize]byte)(y[4:]), &L)
	qs := y[4+kScaleSize:]
	for g := 0; g < 4; g++ {
		for l := 0; l < 32; l++ {
			qs[32*g+l] = L[64*g+l] | L[64*g+32+l]<<4
		}
	}
}

// makeQXQuants is ggml's make_qx_quants for 16 values with rmse_type 1
// and no importance weights: levels -nmax..nmax-1 (stored in L plus nmax)
// from the value of largest magnitude, then 18 other grids tried, each
// kept when its x²-weighted least-squares fit is better; the scale is
// returned. Products are converted one by one so that no step is fused on
// arm64.
func makeQXQuants(nmax int32, x *[16]float32, L *[16]uint8) float32 {
	var amax, mx float32
	for _, v := range x {
		if a := abs32(v); a > amax {
			amax, mx = a, v
		}
	}
	if amax < 1e-15 {
		*L = [16]uint8{}
		return 0
	}
	fit := func(iscale float32, store bool) (sumlx, suml2 float32) {
		for i, v := range x {
			l := min(nmax-1, max(-nmax, nearestInt(float32(iscale*v))))
			if store {
				L[i] = uint8(l + nmax)
			}
			w := float32(v * v)
			sumlx += float32(float32(w*v) * float32(l))
			suml2 += float32(float32(w*float32(l)) * float32(l))
		}
		return sumlx, suml2
	}
	sumlx, suml2 := fit(-float32(nmax)/mx, true)
	var scale float32
	if suml2 != 0 {
		scale = sumlx / suml2
	}
	best := float32(scale * sumlx)
	for is := -9; is <= 9; is++ {
		if is == 0 {
			continue
		}
		iscale := -(float32(nmax) + float32(0.1*float32(is))) / mx
		sumlx, suml2 := fit(iscale, false)
		if suml2 > 0 && float32(sumlx*sumlx) > float32(best*suml2) {
			fit(iscale, true)
			scale = sumlx / suml2
			best = float32(scale * sumlx)
		}
	}
	return scale
}

// quantizeQ6_KBlock is ggml's quantize_row_q6_K_ref (no importance
// matrix): each sub-block of 16 gets its scale from make_qx_quants' search,
// the 16 scales are stored as int8 multiples of the f16 d (the one of
// largest magnitude at -128), and every value is requantized against its
// stored scale; a sub-block whose stored scale is zero keeps the search's
// levels, as ggml's does. Every block is llama-quantize's byte for byte
// (synth's TestQuantizeMatchesLlamaQuantize).
func quantizeQ6_KBlock(x *[qkK]float32, y *[q6_KBytes]byte) {
	var L [qkK]uint8
	var scales [16]float32
	var maxScale, maxAbsScale float32
	for ib := 0; ib < 16; ib++ {
		scales[ib] = makeQXQuants(32, (*[16]float32)(x[16*ib:]), (*[16]uint8)(L[16*ib:]))
		if a := abs32(scales[ib]); a > maxAbsScale {
			maxAbsScale, maxScale = a, scales[ib]
		}
	}
	*y = [q6_KBytes]byte{}
	if maxAbsScale < 1e-15 {
		return // all (near) zero: d = 0
	}
	iscale := -128 / maxScale
	binary.LittleEndian.PutUint16(y[208:], F32ToF16(1/iscale))
	d := f16At(y[208:])
	sc := y[192:208]
	for ib := 0; ib < 16; ib++ {
		sc[ib] = byte(int8(min(127, nearestInt(iscale*scales[ib]))))
	}
	for ib := 0; ib < 16; ib++ {
		dq := float32(d * float32(int8(sc[ib])))
		if dq == 0 {
			continue
		}
		for i := 16 * ib; i < 16*ib+16; i++ {
			L[i] = uint8(min(31, max(-32, nearestInt(x[i]/dq))) + 32)
		}
	}
	for h := 0; h < 2; h++ {
		ql := y[64*h : 64*h+64]
		qh := y[128+32*h : 128+32*h+32]
		q := L[128*h:]
		for l := 0; l < 32; l++ {
			ql[l] = q[l]&0xf | (q[l+64]&0xf)<<4
			ql[l+32] = q[l+32]&0xf | (q[l+96]&0xf)<<4
			qh[l] = q[l]>>4 | (q[l+32]>>4)<<2 | (q[l+64]>>4)<<4 | (q[l+96]>>4)<<6
		}
	}
}

// quantizeQ8_K is ggml's quantize_row_q8_K_ref, the activation format of the
// K-quant dot products: per 256 values, the value of largest magnitude (with
// its sign) maps to -127, q = nearest(x * -127/max), d = 1/iscale (float32),
// and bsums holds the sum of each 16 consecutive q.
func quantizeQ8_K(x []float32, dst []byte) {
	for b := 0; b < len(x)/qkK; b++ {
		xb := (*[qkK]float32)(x[b*qkK:])
		y := (*[q8_KBytes]byte)(dst[b*q8_KBytes:])
		var amax, mx float32
		for _, v := range xb {
			if abs32(v) > amax {
				amax, mx = abs32(v), v
			}
		}
		if amax == 0 {
			*y = [q8_KBytes]byte{}
			continue
		}
		iscale := -127 / mx
		qs := (*[qkK]byte)(y[4:])
		for j, v := range xb {
			qs[j] = byte(int8(min(127, nearestInt(iscale*v))))
		}
		for j := 0; j < qkK/16; j++ {
			var sum int16
			for _, q := range qs[16*j : 16*j+16] {
				sum += int16(int8(q))
			}
			binary.LittleEndian.PutUint16(y[4+qkK+2*j:], uint16(sum))
		}
		binary.LittleEndian.PutUint32(y[0:], math.Float32bits(1/iscale))
	}
}

func abs32(f float32) float32 { return math.Float32frombits(math.Float32bits(f) &^ (1 << 31)) }
