package quant

import (
	"encoding/binary"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// ymm is an emulated 256-bit register for q2KAVX2Steps: bytes, int16 words
// and int32 or float32 lanes little-endian, as on x86.
type ymm [32]byte

func (v *ymm) w(k int) int16         { return int16(binary.LittleEndian.Uint16(v[2*k:])) }
func (v *ymm) setW(k int, x int16)   { binary.LittleEndian.PutUint16(v[2*k:], uint16(x)) }
func (v *ymm) d(l int) int32         { return int32(binary.LittleEndian.Uint32(v[4*l:])) }
func (v *ymm) setD(l int, x int32)   { binary.LittleEndian.PutUint32(v[4*l:], uint32(x)) }
func (v *ymm) f(l int) float32       { return math.Float32frombits(binary.LittleEndian.Uint32(v[4*l:])) }
func (v *ymm) setF(l int, x float32) { binary.LittleEndian.PutUint32(v[4*l:], math.Float32bits(x)) }

// The AVX2 intrinsics ggml_vec_dot_q2_K_q8_K uses, on 16 or 32 bytes.

func mmSrliEpi16(a ymm, n uint) (r ymm) {
	for k := 0; k < 16; k++ {
		r.setW(k, int16(uint16(a.w(k))>>n))
	}
	return r
}

func mmAnd(a, b ymm) (r ymm) {
	for i := range r {
		r[i] = a[i] & b[i]
	}
	return r
}

func mmSet1Epi8(b byte) (r ymm) {
	for i := range r {
		r[i] = b
	}
	return r
}

// mmCvtepi8Epi16 sign-extends the 16 bytes at a[0:16] to words.
func mmCvtepi8Epi16(a ymm) (r ymm) {
	for k := 0; k < 16; k++ {
		r.setW(k, int16(int8(a[k])))
	}
	return r
}

func mmMaddEpi16(a, b ymm) (r ymm) {
	for l := 0; l < 8; l++ {
		r.setD(l, int32(a.w(2*l))*int32(b.w(2*l))+int32(a.w(2*l+1))*int32(b.w(2*l+1)))
	}
	return r
}

// mmMaddubsEpi16: unsigned bytes of a times signed bytes of b, adjacent
// pairs added with signed saturation.
func mmMaddubsEpi16(a, b ymm) (r ymm) {
	for k := 0; k < 16; k++ {
		s := int32(a[2*k])*int32(int8(b[2*k])) + int32(a[2*k+1])*int32(int8(b[2*k+1]))
		r.setW(k, int16(min(max(s, math.MinInt16), math.MaxInt16)))
	}
	return r
}

// mmShuffleEpi8 picks bytes within each 128-bit lane.
func mmShuffleEpi8(a, m ymm) (r ymm) {
	for i := range r {
		if m[i]&0x80 == 0 {
			r[i] = a[i&^15+int(m[i]&15)]
		}
	}
	return r
}

func mmAddEpi32(a, b ymm) (r ymm) {
	for l := 0; l < 8; l++ {
		r.setD(l, a.d(l)+b.d(l))
	}
	return r
}

func mmCvtepi32Ps(a ymm) (r ymm) {
	for l := 0; l < 8; l++ {
		r.setF(l, float32(a.d(l)))
	}
	return r
}

// mmFmaddPs is a*b+c lane by lane, rounded once: the exact value in
// math/big, then the float32 nearest it.
func mmFmaddPs(a, b, c ymm) (r ymm) {
	for l := 0; l < 8; l++ {
		x := new(big.Float).SetPrec(1000).SetFloat64(float64(a.f(l)))
		x.Mul(x, new(big.Float).SetFloat64(float64(b.f(l))))
		x.Add(x, new(big.Float).SetFloat64(float64(c.f(l))))
		f, _ := x.Float32()
		r.setF(l, f)
	}
	return r
}

func mmSet1Ps(x float32) (r ymm) {
	for l := 0; l < 8; l++ {
		r.setF(l, x)
	}
	return r
}

// scaleShuffleQ3K is ggml's get_scale_shuffle_q3k(i): word 2i of each
// 128-bit lane into the low lane's words, word 2i+1 into the high lane's.
func scaleShuffleQ3K(i int) (r ymm) {
	for b := 0; b < 32; b++ {
		r[b] = byte(4*i + 2*(b/16) + b%2)
	}
	return r
}

// hsumFloat8 is ggml's hsum_float_8 step by step.
func hsumFloat8(x ymm) float32 {
	var res [4]float32
	for i := range res {
		res[i] = x.f(4+i) + x.f(i) // _mm_add_ps(extract hi, cast lo)
	}
	res[0], res[1] = res[0]+res[2], res[1]+res[3] // _mm_add_ps(res, movehl)
	return res[0] + res[1]                        // _mm_add_ss(res, movehdup)
}

// q2KAVX2Steps is the AVX2 branch of ggml_vec_dot_q2_K_q8_K (ggml-cpu's
// x86 quants.c, the build of the conformance pack) transcribed intrinsic
// by intrinsic on emulated registers: a statement of the order that
// shares no code with dotQ2_KQ8_KGo. (Checked once, 2026-12-05: that
// library's own ggml_vec_dot_q2_K_q8_K, called from C on 540 rows like
// TestQ2_KDotAVX2Order's, gave dotQ2_KQ8_KGo's bits on all of them; the
// previous order's on 329.)
func q2KAVX2Steps(w, a []byte) float32 {
	m3 := mmSet1Epi8(3)
	m4 := mmSet1Epi8(0xf)
	var acc ymm // _mm256_setzero_ps
	for i := 0; i < len(w)/q2_KBytes; i++ {
		x := w[i*q2_KBytes : (i+1)*q2_KBytes]
		y := a[i*q8_KBytes : (i+1)*q8_KBytes]
		yd := math.Float32frombits(binary.LittleEndian.Uint32(y))
		d := yd * F16ToF32(binary.LittleEndian.Uint16(x[80:]))
		dmin := -yd * F16ToF32(binary.LittleEndian.Uint16(x[82:]))

		var minsAndScales, bsums ymm
		copy(minsAndScales[:16], x[:16]) // a 128-bit load: upper half unused
		copy(bsums[:], y[4+qkK:])
		scales8 := mmAnd(minsAndScales, m4)
		mins8 := mmAnd(mmSrliEpi16(minsAndScales, 4), m4)
		mins := mmCvtepi8Epi16(mins8)
		prod := mmMaddEpi16(mins, bsums)
		acc = mmFmaddPs(mmSet1Ps(dmin), mmCvtepi32Ps(prod), acc)

		allScales := mmCvtepi8Epi16(scales8)
		var scales [2]ymm
		for j := range scales {
			copy(scales[j][:16], allScales[16*j:16*j+16])
			copy(scales[j][16:], allScales[16*j:16*j+16])
		}
		var sumi ymm
		q2 := x[16:80]
		q8 := y[4 : 4+qkK]
		for j := 0; j < qkK/128; j++ {
			var q2bits ymm
			copy(q2bits[:], q2[32*j:])
			var p [4]ymm
			for k := 0; k < 4; k++ {
				var q8k ymm
				copy(q8k[:], q8[128*j+32*k:])
				q2k := mmAnd(mmSrliEpi16(q2bits, uint(2*k)), m3)
				p[k] = mmMaddubsEpi16(q2k, q8k)
				p[k] = mmMaddEpi16(mmShuffleEpi8(scales[j], scaleShuffleQ3K(k)), p[k])
			}
			p[0] = mmAddEpi32(p[0], p[1])
			p[2] = mmAddEpi32(p[2], p[3])
			sumi = mmAddEpi32(sumi, mmAddEpi32(p[0], p[2]))
		}
		acc = mmFmaddPs(mmSet1Ps(d), mmCvtepi32Ps(sumi), acc)
	}
	return hsumFloat8(acc)
}

// q2KOneIntegerOrder is the order shade's Q2_K dot had before: one
// integer sum and one sum of mins a super-block, each scaled once.
func q2KOneIntegerOrder(w, a []byte) float32 {
	var sum float32
	for b := 0; b < len(w)/q2_KBytes; b++ {
		x := w[b*q2_KBytes:]
		y := a[b*q8_KBytes:]
		var summs, isum int32
		for j := 0; j < 16; j++ {
			summs += int32(int16(le16(y[4+qkK+2*j:]))) * int32(x[j]>>4)
		}
		for i := 0; i < qkK; i++ {
			h, j, l := i/128, i%128/32, i%32
			q := int32(x[16+32*h+l] >> (2 * j) & 3)
			isum += int32(x[i/16]&0xf) * q * int32(int8(y[4+i]))
		}
		dy := f32At(y)
		sum += float32(dy*f16At(x[80:])*float32(isum)) - float32(dy*f16At(x[82:])*float32(summs))
	}
	return sum
}

// TestQ2_KDotAVX2Order pins dotQ2_KQ8_KGo (and through TestK2IQKernelsMatchTwins
// and TestK2IQGemmK every Q2_K kernel) to llama.cpp's AVX2 float steps: on
// quantized and raw rows it must give q2KAVX2Steps' bits, and those rows
// must include some where one integer a super-block gives other bits, so
// that the test tells the two orders apart.
func TestQ2_KDotAVX2Order(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	names, ws, as := k2iqDotCases(t, rng, Q2_K)
	differ := 0
	for i := range names {
		want := q2KAVX2Steps(ws[i], as[i])
		if got := dotQ2_KQ8_KGo(ws[i], as[i]); math.Float32bits(got) != math.Float32bits(want) {
			t.Errorf("%s: twin %v (%#x), ggml's AVX2 steps %v (%#x)", names[i], got, math.Float32bits(got), want, math.Float32bits(want))
		}
		if math.Float32bits(q2KOneIntegerOrder(ws[i], as[i])) != math.Float32bits(want) {
			differ++
		}
	}
	t.Logf("%d of %d rows differ between the AVX2 order and one integer a super-block", differ, len(names))
	if differ == 0 {
		t.Error("no row tells the AVX2 order from one integer a super-block")
	}
}
