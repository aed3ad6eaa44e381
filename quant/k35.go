package quant

import (
	"encoding/binary"
	"math"
)

// Q3_K and Q5_K: block layouts, dequantization, ggml's reference quantizers
// and the Go twins of their dot products with Q8_K activations.
//
//	block_q3_K (110 bytes, 256 values): 32 bytes hmask; 64 bytes qs; 12 bytes
//	    of 6-bit scales for 16 sub-blocks of 16 (see q3kScales); f16 d.
//	    Value i has its low 2 bits in qs[32*(i/128) + i%32] at bit
//	    2*((i%128)/32) and its high bit in hmask[i%32] at bit i/32;
//	    x = d*(scale-32)*(q-4), q the 3 bits (0..7).
//	block_q5_K (176 bytes, 256 values): f16 d; f16 dmin; 12 bytes of 6-bit
//	    scales and mins for 8 sub-blocks of 32 (as Q4_K, scaleMinK4); 32
//	    bytes qh; 128 bytes qs. Value i has its low 4 bits in the nibbles
//	    of qs as Q4_K's and its high bit in qh[i%32] at bit i/32;
//	    x = d*scale*q - dmin*min, q the 5 bits (0..31).
const (
	q3_KBytes = 110
	q5_KBytes = 176
)

// q3kScales unpacks the 16 6-bit scales of a Q3_K block from its 12 packed
// bytes, as ggml's kmask shuffle does, less the offset of 32: scale j has
// its low 4 bits in the low (j < 8) or high (j >= 8) nibble of q[j%8] and
// its high 2 bits in q[8+j%4] at bit 2*(j/4).
func q3kScales(q *[12]byte) (s [16]int8) {
	for j := 0; j < 16; j++ {
		lo := q[j%8] & 0xf
		if j >= 8 {
			lo = q[j%8] >> 4
		}
		s[j] = int8(lo|(q[8+j%4]>>(2*(j/4))&3)<<4) - 32
	}
	return s
}

func dequantizeQ3_K(src []byte, dst []float32) {
	for b := 0; b < len(dst)/qkK; b++ {
		x := (*[q3_KBytes]byte)(src[b*q3_KBytes:])
		y := (*[qkK]float32)(dst[b*qkK:])
		d := f16At(x[108:])
		sc := q3kScales((*[12]byte)(x[96:]))
		for i := 0; i < qkK; i++ {
			q := int32(x[32+32*(i/128)+i%32]>>(2*((i%128)/32))&3) - 4
			if x[i%32]>>(i/32)&1 != 0 {
				q += 4
			}
			dl := float32(d * float32(sc[i/16]))
			y[i] = dl * float32(q)
		}
	}
}

func dequantizeQ5_K(src []byte, dst []float32) {
	for b := 0; b < len(dst)/qkK; b++ {
		x := (*[q5_KBytes]byte)(src[b*q5_KBytes:])
		y := (*[qkK]float32)(dst[b*qkK:])
		d := f16At(x[0:])
		dmin := f16At(x[2:])
		scales := (*[kScaleSize]byte)(x[4:])
		for i := 0; i < qkK; i++ {
			sc, m := scaleMinK4(i/32, scales)
			d1, m1 := float32(d*float32(sc)), float32(dmin*float32(m))
			// The conversion keeps arm64 from fusing the product into
			// the subtraction, so both architectures decode alike.
			y[i] = float32(d1*float32(q5kValue(x, i))) - m1
		}
	}
}

// q5kValue is the 5-bit quant (0..31) of value i of Q5_K block x.
func q5kValue(x *[q5_KBytes]byte, i int) int32 {
	qb := x[48+32*(i/64)+i%32]
	q := int32(qb & 0xf)
	if i%64 >= 32 {
		q = int32(qb >> 4)
	}
	return q | int32(x[16+i%32]>>(i/32)&1)<<4
}

