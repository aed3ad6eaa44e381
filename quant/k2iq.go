package quant

import "encoding/binary"

// Q2_K and IQ4_XS: the small K-quant and the non-linear 4-bit type, both
// dotted with Q8_K activations as in ggml.
//
//	block_q2_K (84 bytes, 256 values): 16 scale bytes, one per 16 values
//	    (low nibble scale, high nibble min); 64 bytes of 2-bit quants; f16 d;
//	    f16 dmin. Half h (128 values) uses qs bytes 32h..32h+31: value
//	    128h+32j+l is bits 2j..2j+1 of byte 32h+l; x = d*scale*q - dmin*min.
//	block_iq4_xs (136 bytes, 256 values): f16 d; u16 scales_h; 4 bytes
//	    scales_l; 128 bytes of nibbles. Sub-block ib (32 values) has the
//	    6-bit scale ls = scales_l nibble ib | (bits 2ib..2ib+1 of scales_h)
//	    << 4 and uses qs bytes 16ib..16ib+15, value l in the low nibble of
//	    byte l and value 16+l in its high nibble; x = d*(ls-32)*kvaluesIQ4NL[q].
const (
	q2_KBytes   = 84
	iq4_XSBytes = 136
)

// kvaluesIQ4NL is ggml's kvalues_iq4nl: the 16 levels of IQ4_NL and IQ4_XS,
// denser near zero where weights cluster.
var kvaluesIQ4NL = [16]int8{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}

// iq4XSScale returns sub-block ib's scale ls-32 (-32..31) of an IQ4_XS block.
func iq4XSScale(x []byte, ib int) int32 {
	h := le16(x[2:])
	lo := x[4+ib/2] >> (4 * (ib % 2)) & 0xf
	return int32(lo|byte(h>>(2*ib)&3)<<4) - 32
}

func dequantizeQ2_K(src []byte, dst []float32) {
	for b := 0; b < len(dst)/qkK; b++ {
		x := (*[q2_KBytes]byte)(src[b*q2_KBytes:])
		y := (*[qkK]float32)(dst[b*qkK:])
		d, dmin := f16At(x[80:]), f16At(x[82:])
		for i := 0; i < qkK; i++ {
			h, j, l := i/128, i%128/32, i%32
			sc := x[i/16]
			q := x[16+32*h+l] >> (2 * j) & 3
			// ggml's dl*q - ml, every product rounded alone (no FMSUB
			// on arm64).
			dl, ml := float32(d*float32(sc&0xf)), float32(dmin*float32(sc>>4))
			y[i] = float32(dl*float32(q)) - ml
		}
	}
}

func dequantizeIQ4_XS(src []byte, dst []float32) {
	for b := 0; b < len(dst)/qkK; b++ {
		x := (*[iq4_XSBytes]byte)(src[b*iq4_XSBytes:])
		y := (*[qkK]float32)(dst[b*qkK:])
		d := f16At(x[0:])
		for ib := 0; ib < 8; ib++ {
			dl := d * float32(iq4XSScale(x[:], ib))
			qs := x[8+16*ib:]
			for l := 0; l < 16; l++ {
				y[32*ib+l] = dl * float32(kvaluesIQ4NL[qs[l]&0xf])
				y[32*ib+16+l] = dl * float32(kvaluesIQ4NL[qs[l]>>4])
			}
		}
	}
}

// dotQ2_KQ8_KGo is ggml_vec_dot_q2_K_q8_K in the float order of its AVX2
// branch (ggml-cpu's x86 quants.c), the build the conformance pack comes
// from: eight float32 lanes acc, zero at first, and per super-block, with
// d = dy*f16(x.d) and dmin = -dy*f16(x.dmin) (float32 products):
//
//   - prod_l = min[2l]*bsum[2l] + min[2l+1]*bsum[2l+1] (mins the high
//     nibbles of the scale bytes, bsums Q8_K's 16 sums of 16),
//     acc[l] = fma(dmin, prod_l, acc[l]);
//   - sumi_l = Σ over the 8 chunks of 32 values (half h, shift j) of
//     scale*q2*q8 for bytes 4l..4l+3 of the chunk (lanes 0..3 the first 16
//     bytes, sub-block scale x.scales[8h+2j]&15, lanes 4..7 the second,
//     scale x.scales[8h+2j+1]&15), acc[l] = fma(d, sumi_l, acc[l]);
//
// and the result is hsum8(acc). The integer lane sums are exact for any
// bytes (|prod_l| ≤ 2·15·2^15, |sumi_l| ≤ 8·4·3·128·15, both exact in
// float32 too), so only the float steps set the bits, and these are
// ggml's: one integer a super-block scaled once, as before, differs from
// llama.cpp's rows in the last bits.
func dotQ2_KQ8_KGo(w, a []byte) float32 {
	var acc [8]float32
	nb := len(w) / q2_KBytes
	for b := 0; b < nb; b++ {
		x := (*[q2_KBytes]byte)(w[b*q2_KBytes:])
		y := (*[q8_KBytes]byte)(a[b*q8_KBytes:])
		dy := f32At(y[0:])
		d := dy * f16At(x[80:])
		dmin := -dy * f16At(x[82:])
		for l := 0; l < 8; l++ {
			prod := int32(x[2*l]>>4)*int32(int16(le16(y[4+qkK+4*l:]))) +
				int32(x[2*l+1]>>4)*int32(int16(le16(y[4+qkK+4*l+2:])))
			acc[l] = fma32(dmin, float32(prod), acc[l])
		}
		var sumi [8]int32
		for h := 0; h < 2; h++ {
			q2 := (*[32]byte)(x[16+32*h:])
			for j := 0; j < 4; j++ {
				q8 := (*[32]byte)(y[4+128*h+32*j:])
				for l := 0; l < 32; l++ {
					sc := int32(x[8*h+2*j+l/16] & 0xf)
					sumi[l/4] += sc * int32(q2[l]>>(2*j)&3) * int32(int8(q8[l]))
				}
			}
		}
		fmaLane8(&acc, d, &sumi)
	}
	return hsum8(&acc)
}

