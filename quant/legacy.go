package quant

import (
	"encoding/binary"
	"math"
)

// The legacy 32-value block types Q4_1, Q5_0, Q5_1, the non-linear IQ4_NL,
// and Q8_1, the activations Q4_1 and Q5_1 pair with, as in ggml-common.h:
//
//	block_q4_1 (20 bytes): f16 d; f16 m; 16 bytes of nibbles (byte j: value
//	    j low, value j+16 high); x = q*d + m.
//	block_q5_0 (22 bytes): f16 d; 4 bytes qh (bit j is the fifth bit of
//	    value j); 16 bytes of nibbles as Q4_1; x = (q-16)*d.
//	block_q5_1 (24 bytes): f16 d; f16 m; qh; nibbles; x = q*d + m.
//	block_iq4_nl (18 bytes): f16 d; nibbles indexing kvaluesIQ4NL (k2iq.go);
//	    x = d*kvaluesIQ4NL[q].
//	block_q8_1 (36 bytes): f16 d; f16 s = d*Σq (d before rounding); 32 int8
//	    q. Only used for activations.
//
// The dot products pair Q4_1 and Q5_1 with Q8_1 (the activations' sum s
// carries the weights' offset m: Σ(q*d+m)*y = d*dy*Σq*qy + m*s) and Q5_0 and
// IQ4_NL with Q8_0, as ggml's CPU backend does.
const (
	qk4_1      = 32
	q4_1Bytes  = 20
	q5_0Bytes  = 22
	q5_1Bytes  = 24
	iq4nlBytes = 18
	q8_1Bytes  = 36
)

func dequantizeQ4_1(src []byte, dst []float32) {
	for b := 0; b < len(dst)/qk4_1; b++ {
		x := (*[q4_1Bytes]byte)(src[b*q4_1Bytes:])
		y := (*[qk4_1]float32)(dst[b*qk4_1:])
		d, m := f16At(x[0:]), f16At(x[2:])
		for j := 0; j < 16; j++ {
			// Rounded before the add so that no build fuses it.
			y[j] = float32(float32(x[4+j]&0xf)*d) + m
			y[j+16] = float32(float32(x[4+j]>>4)*d) + m
		}
	}
}

func dequantizeQ5_0(src []byte, dst []float32) {
	for b := 0; b < len(dst)/qk4_1; b++ {
		x := (*[q5_0Bytes]byte)(src[b*q5_0Bytes:])
		y := (*[qk4_1]float32)(dst[b*qk4_1:])
		d := f16At(x[0:])
		qh := binary.LittleEndian.Uint32(x[2:])
		for j := 0; j < 16; j++ {
			q0 := int32(x[6+j]&0xf|byte(qh>>j&1)<<4) - 16
			q1 := int32(x[6+j]>>4|byte(qh>>(j+16)&1)<<4) - 16
			y[j] = float32(q0) * d
			y[j+16] = float32(q1) * d
		}
	}
}

func dequantizeQ5_1(src []byte, dst []float32) {
	for b := 0; b < len(dst)/qk4_1; b++ {
		x := (*[q5_1Bytes]byte)(src[b*q5_1Bytes:])
		y := (*[qk4_1]float32)(dst[b*qk4_1:])
		d, m := f16At(x[0:]), f16At(x[2:])
		qh := binary.LittleEndian.Uint32(x[4:])
		for j := 0; j < 16; j++ {
			q0 := x[8+j]&0xf | byte(qh>>j&1)<<4
			q1 := x[8+j]>>4 | byte(qh>>(j+16)&1)<<4
			y[j] = float32(float32(q0)*d) + m
			y[j+16] = float32(float32(q1)*d) + m
		}
	}
}

func dequantizeIQ4_NL(src []byte, dst []float32) {
	for b := 0; b < len(dst)/qk4_1; b++ {
		x := (*[iq4nlBytes]byte)(src[b*iq4nlBytes:])
		y := (*[qk4_1]float32)(dst[b*qk4_1:])
		d := f16At(x[0:])
		for j := 0; j < 16; j++ {
			y[j] = d * float32(kvaluesIQ4NL[x[2+j]&0xf])
			y[j+16] = d * float32(kvaluesIQ4NL[x[2+j]>>4])
		}
	}
}