// dotQ3_KQ8_KGo is ggml_vec_dot_q3_K_q8_K on AVX2 (the haswell build the
// conformance files come from), in its float order: per super-block, eight
// int32 lanes, lane l (0..7) the sum over the eight 32-value chunks of
// (scale-32)·Σ q3·q8 over values 4l..4l+3 of the chunk (what VPMADDUBSW,
// VPSUBW of the high-bit part and VPMADDWD by the chunk's scale word pair
// leave in lane l), q3 in [-4, 3] and the scale that of the chunk's first
// 16 values for lanes 0..3, of its last 16 for lanes 4..7; exact in
// int32. Then acc[l] = fma(d, float32(lane l), acc[l]) with
// d = dy*f16(x.d), and the result is hsum8(acc). Summing the lanes as one
// integer and scaling once (ggml's NEON order) rounds differently.
func dotQ3_KQ8_KGo(w, a []byte) float32 {
	var acc [8]float32
	nb := len(w) / q3_KBytes
	for b := 0; b < nb; b++ {
		x := (*[q3_KBytes]byte)(w[b*q3_KBytes:])
		y := (*[q8_KBytes]byte)(a[b*q8_KBytes:])
		sc := q3kScales((*[12]byte)(x[96:]))
		hm := (*[32]byte)(x[0:])
		q8 := (*[qkK]byte)(y[4:])
		var lane [8]int32
		for h := 0; h < 2; h++ { // halves of 128 values
			qs := (*[32]byte)(x[32+32*h:])
			for j := 0; j < 4; j++ { // 32 values: bits 2j of qs, bit 4h+j of hmask
				shift, m := 2*j, byte(1)<<(4*h+j)
				o := 128*h + 32*j
				for l := 0; l < 32; l++ {
					q := int32(qs[l]>>shift&3) - 4*b2i32(hm[l]&m == 0)
					lane[l/4] += int32(sc[o/16+l/16]) * q * int32(int8(q8[o+l]))
				}
			}
		}
		d := f32At(y[0:]) * f16At(x[108:])
		fmaLane8(&acc, d, &lane)
	}
	return hsum8(&acc)
}

func b2i32(b bool) int32 {
	if b {
		return 1
	}
	return 0
}

// dotQ5_KQ8_KGo is ggml_vec_dot_q5_K_q8_K in the order of its AVX2 branch,
// the float steps of llama.cpp's haswell library (the conformance
// reference), which rounding makes visible: per super-block, eight int32
// lanes (lane l: values 4l..4l+3 of every 32-value sub-block times that
// sub-block's scale) each go into their float32 lane as
// fma(d, float32(lane), acc) with d = dy*f16(x.d); the mins go to one
// scalar, summs = fma(dmin, float32(Σ_j min_j*(bsum_2j+bsum_2j+1)), summs)
// with dmin = -dy*f16(x.dmin); the result is hsum8(acc) + summs.
// q5k_order_test.go pins this against a transcription of the intrinsics.
func dotQ5_KQ8_KGo(w, a []byte) float32 {
	var acc [8]float32
	var summs float32
	nb := len(w) / q5_KBytes
	for b := 0; b < nb; b++ {
		x := (*[q5_KBytes]byte)(w[b*q5_KBytes:])
		y := (*[q8_KBytes]byte)(a[b*q8_KBytes:])
		dy := f32At(y[0:])
		scales := (*[kScaleSize]byte)(x[4:])
		qh := (*[32]byte)(x[16:])
		q8 := (*[qkK]byte)(y[4:])

		var lane [8]int32
		var sumMins int32
		for g := 0; g < 4; g++ { // 64 values: sub-blocks 2g (low nibbles), 2g+1 (high)
			sc0, m0 := scaleMinK4(2*g, scales)
			sc1, m1 := scaleMinK4(2*g+1, scales)
			q := (*[32]byte)(x[48+32*g:])
			lo := (*[32]byte)(q8[64*g:])
			hi := (*[32]byte)(q8[64*g+32:])
			for l := 0; l < 32; l++ {
				v0 := int32(q[l]&0xf) | int32(qh[l]>>(2*g)&1)<<4
				v1 := int32(q[l]>>4) | int32(qh[l]>>(2*g+1)&1)<<4
				lane[l/4] += int32(sc0)*v0*int32(int8(lo[l])) + int32(sc1)*v1*int32(int8(hi[l]))
			}
			bs := y[4+qkK+8*g:]
			sumMins += int32(m0)*(int32(int16(le16(bs[0:])))+int32(int16(le16(bs[2:])))) +
				int32(m1)*(int32(int16(le16(bs[4:])))+int32(int16(le16(bs[6:]))))
		}
		d := dy * f16At(x[0:])
		dmin := -dy * f16At(x[2:])
		summs = fma32(dmin, float32(sumMins), summs)
		fmaLane8(&acc, d, &lane)
	}
	return hsum8(&acc) + summs
}

