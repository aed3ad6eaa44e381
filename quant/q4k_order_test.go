package quant

import (
	"encoding/binary"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// q4kGemvRef is ggml_gemv_q4_K_8x8_q8_K's AVX2 float order for one output,
// written out plainly apart from dotQ4_KQ8_KGo: the 256 levels decoded
// one by one (value i of the super-block is the low nibble of qs[32(i/64)
// + i%32] for i%64 < 32, the high one after), the 6-bit scales and mins by
// get_scale_min_k4's rule, and the two accumulators' fused multiply-adds
// each rounded once through big.Float.
func q4kGemvRef(w, a []byte) float32 {
	fma := func(x, y, z float32) float32 {
		p := new(big.Float).SetPrec(200).SetFloat64(float64(x))
		p.Mul(p, new(big.Float).SetPrec(200).SetFloat64(float64(y)))
		p.Add(p, new(big.Float).SetPrec(200).SetFloat64(float64(z)))
		f, _ := p.Float32()
		return f
	}
	var sum, smin float32
	for b := 0; b < len(w)/q4_KBytes; b++ {
		x := w[b*q4_KBytes : (b+1)*q4_KBytes]
		y := a[b*q8_KBytes : (b+1)*q8_KBytes]
		q := x[4:16]
		scaleMin := func(j int) (int64, int64) {
			if j < 4 {
				return int64(q[j] & 63), int64(q[j+4] & 63)
			}
			return int64(q[j+4]&0xf | q[j-4]>>6<<4), int64(q[j+4]>>4 | q[j]>>6<<4)
		}
		var sumi, sumMins int64
		for i := 0; i < qkK; i++ {
			v := x[16+32*(i/64)+i%32]
			if i%64 >= 32 {
				v >>= 4
			}
			sc, _ := scaleMin(i / 32)
			sumi += sc * int64(v&0xf) * int64(int8(y[4+i]))
		}
		for j := 0; j < 8; j++ {
			_, m := scaleMin(j)
			for k := 0; k < 2; k++ {
				sumMins += m * int64(int16(binary.LittleEndian.Uint16(y[4+qkK+2*(2*j+k):])))
			}
		}
		dy := math.Float32frombits(binary.LittleEndian.Uint32(y))
		d := f16At(x[0:]) * dy
		dmin := f16At(x[2:]) * dy
		sum = fma(float32(sumi), d, sum)
		smin = fma(float32(sumMins), dmin, smin)
	}
	return sum - smin
}

// q4kOneSumRef is the order dotQ4_KQ8_KGo had before (ggml's vec_dot
// scaled into one accumulator): per super-block sum += d·sumi, then
// sum -= dmin·sumMins, each product rounded alone.
func q4kOneSumRef(w, a []byte) float32 {
	var sum float32
	for b := 0; b < len(w)/q4_KBytes; b++ {
		x := w[b*q4_KBytes : (b+1)*q4_KBytes]
		y := a[b*q8_KBytes : (b+1)*q8_KBytes]
		sc := (*[kScaleSize]byte)(x[4:])
		var sumi, sumMins int32
		for j := 0; j < 8; j++ {
			s, m := scaleMinK4(j, sc)
			for l := 0; l < 32; l++ {
				i := 32*j + l
				v := x[16+32*(j/2)+l]
				if j%2 == 1 {
					v >>= 4
				}
				sumi += int32(s) * int32(v&0xf) * int32(int8(y[4+i]))
				sumMins += int32(m) * int32(int8(y[4+i]))
			}
		}
		d := f16At(x[0:]) * f32At(y)
		dmin := f16At(x[2:]) * f32At(y)
		sum += float32(d * float32(sumi))
		sum -= float32(dmin * float32(sumMins))
	}
	return sum
}

// q4kRandomRows returns nb raw Q4_K super-blocks of random bytes (finite
// f16 d and dmin) and nb Q8_K blocks of random quants with their bsums.
func q4kRandomRows(rng *rand.Rand, nb int) (w, a []byte) {
	w = make([]byte, nb*q4_KBytes)
	a = make([]byte, nb*q8_KBytes)
	for i := range w {
		w[i] = byte(rng.Uint32())
	}
	for b := 0; b < nb; b++ {
		x := w[b*q4_KBytes:]
		for k := 0; k < 2; k++ {
			binary.LittleEndian.PutUint16(x[2*k:], uint16(rng.IntN(0x7800))|uint16(rng.IntN(2))<<15)
		}
		y := a[b*q8_KBytes:]
		binary.LittleEndian.PutUint32(y, math.Float32bits(rng.Float32()/64))
		for j := 0; j < 16; j++ {
			var s int16
			for l := 0; l < 16; l++ {
				v := int8(rng.IntN(255) - 127)
				y[4+16*j+l] = byte(v)
				s += int16(v)
			}
			binary.LittleEndian.PutUint16(y[4+qkK+2*j:], uint16(s))
		}
	}
	return w, a
}

// TestQ4KGemvOrder pins Q4_K's dot to the float order of llama.cpp's
// repacked single-row gemv: the Go twin equals the plain transcription
// q4kGemvRef on quantized and raw blocks, and so do every kernel set's row
// dot and gemmK (one activation row, and the row among three), while rows
// exist, the first of them logged, where the one-accumulator order shade
// had gives other bits.
func TestQ4KGemvOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(44, 4))
	differ := 0
	const trials = 400
	for trial := 0; trial < trials; trial++ {
		nb := 1 + trial%9
		var w, a []byte
		if trial%2 == 0 {
			w = encode(t, Q4_K, testData(rng, nb*qkK))
			a = quantizeAct(t, Q8_K, testData(rng, nb*qkK))
		} else {
			w, a = q4kRandomRows(rng, nb)
		}
		got, want := dotQ4_KQ8_KGo(w, a), q4kGemvRef(w, a)
		if math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("trial %d (%d blocks): twin %v (%#x), gemv order %v (%#x)", trial, nb, got, math.Float32bits(got), want, math.Float32bits(want))
		}
		for _, ks := range append([]kernelSet{genericKernels}, archSets...) {
			if got := ks.dotQ4_KQ8_K(w, a); math.Float32bits(got) != math.Float32bits(want) {
				t.Fatalf("%s: trial %d (%d blocks): row dot %v (%#x), gemv order %v (%#x)", ks.name, trial, nb, got, math.Float32bits(got), want, math.Float32bits(want))
			}
			if !ks.hasGemmK(Q4_K) {
				continue
			}
			// The row alone, then second of three activation rows.
			a3 := append(append(append([]byte{}, a...), a...), a...)
			for _, n := range []int{1, 3} {
				y := make([]float32, 3)
				ks.gemmK(Q4_K, w, len(w), 0, 1, a3, len(a), n, y, 1)
				if got := y[n/3]; math.Float32bits(got) != math.Float32bits(want) {
					t.Fatalf("%s: trial %d (%d blocks): gemmK of %d rows %v (%#x), gemv order %v (%#x)", ks.name, trial, nb, n, got, math.Float32bits(got), want, math.Float32bits(want))
				}
			}
		}
		if one := q4kOneSumRef(w, a); math.Float32bits(one) != math.Float32bits(want) {
			if differ == 0 {
				t.Logf("trial %d (%d blocks): gemv order %v (%#x), one accumulator %v (%#x)", trial, nb, want, math.Float32bits(want), one, math.Float32bits(one))
			}
			differ++
		}
	}
	t.Logf("%d of %d rows round differently in the one-accumulator order", differ, trials)
	if differ == 0 {
		t.Fatal("no row tells the gemv order from the one-accumulator order")
	}
}