// minMax returns the smallest and largest of x as ggml's Q4_1 and Q5_1
// quantizers find them (NaNs are skipped).
func minMax(x []float32) (lo, hi float32) {
	lo, hi = math.MaxFloat32, -math.MaxFloat32
	for _, v := range x {
		if v < lo {
			lo = v
		}
		if v > hi {
			hi = v
		}
	}
	return lo, hi
}

// signedMax returns the value of largest magnitude in x, the first if
// several tie, as ggml's Q4_0 and Q5_0 quantizers pick it.
func signedMax(x []float32) (amax, mx float32) {
	for _, v := range x {
		if amax < abs32(v) {
			amax, mx = abs32(v), v
		}
	}
	return amax, mx
}

// quantizeQ4_1 is ggml's quantize_row_q4_1_ref: d = (max-min)/15, m = min,
// q = min(15, trunc((x-min)/d + 0.5)).
func quantizeQ4_1(x []float32, dst []byte) {
	for b := 0; b < len(x)/qk4_1; b++ {
		xb := (*[qk4_1]float32)(x[b*qk4_1:])
		y := (*[q4_1Bytes]byte)(dst[b*q4_1Bytes:])
		lo, hi := minMax(xb[:])
		d := (hi - lo) / 15
		var id float32
		if d != 0 {
			id = 1 / d
		}
		binary.LittleEndian.PutUint16(y[0:], F32ToF16(d))
		binary.LittleEndian.PutUint16(y[2:], F32ToF16(lo))
		for j := 0; j < 16; j++ {
			q0 := min(15, int32(float32((xb[j]-lo)*id)+0.5))
			q1 := min(15, int32(float32((xb[j+16]-lo)*id)+0.5))
			y[4+j] = byte(q0) | byte(q1)<<4
		}
	}
}

// quantizeQ5_0 is ggml's quantize_row_q5_0_ref: the value of largest
// magnitude maps to -16, d = max/-16, q = min(31, trunc(x/d + 16.5)).
func quantizeQ5_0(x []float32, dst []byte) {
	for b := 0; b < len(x)/qk4_1; b++ {
		xb := (*[qk4_1]float32)(x[b*qk4_1:])
		y := (*[q5_0Bytes]byte)(dst[b*q5_0Bytes:])
		_, mx := signedMax(xb[:])
		d := mx / -16
		var id float32
		if d != 0 {
			id = 1 / d
		}
		binary.LittleEndian.PutUint16(y[0:], F32ToF16(d))
		var qh uint32
		for j := 0; j < 16; j++ {
			q0 := byte(min(31, int32(float32(xb[j]*id)+16.5)))
			q1 := byte(min(31, int32(float32(xb[j+16]*id)+16.5)))
			y[6+j] = q0&0xf | q1<<4
			qh |= uint32(q0>>4&1)<<j | uint32(q1>>4&1)<<(j+16)
		}
		binary.LittleEndian.PutUint32(y[2:], qh)
	}
}

// quantizeQ5_1 is ggml's quantize_row_q5_1_ref: d = (max-min)/31, m = min,
// q = trunc((x-min)/d + 0.5), at most 31 since d rounds the span's top to 31.
func quantizeQ5_1(x []float32, dst []byte) {
	for b := 0; b < len(x)/qk4_1; b++ {
		xb := (*[qk4_1]float32)(x[b*qk4_1:])
		y := (*[q5_1Bytes]byte)(dst[b*q5_1Bytes:])
		lo, hi := minMax(xb[:])
		d := (hi - lo) / 31
		var id float32
		if d != 0 {
			id = 1 / d
		}
		binary.LittleEndian.PutUint16(y[0:], F32ToF16(d))
		binary.LittleEndian.PutUint16(y[2:], F32ToF16(lo))
		var qh uint32
		for j := 0; j < 16; j++ {
			q0 := byte(int32(float32((xb[j]-lo)*id) + 0.5))
			q1 := byte(int32(float32((xb[j+16]-lo)*id) + 0.5))
			y[8+j] = q0&0xf | q1<<4
			qh |= uint32(q0>>4&1)<<j | uint32(q1>>4&1)<<(j+16)
		}
		binary.LittleEndian.PutUint32(y[4:], qh)
	}
}