// quantizeQ3_KBlock is ggml's quantize_row_q3_K_ref on one block: each
// sub-block of 16 gets a signed scale from makeQ3Quants, the 16 scales are
// stored as 6-bit multiples (offset 32) of the f16 d, and every value is
// requantized against its stored scale.
func quantizeQ3_KBlock(x *[qkK]float32, y *[q3_KBytes]byte) {
	var L [qkK]int8
	var scales [16]float32
	var maxScale, amax float32
	for j := 0; j < 16; j++ {
		scales[j] = makeQ3Quants(4, (*[16]float32)(x[16*j:]), (*[16]int8)(L[16*j:]))
		if s := abs32(scales[j]); s > amax {
			amax, maxScale = s, scales[j]
		}
	}
	*y = [q3_KBytes]byte{}
	sb := y[96:108]
	if maxScale != 0 {
		iscale := -32 / maxScale
		for j := 0; j < 16; j++ {
			l := int8(nearestInt(iscale * scales[j]))
			l = min(31, max(-32, l)) + 32
			if j < 8 {
				sb[j] = byte(l) & 0xf
			} else {
				sb[j-8] |= (byte(l) & 0xf) << 4
			}
			sb[8+j%4] |= byte(l>>4) << (2 * (j / 4))
		}
		binary.LittleEndian.PutUint16(y[108:], F32ToF16(1/iscale))
	}
	d := f16At(y[108:])
	sc := q3kScales((*[12]byte)(sb))
	for j := 0; j < 16; j++ {
		dq := float32(d * float32(sc[j]))
		if dq == 0 {
			continue // keeps makeQ3Quants' levels, as ggml does
		}
		for i := 16 * j; i < 16*j+16; i++ {
			L[i] = int8(min(3, max(-4, nearestInt(x[i]/dq))) + 4)
		}
	}
	for j := 0; j < qkK; j++ {
		if L[j] > 3 {
			y[j%32] |= 1 << (j / 32)
			L[j] -= 4
		}
	}
	for h := 0; h < 2; h++ {
		for l := 0; l < 32; l++ {
			o := 128*h + l
			y[32+32*h+l] = byte(L[o]) | byte(L[o+32])<<2 | byte(L[o+64])<<4 | byte(L[o+96])<<6
		}
	}
}

