package quant

import (
	"encoding/binary"
	"math"
	"unsafe"
)

// The pure-Go dot-product kernels. Each mirrors the math of ggml's generic
// ggml_vec_dot_* of the same pair of types: integer products summed exactly
// within a block, then scaled once per block in float32. w holds whole
// weight blocks and a (or x) the matching activations, block for block;
// neither is checked beyond Go's bounds checks.

// dotQ4_0Q8_0Go is ggml_vec_dot_q4_0_q8_0: per block of 32,
// sum += float32(Σ (q4-8)*q8) * d4 * d8.
func dotQ4_0Q8_0Go(w, a []byte) float32 {
	var sum float32
	nb := len(w) / q4_0Bytes
	for b := 0; b < nb; b++ {
		x := (*[q4_0Bytes]byte)(w[b*q4_0Bytes:])
		y := (*[q8_0Bytes]byte)(a[b*q8_0Bytes:])
		var sumi int32
		for j := 0; j < qk4_0/2; j++ {
			v0 := int32(x[2+j]&0xf) - 8
			v1 := int32(x[2+j]>>4) - 8
			sumi += v0*int32(int8(y[2+j])) + v1*int32(int8(y[2+j+qk4_0/2]))
		}
		sum += float32(sumi) * f16At(x[0:]) * f16At(y[0:])
	}
	return sum
}

// dotQ8_0Q8_0Go is ggml_vec_dot_q8_0_q8_0: per block of 32,
// sum += float32(Σ qx*qy) * (dx*dy).
func dotQ8_0Q8_0Go(w, a []byte) float32 {
	var sum float32
	nb := len(w) / q8_0Bytes
	for b := 0; b < nb; b++ {
		x := (*[q8_0Bytes]byte)(w[b*q8_0Bytes:])
		y := (*[q8_0Bytes]byte)(a[b*q8_0Bytes:])
		var sumi int32
		for j := 2; j < q8_0Bytes; j++ {
			sumi += int32(int8(x[j])) * int32(int8(y[j]))
		}
		sum += float32(sumi) * (f16At(x[0:]) * f16At(y[0:]))
	}
	return sum
}

// dotQ4_KQ8_KGo is a Q4_K row against a Q8_K row in the float order of
// llama.cpp's haswell build on Q4_K weights it repacks (q4_K_8x8), where a
// single activation row (decode, and the one-token-at-a-time reference
// logits) goes through ggml_gemv_q4_K_8x8_q8_K: per super-block of 256 the
// exact integer sums sumi = Σ_sub scale·Σ q4·q8 and sumMins = Σ_sub
// min·Σ q8 (from the activations' bsums), then two float32 accumulators,
// sum = fma(float32(sumi), d, sum) and smin = fma(float32(sumMins), dmin,
// smin) with d = f16(x.d)·dy and dmin = f16(x.dmin)·dy (each product
// rounded), and sum - smin at the end. (Its multi-row gemm rounds the
// activations differently; shade is batch-invariant and follows the
// single-row path.)
func dotQ4_KQ8_KGo(w, a []byte) float32 {
	var sum, smin float32
	nb := len(w) / q4_KBytes
	for b := 0; b < nb; b++ {
		x := (*[q4_KBytes]byte)(w[b*q4_KBytes:])
		y := (*[q8_KBytes]byte)(a[b*q8_KBytes:])
		dy := f32At(y[0:])
		scales := (*[kScaleSize]byte)(x[4:])
		qs := x[4+kScaleSize:]
		q8 := (*[qkK]byte)(y[4:])

		var sumMins int32
		var sumi int32
		for g := 0; g < 4; g++ { // 64 values: sub-blocks 2g (low nibbles), 2g+1 (high)
			sc0, m0 := scaleMinK4(2*g, scales)
			sc1, m1 := scaleMinK4(2*g+1, scales)
			q := (*[32]byte)(qs[32*g:])
			lo := (*[32]byte)(q8[64*g:])
			hi := (*[32]byte)(q8[64*g+32:])
			var s0, s1 int32
			for l := 0; l < 32; l++ {
				s0 += int32(q[l]&0xf) * int32(int8(lo[l]))
				s1 += int32(q[l]>>4) * int32(int8(hi[l]))
			}
			sumi += int32(sc0)*s0 + int32(sc1)*s1
			// Each sub-block of 32 spans two bsums of 16.
			bs := y[4+qkK+8*g:]
			sumMins += int32(m0)*(int32(int16(le16(bs[0:])))+int32(int16(le16(bs[2:])))) +
				int32(m1)*(int32(int16(le16(bs[4:])))+int32(int16(le16(bs[6:]))))
		}
		// The conversion rounds each scale product alone, and the adds are
		// fma32, explicitly: left to the compiler, an arm64 build fuses
		// (FMADD) other operations than amd64 and the kernels do.
		d := float32(f16At(x[0:]) * dy)
		dmin := float32(f16At(x[2:]) * dy)
		sum = fma32(float32(sumi), d, sum)
		smin = fma32(float32(sumMins), dmin, smin)
	}
	return sum - smin
}