// quantizeQ8_1 encodes activations as llama.cpp's x86 CPU backend does
// (quantize_row_q8_1 on AVX2), for the reason and with the d and quants of
// quantizeQ8_0Acts; s = d*Σq with d before its rounding to F16.
func quantizeQ8_1(x []float32, dst []byte) {
	for b := 0; b < len(x)/qk4_1; b++ {
		y := (*[q8_1Bytes]byte)(dst[b*q8_1Bytes:])
		d, sum := quantizeActsBlock((*[qk4_1]float32)(x[b*qk4_1:]), (*[qk4_1]byte)(y[4:]))
		binary.LittleEndian.PutUint16(y[0:], F32ToF16(d))
		binary.LittleEndian.PutUint16(y[2:], F32ToF16(d*float32(sum)))
	}
}

// iq4nlTries is how far quantizeIQ4_NL moves the inverse scale's numerator
// from 127 in whole steps, as llama-quantize calls ggml (quantize_iq4_nl,
// ntry 7).
const iq4nlTries = 7

// quantizeIQ4_NL is ggml's quantize_iq4_nl without an importance matrix
// (what llama-quantize writes when given none): per block, weights x², a
// first scale from the largest magnitude, then the least-squares scale
// d = Σwqx/Σwq² for the levels picked at each inverse scale (t-127)/max,
// t in [-7, 7], keeping the one that explains most (Σwqx²/Σwq²); the values
// are then picked again against the kept scale.
func quantizeIQ4_NL(x []float32, dst []byte) {
	for b := 0; b < len(x)/qk4_1; b++ {
		quantizeIQ4_NLBlock((*[qk4_1]float32)(x[b*qk4_1:]), (*[iq4nlBytes]byte)(dst[b*iq4nlBytes:]))
	}
}

func quantizeIQ4_NLBlock(xb *[qk4_1]float32, y *[iq4nlBytes]byte) {
	var w [qk4_1]float32
	for j, v := range xb {
		w[j] = v * v
	}
	amax, mx := signedMax(xb[:])
	var d float32
	if amax >= 1e-15 { // ggml's GROUP_MAX_EPS: below it the block is zero
		// sums returns Σwqx and Σwq² for the levels nearest id*x (id*x
		// rounded first, here and below, so that no build fuses it into
		// bestIndexIQ4's subtractions).
		sums := func(id float32) (sqx, sq2 float32) {
			for j, v := range xb {
				q := float32(kvaluesIQ4NL[bestIndexIQ4(float32(id*v))])
				wq := w[j] * q
				// Each product rounded alone, so that no build fuses it
				// into the sum.
				sqx += float32(wq * v)
				sq2 += float32(wq * q)
			}
			return sqx, sq2
		}
		d = -mx / float32(kvaluesIQ4NL[0])
		sqx, sq2 := sums(1 / d)
		d = sqx / sq2
		best := d * sqx
		for t := -iq4nlTries; t <= iq4nlTries; t++ {
			sqx, sq2 := sums(float32(t+int(kvaluesIQ4NL[0])) / mx)
			if sq2 > 0 && float32(sqx*sqx) > float32(best*sq2) {
				d = sqx / sq2
				best = d * sqx
			}
		}
	}
	binary.LittleEndian.PutUint16(y[0:], F32ToF16(d))
	var id float32
	if d != 0 {
		id = 1 / d
	}
	for j := 0; j < 16; j++ {
		y[2+j] = bestIndexIQ4(float32(id*xb[j])) | bestIndexIQ4(float32(id*xb[j+16]))<<4
	}
}