// makeQ3Quants is ggml's make_q3_quants(16, nmax, x, L, true): levels
// L[i]+nmax in [0, 2*nmax) for x ≈ scale*L, scale from the value of largest
// magnitude, then up to 5 passes moving single levels while the weighted
// (x²) least-squares fit improves. It returns the fitted scale.
func makeQ3Quants(nmax int32, x *[16]float32, L *[16]int8) float32 {
	var mx, amax float32
	for _, v := range x {
		if abs32(v) > amax {
			amax, mx = abs32(v), v
		}
	}
	if amax < 1e-15 {
		*L = [16]int8{}
		return 0
	}
	iscale := float32(-nmax) / mx
	var sumlx, suml2 float32
	for i, v := range x {
		l := min(nmax-1, max(-nmax, nearestInt(iscale*v)))
		L[i] = int8(l)
		w := float32(v * v)
		sumlx += float32(float32(w*v) * float32(l))
		suml2 += float32(float32(w*float32(l)) * float32(l))
	}
	for try := 0; try < 5; try++ {
		changed := false
		for i, v := range x {
			w := float32(v * v)
			li := float32(L[i])
			slx := sumlx - float32(float32(w*v)*li)
			if slx <= 0 {
				continue
			}
			sl2 := suml2 - float32(float32(w*li)*li)
			nl := min(nmax-1, max(-nmax, nearestInt(float32(v*sl2)/slx)))
			if nl == int32(L[i]) {
				continue
			}
			fl := float32(nl)
			slx += float32(float32(w*v) * fl)
			sl2 += float32(float32(w*fl) * fl)
			if sl2 > 0 && float32(float32(slx*slx)*suml2) > float32(float32(sumlx*sumlx)*sl2) {
				L[i], sumlx, suml2 = int8(nl), slx, sl2
				changed = true
			}
		}
		if !changed {
			break
		}
	}
	for i := range L {
		L[i] += int8(nmax)
	}
	if suml2 > 0 {
		return sumlx / suml2
	}
	return 0
}

// quantizeQ5_KBlock is ggml's quantize_row_q5_K_ref on one block: each
// sub-block of 32 gets a scale and min from makeQKX2Quants (weights
// av_x + |x|), both stored as 6-bit multiples of the f16 d and dmin, and
// every value is requantized against them.
func quantizeQ5_KBlock(x *[qkK]float32, y *[q5_KBytes]byte) {
	*y = [q5_KBytes]byte{}
	var L [qkK]uint8
	quantizeScaleMinK(x, 31, -0.5, 15, (*[4]byte)(y[0:]), (*[kScaleSize]byte)(y[4:]), &L)
	qh, qs := y[16:48], y[48:176]
	for g := 0; g < 4; g++ {
		for l := 0; l < 32; l++ {
			l1, l2 := L[64*g+l], L[64*g+32+l]
			qh[l] |= (l1>>4)<<(2*g) | (l2>>4)<<(2*g+1)
			qs[32*g+l] = l1&0xf | (l2&0xf)<<4
		}
	}
}

// quantizeScaleMinK is what ggml's quantize_row_q4_K_ref and
// quantize_row_q5_K_ref share: each sub-block of 32 gets a scale and a min
// from make_qkx2_quants (levels 0..nmax, weights av_x+|x|, the grid search
// from rmin in nstep steps of 0.1), both are stored as 6-bit multiples of
// the f16 super-block steps written to dm (d, then dmin), and every value is
// requantized against its stored scale and min into L.
func quantizeScaleMinK(x *[qkK]float32, nmax int32, rmin float32, nstep int, dm *[4]byte, sc *[kScaleSize]byte, L *[qkK]uint8) {
	var scales, mins [8]float32
	var maxScale, maxMin float32
	var weights [32]float32
	for j := 0; j < 8; j++ {
		xs := (*[32]float32)(x[32*j:])
		var sumX2 float32
		for _, v := range xs {
			sumX2 += float32(v * v)
		}
		avX := float32(math.Sqrt(float64(sumX2 / 32)))
		for l, v := range xs {
			weights[l] = avX + abs32(v)
		}
		scales[j], mins[j] = makeQKX2Quants(nmax, xs[:], weights[:], L[32*j:32*j+32], rmin, 0.1, nstep, false)
		maxScale = max(maxScale, scales[j])
		maxMin = max(maxMin, mins[j])
	}
	var invScale, invMin float32
	if maxScale > 0 {
		invScale = 63 / maxScale
	}
	if maxMin > 0 {
		invMin = 63 / maxMin
	}
	var ls, lm [8]uint8
	for j := 0; j < 8; j++ {
		ls[j] = min(63, uint8(nearestInt(invScale*scales[j])))
		lm[j] = min(63, uint8(nearestInt(invMin*mins[j])))
	}
	putScaleMinK4(sc, &ls, &lm)
	binary.LittleEndian.PutUint16(dm[0:], F32ToF16(maxScale/63))
	binary.LittleEndian.PutUint16(dm[2:], F32ToF16(maxMin/63))
	d, dmin := f16At(dm[0:]), f16At(dm[2:])
	for j := 0; j < 8; j++ {
		dq := float32(d * float32(ls[j]))
		if dq == 0 {
			continue
		}
		dmj := float32(dmin * float32(lm[j]))
		for i := 32 * j; i < 32*j+32; i++ {
			L[i] = uint8(min(nmax, max(0, nearestInt((x[i]+dmj)/dq))))
		}
	}
}

