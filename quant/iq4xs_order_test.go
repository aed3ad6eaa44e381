package quant

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
)

// iq4xsLanesRef is ggml_vec_dot_iq4_xs_q8_K's AVX2 branch written out value
// by value, apart from dotIQ4_XSQ8_KGo: value j (0..31) of a sub-block is
// byte j of the 256-bit vector the AVX2 code multiplies (low nibbles then
// high ones), so its product times the sub-block's scale lands in int32
// lane j/4; each super-block adds d*lane to lane's float32 accumulator in
// one rounding, and hsum_float_8 sums the eight at the end.
func iq4xsLanesRef(w, a []byte) float32 {
	var acc [8]float32
	for b := 0; b < len(w)/iq4_XSBytes; b++ {
		blk, act := w[b*iq4_XSBytes:], a[b*q8_KBytes:]
		var lanes [8]int32
		for i := 0; i < qkK; i++ {
			sub, j := i/32, i%32
			q := blk[8+16*sub+j%16]
			if j >= 16 {
				q >>= 4
			}
			scalesH := binary.LittleEndian.Uint16(blk[2:])
			ls := int32(blk[4+sub/2]>>(4*(sub%2))&0xf) | int32(scalesH>>(2*sub)&3)<<4
			lanes[j/4] += (ls - 32) * int32(kvaluesIQ4NL[q&0xf]) * int32(int8(act[4+i]))
		}
		d := F16ToF32(binary.LittleEndian.Uint16(blk)) * math.Float32frombits(binary.LittleEndian.Uint32(act))
		for l := range acc {
			acc[l] = fma32(d, float32(lanes[l]), acc[l])
		}
	}
	// hsum_float_8: upper half onto lower, then lanes 2,3 onto 0,1, then 1
	// onto 0.
	r0, r1, r2, r3 := acc[0]+acc[4], acc[1]+acc[5], acc[2]+acc[6], acc[3]+acc[7]
	return (r0 + r2) + (r1 + r3)
}

// iq4xsIntSumRef is the order shade used before: one exact integer a
// super-block, scaled once and added to a scalar sum.
func iq4xsIntSumRef(w, a []byte) float32 {
	var sum float32
	for b := 0; b < len(w)/iq4_XSBytes; b++ {
		blk, act := w[b*iq4_XSBytes:], a[b*q8_KBytes:]
		var isum int32
		for i := 0; i < qkK; i++ {
			sub, j := i/32, i%32
			q := blk[8+16*sub+j%16]
			if j >= 16 {
				q >>= 4
			}
			isum += (iq4XSScale(blk, sub)) * int32(kvaluesIQ4NL[q&0xf]) * int32(int8(act[4+i]))
		}
		d := f16At(blk) * f32At(act)
		sum += float32(d * float32(isum))
	}
	return sum
}

// TestIQ4XSLaneOrder pins dotIQ4_XSQ8_KGo to ggml's AVX2 eight-lane order:
// bit for bit iq4xsLanesRef on every dot test case, and on rows where the
// integer-sum order rounds differently, every kernel set's dot (and, where
// a set batches IQ4_XS, its gemmK with the row alone and among others)
// gives the lane order's bits, not the integer sum's.
func TestIQ4XSLaneOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	names, ws, as := k2iqDotCases(t, rng, IQ4_XS)
	for i := range names {
		if got, want := dotIQ4_XSQ8_KGo(ws[i], as[i]), iq4xsLanesRef(ws[i], as[i]); !sameFloat(got, want) {
			t.Fatalf("%s: twin %v (%#x), lane order %v (%#x)", names[i], got, math.Float32bits(got), want, math.Float32bits(want))
		}
	}

	sets := append([]kernelSet{genericKernels}, archSets...)
	for _, s := range sets {
		t.Log("set", s.name)
	}
	found := 0
	for try := 0; try < 200 && found < 8; try++ {
		nb := 1 + try%3
		w := encode(t, IQ4_XS, testData(rng, nb*qkK))
		a := quantizeAct(t, Q8_K, testData(rng, nb*qkK))
		want, old := iq4xsLanesRef(w, a), iq4xsIntSumRef(w, a)
		if sameFloat(want, old) {
			continue
		}
		found++
		if found == 1 {
			t.Logf("try %d, %d blocks: lane order %v (%#x), integer sum %v (%#x)", try, nb, want, math.Float32bits(want), old, math.Float32bits(old))
		}
		for _, s := range sets {
			if got := s.dotIQ4_XSQ8_K(w, a); !sameFloat(got, want) {
				t.Fatalf("%s dot, try %d: %v (%#x), lane order %v (%#x), integer sum %v", s.name, try, got, math.Float32bits(got), want, math.Float32bits(want), old)
			}
			if !s.hasGemmK(IQ4_XS) {
				continue
			}
			// The row alone and as row 2 of 6 (others random).
			for _, n := range []int{1, 6} {
				arb := len(a)
				batch := make([]byte, n*arb)
				for i := 0; i < n; i++ {
					copy(batch[i*arb:], quantizeAct(t, Q8_K, testData(rng, nb*qkK)))
				}
				at := min(2, n-1)
				copy(batch[at*arb:], a)
				y := make([]float32, n)
				s.gemmK(IQ4_XS, w, len(w), 0, 1, batch, arb, n, y, 1)
				if !sameFloat(y[at], want) {
					t.Fatalf("%s gemmK n=%d, try %d: %v (%#x), lane order %v (%#x), integer sum %v", s.name, n, try, y[at], math.Float32bits(y[at]), want, math.Float32bits(want), old)
				}
			}
		}
	}
	if found < 8 {
		t.Fatalf("only %d rows where the two orders differ", found)
	}
}
