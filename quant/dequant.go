package quant

import (
	"encoding/binary"
	"math"
)

// Dequantize decodes len(dst) values of type t from src. len(dst) must be a
// multiple of t's block size and src must hold at least t.RowBytes(len(dst))
// bytes; extra bytes are ignored.
func Dequantize(t Type, src []byte, dst []float32) error {
	need, err := checkSizes("dequantize", t, len(dst), len(src))
	if err != nil {
		return err
	}
	dequantize(t, src[:need], dst)
	return nil
}

// dequantize decodes src, a whole number of blocks of t, into dst.
func dequantize(t Type, src []byte, dst []float32) {
	switch t {
	case F32:
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
		}
	case F16:
		for i := range dst {
			dst[i] = F16ToF32(le16(src[2*i:]))
		}
	case BF16:
		for i := range dst {
			dst[i] = BF16ToF32(le16(src[2*i:]))
		}
	case Q8_0:
		dequantizeQ8_0(src, dst)
	case Q4_0:
		dequantizeQ4_0(src, dst)
	case Q4_K:
		dequantizeQ4_K(src, dst)
	case Q6_K:
		dequantizeQ6_K(src, dst)
	case Q4_1:
		dequantizeQ4_1(src, dst)
	case Q5_0:
		dequantizeQ5_0(src, dst)
	case Q5_1:
		dequantizeQ5_1(src, dst)
	case IQ4_NL:
		dequantizeIQ4_NL(src, dst)
	case Q3_K:
		dequantizeQ3_K(src, dst)
	case Q5_K:
		dequantizeQ5_K(src, dst)
	case Q2_K:
		dequantizeQ2_K(src, dst)
	case IQ4_XS:
		dequantizeIQ4_XS(src, dst)
	default:
		panic("quant: dequantize " + t.String() + ": unsupported")
	}
}

func dequantizeQ8_0(src []byte, dst []float32) {
	for b := 0; b < len(dst)/qk8_0; b++ {
		x := (*[q8_0Bytes]byte)(src[b*q8_0Bytes:])
		y := (*[qk8_0]float32)(dst[b*qk8_0:])
		d := f16At(x[0:])
		for j := 0; j < qk8_0; j++ {
			y[j] = float32(int8(x[2+j])) * d
		}
	}
}

func dequantizeQ4_0(src []byte, dst []float32) {
	for b := 0; b < len(dst)/qk4_0; b++ {
		x := (*[q4_0Bytes]byte)(src[b*q4_0Bytes:])
		y := (*[qk4_0]float32)(dst[b*qk4_0:])
		d := f16At(x[0:])
		for j := 0; j < qk4_0/2; j++ {
			q := x[2+j]
			y[j] = float32(int(q&0xf)-8) * d
			y[j+qk4_0/2] = float32(int(q>>4)-8) * d
		}
	}
}

func dequantizeQ4_K(src []byte, dst []float32) {
	for b := 0; b < len(dst)/qkK; b++ {
		x := (*[q4_KBytes]byte)(src[b*q4_KBytes:])
		y := (*[qkK]float32)(dst[b*qkK:])
		d := f16At(x[0:])
		dmin := f16At(x[2:])
		scales := (*[kScaleSize]byte)(x[4:])
		qs := x[4+kScaleSize:]
		// Each 32 bytes of qs hold 64 values: sub-block 2g in the low
		// nibbles, sub-block 2g+1 in the high nibbles.
		for g := 0; g < 4; g++ {
			sc, m := scaleMinK4(2*g, scales)
			d1, m1 := d*float32(sc), dmin*float32(m)
			sc, m = scaleMinK4(2*g+1, scales)
			d2, m2 := d*float32(sc), dmin*float32(m)
			q := (*[32]byte)(qs[32*g:])
			out := (*[64]float32)(y[64*g:])
			for l := 0; l < 32; l++ {
				out[l] = d1*float32(q[l]&0xf) - m1
				out[32+l] = d2*float32(q[l]>>4) - m2
			}
		}
	}
}

func dequantizeQ6_K(src []byte, dst []float32) {
	for b := 0; b < len(dst)/qkK; b++ {
		x := (*[q6_KBytes]byte)(src[b*q6_KBytes:])
		y := (*[qkK]float32)(dst[b*qkK:])
		d := f16At(x[208:])
		// Two halves of 128 values, each with 64 bytes of ql, 32 of qh and
		// 8 scales. Within a half, ql byte l holds values l (low nibble)
		// and l+64 (high); ql byte l+32 holds l+32 and l+96; qh byte l holds
		// the high 2 bits of l, l+32, l+64, l+96 from its low bits up.
		for h := 0; h < 2; h++ {
			ql := (*[64]byte)(x[64*h:])
			qh := (*[32]byte)(x[128+32*h:])
			sc := (*[8]byte)(x[192+8*h:])
			out := (*[128]float32)(y[128*h:])
			for l := 0; l < 32; l++ {
				is := l / 16
				q1 := int(ql[l]&0xf|(qh[l]>>0&3)<<4) - 32
				q2 := int(ql[l+32]&0xf|(qh[l]>>2&3)<<4) - 32
				q3 := int(ql[l]>>4|(qh[l]>>4&3)<<4) - 32
				q4 := int(ql[l+32]>>4|(qh[l]>>6&3)<<4) - 32
				out[l] = d * float32(int8(sc[is+0])) * float32(q1)
				out[l+32] = d * float32(int8(sc[is+2])) * float32(q2)
				out[l+64] = d * float32(int8(sc[is+4])) * float32(q3)
				out[l+96] = d * float32(int8(sc[is+6])) * float32(q4)
			}
		}
	}
}