// makeQKX2Quants is ggml's make_qkx2_quants: levels L in [0, nmax] for
// x ≈ scale*L - min (min ≥ 0 returned as such), first from the range, then
// from nstep+1 weighted least-squares fits at rescaled grids, keeping the
// one of least weighted error: absolute with mad (Q2_K), squared without
// (Q5_K). Products are converted one by one so that no step is fused on
// arm64.
func makeQKX2Quants(nmax int32, x, weights []float32, L []uint8, rmin, rdelta float32, nstep int, mad bool) (scale, theMin float32) {
	n := len(x)
	errOf := func(w, diff float32) float32 {
		if mad {
			return float32(w * abs32(diff))
		}
		return float32(w * float32(diff*diff))
	}
	mn, mx := x[0], x[0]
	sumW := weights[0]
	sumX := float32(sumW * x[0])
	for i := 1; i < n; i++ {
		mn, mx = min(mn, x[i]), max(mx, x[i])
		sumW += weights[i]
		sumX += float32(weights[i] * x[i])
	}
	mn = min(mn, 0)
	if mx == mn {
		clear(L[:n])
		return 0, -mn
	}
	iscale := float32(nmax) / (mx - mn)
	scale = 1 / iscale
	var bestErr float32
	for i := 0; i < n; i++ {
		l := min(nmax, max(0, nearestInt(float32(iscale*(x[i]-mn)))))
		L[i] = uint8(l)
		bestErr += errOf(weights[i], float32(float32(scale*float32(l))+mn)-x[i])
	}
	var aux [32]uint8
	for is := 0; is <= nstep; is++ {
		iscale = float32(float32(rmin+float32(rdelta*float32(is)))+float32(nmax)) / (mx - mn)
		var sumL, sumL2, sumXL float32
		for i := 0; i < n; i++ {
			l := min(nmax, max(0, nearestInt(float32(iscale*(x[i]-mn)))))
			aux[i] = uint8(l)
			wl := float32(weights[i] * float32(l))
			sumL += wl
			sumL2 += float32(wl * float32(l))
			sumXL += float32(wl * x[i])
		}
		D := float32(sumW*sumL2) - float32(sumL*sumL)
		if D <= 0 {
			continue
		}
		thisScale := (float32(sumW*sumXL) - float32(sumX*sumL)) / D
		thisMin := (float32(sumL2*sumX) - float32(sumL*sumXL)) / D
		if thisMin > 0 {
			thisMin = 0
			thisScale = sumXL / sumL2
		}
		var curErr float32
		for i := 0; i < n; i++ {
			curErr += errOf(weights[i], float32(float32(thisScale*float32(aux[i]))+thisMin)-x[i])
		}
		if curErr < bestErr {
			copy(L[:n], aux[:n])
			bestErr, scale, mn = curErr, thisScale, thisMin
		}
	}
	return scale, -mn
}

// hasGemmK reports whether s's gemmK computes weights of type t.
func (s *kernelSet) hasGemmK(t Type) bool {
	return s.gemmK != nil && uint64(t) < 64 && s.gemmKTypes>>t&1 != 0
}

// hasGemmQ8 reports whether s's gemmQ8 computes weights of type t.
func (s *kernelSet) hasGemmQ8(t Type) bool {
	return s.gemmQ8 != nil && uint64(t) < 64 && s.gemmQ8Types>>t&1 != 0
}