// The dot products compute the float order of llama.cpp's x86 CPU backend
// (AVX2, FMA), since that is what the conformance pack's references were
// computed with: a scalar running sum of rounded products, block by block,
// rounds differently often enough to put whole rows of logits 0.02-0.05 std
// off, while these orders leave the rows exact. Per block of 32 values:
//
//   - the weights decode to integers q[0..31]: element j from the low
//     nibble of byte j, element j+16 from its high nibble; for Q5_0 and
//     Q5_1 bit j of qh is the fifth bit of element j (bit j+16 that of
//     element j+16), less 16 for Q5_0; IQ4_NL's are kvaluesIQ4NL[nibble].
//   - lane l (0..7) is s_l = Σ_{e=4l..4l+3} q[e]*y.qs[e], an exact int32
//     (what VPMADDUBSW+VPMADDWD or VPDPBUSD leave in lane l of a YMM
//     register), and float32(s_l) is exact too.
//   - the scale d = f16(x.d)*f16(y.d) is exact in float32 (two 11-bit
//     significands), so the order of its factors does not matter.
//
// Each accumulation step below is one fused multiply-add, rounded once
// (VFMADD231PS/SS, fma32 here):
//
//   - Q5_0·Q8_0 (ggml_vec_dot_q5_0_q8_0; llamafile's tinyBLAS for batches,
//     the same order): eight float32 lanes acc, zero at first;
//     acc[l] = fma(d, s_l, acc[l]) block after block; the result is
//     hsum8(acc).
//   - Q4_1·Q8_1 and Q5_1·Q8_1 (ggml_vec_dot_q4_1_q8_1, _q5_1_q8_1): acc
//     as Q5_0's, and a scalar summs += f16(x.m)*f16(y.s) block after block
//     (exact products, so fused or not is the same); the result is
//     hsum8(acc) + summs.
//   - IQ4_NL·Q8_0: llama.cpp repacks IQ4_NL matrices of a multiple of 8
//     rows for AVX2 (iq4_nl_8x8, ggml_gemv/gemm_iq4_nl_8x8_q8_0), and those
//     keep one float32 per output: sum = fma(float32(Σ_e q[e]*y.qs[e]), d,
//     sum) block after block. This, not ggml_vec_dot_iq4_nl_q8_0's two
//     accumulators of lanes (blocks in pairs, a scalar odd block) nor
//     tinyBLAS's one accumulator of lanes, is what makes the conformance
//     pack's IQ4_NL rows exact. shade uses it for every IQ4_NL matrix,
//     whatever its rows (llama.cpp would use those other two orders for a
//     matrix it does not repack).
//
// hsum8 is ggml's hsum_float_8: r_i = acc[i+4]+acc[i] for i < 4, then
// (r0+r2) + (r1+r3).

// hsum8 adds acc's lanes in hsum_float_8's order: the upper half onto the
// lower, the upper pair of that onto the lower, then the two left.
func hsum8(acc *[8]float32) float32 {
	r0, r1 := acc[4]+acc[0], acc[5]+acc[1]
	r2, r3 := acc[6]+acc[2], acc[7]+acc[3]
	return (r0 + r2) + (r1 + r3)
}

// fmaLanes adds d times the block's eight lane sums of q·qy (qy the 32
// int8 quants of a Q8_0 or Q8_1 block) to acc, one rounding a lane.
func fmaLanes(acc *[8]float32, d float32, q *[qk4_1]int32, qy []byte) {
	var lane [8]int32
	for e := range q {
		lane[e/4] += q[e] * int32(int8(qy[e]))
	}
	fmaLane8(acc, d, &lane)
}

// fmaLane8 adds d times each of eight integer lane sums to its float32
// lane, one fused rounding a lane: the step of every ggml AVX2 dot that
// keeps eight lanes (_mm256_fmadd_ps of the converted int32 lanes).
func fmaLane8(acc *[8]float32, d float32, lane *[8]int32) {
	for l := range acc {
		acc[l] = fma32(d, float32(lane[l]), acc[l])
	}
}