// dotIQ4_XSQ8_KGo is ggml_vec_dot_iq4_xs_q8_K as llama.cpp's x86 (AVX2)
// build computes it, the reference shade's logits are checked against: a
// super-block's products go into eight exact int32 lanes, lane l holding
// values 4l..4l+3 of every 32-value sub-block (0..15 from the low nibbles,
// 16..31 from the high ones) times the sub-block's scale ls-32; each lane
// is scaled by d = f16(d)*dy and added to its own float32 accumulator in
// one fused step, and the eight are summed once at the end (hsum8).
// Summing one integer a super-block and scaling it once (the generic C
// order) rounds differently, so it is not used.
func dotIQ4_XSQ8_KGo(w, a []byte) float32 {
	var acc [8]float32
	nb := len(w) / iq4_XSBytes
	for b := 0; b < nb; b++ {
		x := (*[iq4_XSBytes]byte)(w[b*iq4_XSBytes:])
		y := (*[q8_KBytes]byte)(a[b*q8_KBytes:])
		var lane [8]int32
		for ib := 0; ib < 8; ib++ {
			qs := (*[16]byte)(x[8+16*ib:])
			q8 := (*[32]byte)(y[4+32*ib:])
			sc := iq4XSScale(x[:], ib)
			for l := 0; l < 16; l++ {
				lane[l/4] += sc * int32(int8(q8[l])) * int32(kvaluesIQ4NL[qs[l]&0xf])
				lane[4+l/4] += sc * int32(int8(q8[16+l])) * int32(kvaluesIQ4NL[qs[l]>>4])
			}
		}
		d := f16At(x[0:]) * f32At(y[0:])
		fmaLane8(&acc, d, &lane)
	}
	return hsum8(&acc)
}

// quantizeQ2_KBlock is ggml's quantize_row_q2_K_ref (the quantizer llama.cpp
// uses without an importance matrix): each sub-block of 16 gets a scale and
// min from makeQKX2Quants' search (weights |x|, absolute error), both stored
// as 4-bit multiples of the f16 super-block steps d and dmin, and every
// value is requantized against the stored pair.
func quantizeQ2_KBlock(x *[qkK]float32, y *[q2_KBytes]byte) {
	var L [qkK]uint8
	var scales, mins [16]float32
	var maxScale, maxMin float32
	for j := 0; j < 16; j++ {
		xs := (*[16]float32)(x[16*j:])
		var w [16]float32
		for l := range w {
			w[l] = abs32(xs[l])
		}
		scales[j], mins[j] = makeQKX2Quants(3, xs[:], w[:], L[16*j:16*j+16], -0.5, 0.1, 15, true)
		maxScale = max(maxScale, scales[j])
		maxMin = max(maxMin, mins[j])
	}
	*y = [q2_KBytes]byte{}
	sc := y[:16]
	if maxScale > 0 {
		iscale := 15 / maxScale
		for j := range sc {
			sc[j] = uint8(nearestInt(iscale * scales[j]))
		}
		binary.LittleEndian.PutUint16(y[80:], F32ToF16(maxScale/15))
	}
	if maxMin > 0 {
		iscale := 15 / maxMin
		for j := range sc {
			sc[j] |= uint8(nearestInt(iscale*mins[j])) << 4
		}
		binary.LittleEndian.PutUint16(y[82:], F32ToF16(maxMin/15))
	}
	d, dmin := f16At(y[80:]), f16At(y[82:])
	for j := 0; j < 16; j++ {
		dq := d * float32(sc[j]&0xf)
		if dq == 0 {
			continue // the search's quants stay, as in ggml
		}
		dm := dmin * float32(sc[j]>>4)
		for i := 16 * j; i < 16*j+16; i++ {
			L[i] = uint8(min(3, max(0, nearestInt((x[i]+dm)/dq))))
		}
	}
	qs := y[16:80]
	for h := 0; h < 2; h++ {
		for l := 0; l < 32; l++ {
			q := L[128*h+l:]
			qs[32*h+l] = q[0] | q[32]<<2 | q[64]<<4 | q[96]<<6
		}
	}
}