// dotQ6_KQ8_KGo is ggml_vec_dot_q6_K_q8_K on AVX2 (the haswell build the
// conformance files come from), in its float order: per super-block, eight
// int32 lanes, lane l (0..7) the sum over the eight 32-value chunks of
// scale·Σ q6·q8 over values 4l..4l+3 of the chunk, q6 unsigned (0..63),
// the scale that of the chunk's first 16 values for lanes 0..3, of its
// last 16 for lanes 4..7; then the -32 offset comes off through the bsums,
// sub-blocks 2l and 2l+1 from lane l (ggml's q8sclsub:
// lane l -= 32·(sc[2l]·bsum[2l] + sc[2l+1]·bsum[2l+1])). All exact in
// int32. Then acc[l] = fma(d, float32(lane l), acc[l]) with
// d = dy*f16(x.d), and the result is hsum8(acc).
func dotQ6_KQ8_KGo(w, a []byte) float32 {
	var acc [8]float32
	nb := len(w) / q6_KBytes
	for b := 0; b < nb; b++ {
		x := (*[q6_KBytes]byte)(w[b*q6_KBytes:])
		y := (*[q8_KBytes]byte)(a[b*q8_KBytes:])
		var lane [8]int32
		for h := 0; h < 2; h++ { // halves of 128 values; layout as in dequantizeQ6_K
			ql := (*[64]byte)(x[64*h:])
			qh := (*[32]byte)(x[128+32*h:])
			sc := (*[8]byte)(x[192+8*h:])
			q8 := (*[128]byte)(y[4+128*h:])
			for l := 0; l < 32; l++ { // l in [0,16) uses scales 0,2,4,6; [16,32) uses 1,3,5,7
				half := l / 16
				q1 := int32(ql[l]&0xf | (qh[l]&3)<<4)
				q2 := int32(ql[l+32]&0xf | (qh[l]>>2&3)<<4)
				q3 := int32(ql[l]>>4 | (qh[l]>>4&3)<<4)
				q4 := int32(ql[l+32]>>4 | (qh[l]>>6&3)<<4)
				lane[l/4] += int32(int8(sc[half+0]))*q1*int32(int8(q8[l])) +
					int32(int8(sc[half+2]))*q2*int32(int8(q8[l+32])) +
					int32(int8(sc[half+4]))*q3*int32(int8(q8[l+64])) +
					int32(int8(sc[half+6]))*q4*int32(int8(q8[l+96]))
			}
		}
		for l := 0; l < 8; l++ {
			b0 := int32(int16(le16(y[4+qkK+4*l:])))
			b1 := int32(int16(le16(y[4+qkK+4*l+2:])))
			lane[l] -= 32 * (int32(int8(x[192+2*l]))*b0 + int32(int8(x[192+2*l+1]))*b1)
		}
		d := f32At(y[0:]) * f16At(x[208:])
		fmaLane8(&acc, d, &lane)
	}
	return hsum8(&acc)
}

// dotF16Go is ggml_vec_dot_f16 on F16 weights and activations already
// rounded to F16 (held as float32). Products of two halves are exact in
// float32; they are summed in float64 like ggml's scalar path.
func dotF16Go(w []byte, x []float32) float32 {
	var sum float64
	w = w[:2*len(x)]
	for i, v := range x {
		sum += float64(f16Table[le16(w[2*i:])] * v)
	}
	return float32(sum)
}

// dotBF16Go is ggml_vec_dot_bf16 on BF16 weights and activations already
// rounded to BF16 (held as float32), summed in float64.
func dotBF16Go(w []byte, x []float32) float32 {
	var sum float64
	w = w[:2*len(x)]
	for i, v := range x {
		sum += float64(BF16ToF32(le16(w[2*i:])) * v)
	}
	return float32(sum)
}

// dotF32Go is ggml_vec_dot_f32 on little-endian F32 weights.
func dotF32Go(w []byte, x []float32) float32 {
	if f, ok := floatsOf(w[:4*len(x)]); ok {
		return k.dotF32(f, x)
	}
	var sum float32
	for i, v := range x {
		sum += math.Float32frombits(binary.LittleEndian.Uint32(w[4*i:])) * v
	}
	return sum
}

// floatsOf views b as float32s without copying when b is 4-byte aligned
// (GGUF aligns tensor data to at least 32 bytes; the machine is assumed
// little-endian, as on every GOARCH shade targets).
func floatsOf(b []byte) ([]float32, bool) {
	if len(b) == 0 || uintptr(unsafe.Pointer(&b[0]))%4 != 0 {
		return nil, false
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), len(b)/4), true
}