// dotQ4_1Q8_1Go is ggml_vec_dot_q4_1_q8_1 on AVX2 (see above).
func dotQ4_1Q8_1Go(w, a []byte) float32 {
	var acc [8]float32
	var summs float32
	var q [qk4_1]int32
	for b := 0; b < len(w)/q4_1Bytes; b++ {
		x := (*[q4_1Bytes]byte)(w[b*q4_1Bytes:])
		y := (*[q8_1Bytes]byte)(a[b*q8_1Bytes:])
		for j := 0; j < 16; j++ {
			q[j], q[j+16] = int32(x[4+j]&0xf), int32(x[4+j]>>4)
		}
		// Rounded alone: exact anyway, and no build may fuse it.
		summs += float32(f16At(x[2:]) * f16At(y[2:]))
		fmaLanes(&acc, f16At(x[0:])*f16At(y[0:]), &q, y[4:])
	}
	return hsum8(&acc) + summs
}

// dotQ5_0Q8_0Go is ggml_vec_dot_q5_0_q8_0 on AVX2 (see above).
func dotQ5_0Q8_0Go(w, a []byte) float32 {
	var acc [8]float32
	var q [qk4_1]int32
	for b := 0; b < len(w)/q5_0Bytes; b++ {
		x := (*[q5_0Bytes]byte)(w[b*q5_0Bytes:])
		y := (*[q8_0Bytes]byte)(a[b*q8_0Bytes:])
		qh := binary.LittleEndian.Uint32(x[2:])
		for j := 0; j < 16; j++ {
			q[j] = int32(x[6+j]&0xf|byte(qh>>j&1)<<4) - 16
			q[j+16] = int32(x[6+j]>>4|byte(qh>>(j+16)&1)<<4) - 16
		}
		fmaLanes(&acc, f16At(x[0:])*f16At(y[0:]), &q, y[2:])
	}
	return hsum8(&acc)
}

// dotQ5_1Q8_1Go is ggml_vec_dot_q5_1_q8_1 on AVX2 (see above).
func dotQ5_1Q8_1Go(w, a []byte) float32 {
	var acc [8]float32
	var summs float32
	var q [qk4_1]int32
	for b := 0; b < len(w)/q5_1Bytes; b++ {
		x := (*[q5_1Bytes]byte)(w[b*q5_1Bytes:])
		y := (*[q8_1Bytes]byte)(a[b*q8_1Bytes:])
		qh := binary.LittleEndian.Uint32(x[4:])
		for j := 0; j < 16; j++ {
			q[j] = int32(x[8+j]&0xf | byte(qh>>j&1)<<4)
			q[j+16] = int32(x[8+j]>>4 | byte(qh>>(j+16)&1)<<4)
		}
		summs += float32(f16At(x[2:]) * f16At(y[2:]))
		fmaLanes(&acc, f16At(x[0:])*f16At(y[0:]), &q, y[4:])
	}
	return hsum8(&acc) + summs
}

// dotIQ4_NLQ8_0Go is IQ4_NL·Q8_0 as llama.cpp's repacked x86 kernels
// compute it (see above).
func dotIQ4_NLQ8_0Go(w, a []byte) float32 {
	var sum float32
	for b := 0; b < len(w)/iq4nlBytes; b++ {
		x := (*[iq4nlBytes]byte)(w[b*iq4nlBytes:])
		y := (*[q8_0Bytes]byte)(a[b*q8_0Bytes:])
		var s int32
		for j := 0; j < 16; j++ {
			s += int32(kvaluesIQ4NL[x[2+j]&0xf])*int32(int8(y[2+j])) +
				int32(kvaluesIQ4NL[x[2+j]>>4])*int32(int8(y[18+j]))
		}
		sum = fma32(f16At(x[0:])*f16At(y[0:]), float32(s), sum)
	}
	return sum
}
