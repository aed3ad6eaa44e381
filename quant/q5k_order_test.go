package quant

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// More AVX2 intrinsics, for q5KAVX2Steps (the others are in
// q2k_order_test.go).

func mmSlliEpi16(a ymm, n uint) (r ymm) {
	for k := 0; k < 16; k++ {
		r.setW(k, int16(uint16(a.w(k))<<n))
	}
	return r
}

func mmAddEpi8(a, b ymm) (r ymm) {
	for i := range r {
		r[i] = a[i] + b[i]
	}
	return r
}

// mmCvtepu8Epi16 zero-extends the 16 bytes at a[0:16] to words.
func mmCvtepu8Epi16(a ymm) (r ymm) {
	for k := 0; k < 16; k++ {
		r.setW(k, int16(a[k]))
	}
	return r
}

// mmHaddEpi16x128 is _mm_hadd_epi16 on the low 128 bits of a and b: the
// pair sums of a's eight words, then b's, wrapping.
func mmHaddEpi16x128(a, b ymm) (r ymm) {
	for k := 0; k < 4; k++ {
		r.setW(k, a.w(2*k)+a.w(2*k+1))
		r.setW(4+k, b.w(2*k)+b.w(2*k+1))
	}
	return r
}

// fmaf is C's fmaf (a*b+c rounded once), in math/big.
func fmaf(a, b, c float32) float32 {
	x := new(big.Float).SetPrec(1000).SetFloat64(float64(a))
	x.Mul(x, new(big.Float).SetFloat64(float64(b)))
	x.Add(x, new(big.Float).SetFloat64(float64(c)))
	f, _ := x.Float32()
	return f
}

// q5KAVX2Steps is the AVX2 branch of ggml_vec_dot_q5_K_q8_K (ggml-cpu's
// x86 quants.c, the build of the conformance pack) transcribed intrinsic
// by intrinsic on emulated registers, sharing no code with dotQ5_KQ8_KGo.
// `summs += dmin * _mm_extract_epi32(hsum, 0)` is contracted to one fma
// in that build. (Checked once, 2026-12-05: that library's own
// ggml_vec_dot_q5_K_q8_K, called from C on 300 random rows, gave
// dotQ5_KQ8_KGo's bits on all of them.)
func q5KAVX2Steps(w, a []byte) float32 {
	m4 := mmSet1Epi8(0xf)
	mone := mmSet1Epi8(1)
	var acc ymm
	var summs float32
	for i := 0; i < len(w)/q5_KBytes; i++ {
		x := w[i*q5_KBytes : (i+1)*q5_KBytes]
		y := a[i*q8_KBytes : (i+1)*q8_KBytes]
		yd := math.Float32frombits(binary.LittleEndian.Uint32(y))
		d := F16ToF32(binary.LittleEndian.Uint16(x[0:])) * yd
		dmin := -yd * F16ToF32(binary.LittleEndian.Uint16(x[2:]))

		// The kmask shuffle of the 12 scale bytes into utmp[0..3]: scales
		// 0..7 in the first 8 bytes, mins 0..7 in the last 8.
		var utmp [4]uint32
		for k := 0; k < 3; k++ {
			utmp[k] = binary.LittleEndian.Uint32(x[4+4*k:])
		}
		const kmask1, kmask2, kmask3 = 0x3f3f3f3f, 0x0f0f0f0f, 0x03030303
		utmp[3] = ((utmp[2] >> 4) & kmask2) | (((utmp[1] >> 6) & kmask3) << 4)
		uaux := utmp[1] & kmask1
		utmp[1] = (utmp[2] & kmask2) | (((utmp[0] >> 6) & kmask3) << 4)
		utmp[2] = uaux
		utmp[0] &= kmask1
		var packed ymm
		for k := range utmp {
			binary.LittleEndian.PutUint32(packed[4*k:], utmp[k])
		}
		minsAndScales := mmCvtepu8Epi16(packed)

		var q8sums, q8sumsHi, minsHi ymm
		copy(q8sums[:], y[4+qkK:4+qkK+32])
		copy(q8sumsHi[:16], q8sums[16:])
		q8s := mmHaddEpi16x128(q8sums, q8sumsHi)
		copy(minsHi[:16], minsAndScales[16:])
		prod := mmMaddEpi16(minsHi, q8s) // lanes 0..3 only matter
		hsum := prod.d(0) + prod.d(1) + prod.d(2) + prod.d(3)
		summs = fmaf(dmin, float32(hsum), summs)

		var scales ymm
		copy(scales[:16], minsAndScales[:16])
		copy(scales[16:], minsAndScales[:16])

		var hbits ymm
		copy(hbits[:], x[16:48])
		hmask := mone
		var sumi ymm
		bit := uint(0)
		for j := 0; j < qkK/64; j++ {
			scale0 := mmShuffleEpi8(scales, scaleShuffleK4(2*j))
			scale1 := mmShuffleEpi8(scales, scaleShuffleK4(2*j+1))
			var q5bits ymm
			copy(q5bits[:], x[48+32*j:])
			q5l0 := mmAnd(q5bits, m4)
			q5h0 := mmSlliEpi16(mmSrliEpi16(mmAnd(hbits, hmask), bit), 4)
			bit++
			q50 := mmAddEpi8(q5l0, q5h0)
			hmask = mmSlliEpi16(hmask, 1)
			q5l1 := mmAnd(mmSrliEpi16(q5bits, 4), m4)
			q5h1 := mmSlliEpi16(mmSrliEpi16(mmAnd(hbits, hmask), bit), 4)
			bit++
			q51 := mmAddEpi8(q5l1, q5h1)
			hmask = mmSlliEpi16(hmask, 1)

			var q80, q81 ymm
			copy(q80[:], y[4+64*j:])
			copy(q81[:], y[4+64*j+32:])
			p160 := mmMaddEpi16(scale0, mmMaddubsEpi16(q50, q80))
			p161 := mmMaddEpi16(scale1, mmMaddubsEpi16(q51, q81))
			sumi = mmAddEpi32(sumi, mmAddEpi32(p160, p161))
		}
		acc = mmFmaddPs(mmSet1Ps(d), mmCvtepi32Ps(sumi), acc)
	}
	return hsumFloat8(acc) + summs
}