// quantizeIQ4_XSBlock is ggml's quantize_iq4_xs without an importance
// matrix (quantize_row_iq4_nl_impl with 32-value sub-blocks and ntry 7):
// each sub-block's scale is the best weighted (x²) least-squares fit over
// 16 starting inverse scales, the 8 scales are stored as 6-bit multiples
// of d = -max/32 (the scale of largest magnitude maps to -32), and every
// value is requantized to its nearest level under its stored scale.
func quantizeIQ4_XSBlock(x *[qkK]float32, y *[iq4_XSBytes]byte) {
	const ntry = 7
	var scales [8]float32
	var maxScale, amaxScale float32
	for ib := 0; ib < 8; ib++ {
		xb := x[32*ib : 32*ib+32]
		var amax, mx float32
		for _, v := range xb {
			if abs32(v) > amax {
				amax, mx = abs32(v), v
			}
		}
		if amax < 1e-15 {
			continue // scale 0
		}
		id := 1 / (-mx / float32(kvaluesIQ4NL[0]))
		var sumQX, sumQ2 float32
		for _, v := range xb {
			q := float32(kvaluesIQ4NL[bestIndexIQ4(float32(id*v))])
			wq := float32(float32(v*v) * q)
			sumQX += float32(wq * v)
			sumQ2 += float32(wq * q)
		}
		d := sumQX / sumQ2
		best := d * sumQX
		for itry := -ntry; itry <= ntry; itry++ {
			id := (float32(itry) + float32(kvaluesIQ4NL[0])) / mx
			sumQX, sumQ2 = 0, 0
			for _, v := range xb {
				q := float32(kvaluesIQ4NL[bestIndexIQ4(float32(id*v))])
				wq := float32(float32(v*v) * q)
				sumQX += float32(wq * v)
				sumQ2 += float32(wq * q)
			}
			if sumQ2 > 0 && float32(sumQX*sumQX) > float32(best*sumQ2) {
				d = sumQX / sumQ2
				best = d * sumQX
			}
		}
		scales[ib] = d
		if abs32(d) > amaxScale {
			amaxScale, maxScale = abs32(d), d
		}
	}
	*y = [iq4_XSBytes]byte{}
	d := -maxScale / 32
	binary.LittleEndian.PutUint16(y[0:], F32ToF16(d))
	var id float32
	if d != 0 {
		id = 1 / d
	}
	var L [qkK]uint8
	var sh uint16
	for ib := 0; ib < 8; ib++ {
		l := min(31, max(-32, nearestInt(id*scales[ib])))
		dl := d * float32(l)
		var idl float32
		if dl != 0 {
			idl = 1 / dl
		}
		for j := 32 * ib; j < 32*ib+32; j++ {
			L[j] = bestIndexIQ4(float32(idl * x[j]))
		}
		u := uint8(l + 32)
		y[4+ib/2] |= (u & 0xf) << (4 * (ib % 2))
		sh |= uint16(u>>4) << (2 * ib)
	}
	binary.LittleEndian.PutUint16(y[2:], sh)
	for ib := 0; ib < 8; ib++ {
		for j := 0; j < 16; j++ {
			y[8+16*ib+j] = L[32*ib+j] | L[32*ib+16+j]<<4
		}
	}
}

// bestIndexIQ4 is ggml's best_index_int8 on kvaluesIQ4NL: the index of the
// level nearest v, the upper one on a tie; NaN maps to the top level.
func bestIndexIQ4(v float32) uint8 {
	if v <= float32(kvaluesIQ4NL[0]) {
		return 0
	}
	if !(v < float32(kvaluesIQ4NL[15])) {
		return 15
	}
	lo, hi := 0, 15
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if v < float32(kvaluesIQ4NL[mid]) {
			hi = mid
		} else {
			lo = mid
		}
	}
	if v-float32(kvaluesIQ4NL[hi-1]) < float32(kvaluesIQ4NL[hi])-v {
		return uint8(hi - 1)
	}
	return uint8(hi)
}
