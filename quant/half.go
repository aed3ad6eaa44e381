package quant

import "math"

// F16ToF32 widens an IEEE 754 half-precision value to float32. Every half
// value, including subnormals, infinities and NaNs, is represented exactly.
func F16ToF32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f: // infinity or NaN; the payload moves up with the mantissa
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case exp != 0: // normal: rebias the exponent from 15 to 127
		return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
	case mant == 0:
		return math.Float32frombits(sign)
	default: // subnormal: mant * 2^-24, exact in float32
		f := float32(mant) * (1.0 / (1 << 24))
		return math.Float32frombits(sign | math.Float32bits(f))
	}
}

// f16Table holds F16ToF32 of every half, for kernels that widen a half per
// weight (F16ToF32 itself is too large to inline).
var f16Table = func() *[1 << 16]float32 {
	t := new([1 << 16]float32)
	for i := range t {
		t[i] = F16ToF32(uint16(i))
	}
	return t
}()

// F32ToF16 rounds f to the nearest half-precision value, ties to even, as
// ggml's GGML_FP32_TO_FP16 does: values beyond the half range become
// infinities, tiny values become subnormals or zero, and every NaN becomes
// the quiet NaN 0x7e00 with f's sign.
func F32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23) & 0xff
	mant := b & 0x7fffff
	if exp == 0xff {
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15 // the half exponent field, if f is normal as a half
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		// Subnormal half (or zero): the result counts units of 2^-24.
		if e < -10 {
			return sign // below half the smallest subnormal
		}
		m := mant | 0x800000 // f's implicit leading bit
		shift := uint(14 - e)
		return sign | uint16(roundShift(m, shift))
	}
	// Normal: drop 13 mantissa bits. A carry out of the mantissa correctly
	// bumps the exponent, up to infinity (0x7c00).
	return sign | uint16(roundShift(uint32(e)<<23|mant, 13))
}

// roundShift returns v >> shift rounded to nearest, ties to even.
func roundShift(v uint32, shift uint) uint32 {
	q := v >> shift
	rem := v & (1<<shift - 1)
	half := uint32(1) << (shift - 1)
	if rem > half || (rem == half && q&1 == 1) {
		q++
	}
	return q
}

// BF16ToF32 widens a bfloat16 value (the top half of a float32) to float32.
func BF16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// F32ToBF16 rounds f to the nearest bfloat16, ties to even, as ggml's
// ggml_compute_fp32_to_bf16 does; NaNs stay NaNs (quieted).
func F32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x40
	}
	return uint16((b + 0x7fff + (b>>16)&1) >> 16)
}