// scaleShuffleK4 is ggml's get_scale_shuffle_k4(i): word i of each 128-bit
// lane into all of that lane's words.
func scaleShuffleK4(i int) (r ymm) {
	for b := 0; b < 32; b++ {
		r[b] = byte(2*i + b%2)
	}
	return r
}

// q5KOneIntegerOrder is the order shade's Q5_K dot had before: one integer
// sum and one sum of mins a super-block, each scaled and rounded alone.
func q5KOneIntegerOrder(w, a []byte) float32 {
	var sum float32
	for b := 0; b < len(w)/q5_KBytes; b++ {
		x := (*[q5_KBytes]byte)(w[b*q5_KBytes:])
		y := a[b*q8_KBytes:]
		var sumi, sumMins int32
		for i := 0; i < qkK; i++ {
			sc, _ := scaleMinK4(i/32, (*[kScaleSize]byte)(x[4:]))
			sumi += int32(sc) * q5kValue(x, i) * int32(int8(y[4+i]))
		}
		for j := 0; j < 16; j++ {
			_, m := scaleMinK4(j/2, (*[kScaleSize]byte)(x[4:]))
			sumMins += int32(m) * int32(int16(le16(y[4+qkK+2*j:])))
		}
		dy := f32At(y)
		sum += float32(f16At(x[0:]) * dy * float32(sumi))
		sum -= float32(f16At(x[2:]) * dy * float32(sumMins))
	}
	return sum
}

// TestQ5_KDotAVX2Order pins dotQ5_KQ8_KGo (and through the kernel tests
// every Q5_K kernel) to llama.cpp's AVX2 float steps: on quantized and raw
// rows it must give q5KAVX2Steps' bits, and some of those rows must give
// other bits in the previous order, so that the test tells them apart.
func TestQ5_KDotAVX2Order(t *testing.T) {
	rng := rand.New(rand.NewPCG(65, 66))
	differ, rows := 0, 0
	for _, nb := range []int{0, 1, 2, 3, 5, 8, 17, 64} {
		for _, mode := range []string{"quantized", "random", "0xff", "0x80"} {
			for k := 0; k < 4; k++ {
				n := nb * qkK
				var w, a []byte
				if mode == "quantized" {
					w = encode(t, Q5_K, testData(rng, n))
					a = quantizeAct(t, Q8_K, testData(rng, n))
				} else {
					w = k35RawWeights(rng, Q5_K, nb, mode)
					a = k35RawActs(rng, nb, mode)
				}
				name := fmt.Sprintf("%s %d blocks #%d", mode, nb, k)
				want := q5KAVX2Steps(w, a)
				if got := dotQ5_KQ8_KGo(w, a); math.Float32bits(got) != math.Float32bits(want) {
					t.Errorf("%s: twin %v (%#x), ggml's AVX2 steps %v (%#x)", name, got, math.Float32bits(got), want, math.Float32bits(want))
				}
				if math.Float32bits(q5KOneIntegerOrder(w, a)) != math.Float32bits(want) {
					differ++
				}
				rows++
			}
		}
	}
	t.Logf("%d of %d rows differ between the AVX2 order and one integer a super-block", differ, rows)
	if differ == 0 {
		t.Error("no row tells the AVX2 order from one integer a super-block")
	}
}
