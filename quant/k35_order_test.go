package quant

import (
	"encoding/binary"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// q3kHaswellRef is ggml_vec_dot_q3_K_q8_K's AVX2 branch written out
// plainly, apart from dotQ3_KQ8_KGo: the 256 levels decoded one by one
// as dequantizeQ3_K indexes them, the scales by ggml's kmask words, each
// lane's FMA rounded once through big.Float, and hsum_float_8's adds
// spelled out.
func q3kHaswellRef(w, a []byte) float32 {
	var acc [8]float32
	for b := 0; b < len(w)/q3_KBytes; b++ {
		x := w[b*q3_KBytes : (b+1)*q3_KBytes]
		y := a[b*q8_KBytes : (b+1)*q8_KBytes]
		aux0 := binary.LittleEndian.Uint32(x[96:])
		aux1 := binary.LittleEndian.Uint32(x[100:])
		aux2 := binary.LittleEndian.Uint32(x[104:])
		const m2, m1 = 0x0f0f0f0f, 0x03030303
		utmp := [4]uint32{
			aux0&m2 | (aux2&m1)<<4,
			aux1&m2 | (aux2>>2&m1)<<4,
			aux0>>4&m2 | (aux2>>4&m1)<<4,
			aux1>>4&m2 | (aux2>>6&m1)<<4,
		}
		var lanes [8]int64
		for i := 0; i < qkK; i++ {
			q := int64(x[32+32*(i/128)+i%32] >> (2 * ((i % 128) / 32)) & 3)
			if x[i%32]>>(i/32)&1 == 0 {
				q -= 4
			}
			sc := int64(byte(utmp[i/16/4]>>(8*(i/16%4)))) - 32
			lanes[(i%32)/4] += sc * q * int64(int8(y[4+i]))
		}
		d := math.Float32frombits(binary.LittleEndian.Uint32(y)) * f16At(x[108:])
		for l := range acc {
			p := new(big.Float).SetPrec(200).SetFloat64(float64(d))
			p.Mul(p, new(big.Float).SetPrec(200).SetInt64(lanes[l]))
			p.Add(p, new(big.Float).SetPrec(200).SetFloat64(float64(acc[l])))
			acc[l], _ = p.Float32()
		}
	}
	r0, r1, r2, r3 := acc[4]+acc[0], acc[5]+acc[1], acc[6]+acc[2], acc[7]+acc[3]
	return (r0 + r2) + (r1 + r3)
}

// q3kOneSumRef is the order dotQ3_KQ8_KGo had before: the super-block's
// lanes as one integer, scaled once, the products rounded alone.
func q3kOneSumRef(w, a []byte) float32 {
	var sum float32
	for b := 0; b < len(w)/q3_KBytes; b++ {
		x := w[b*q3_KBytes : (b+1)*q3_KBytes]
		y := a[b*q8_KBytes : (b+1)*q8_KBytes]
		sc := q3kScales((*[12]byte)(x[96:]))
		var sumi int32
		for i := 0; i < qkK; i++ {
			q := int32(x[32+32*(i/128)+i%32]>>(2*((i%128)/32))&3) - 4
			if x[i%32]>>(i/32)&1 != 0 {
				q += 4
			}
			sumi += int32(sc[i/16]) * q * int32(int8(y[4+i]))
		}
		sum += float32(f16At(x[108:]) * f32At(y) * float32(sumi))
	}
	return sum
}

// TestQ3KHaswellOrder pins Q3_K's dot to ggml's AVX2 float order: the Go
// twin (which every kernel set matches bit for bit) equals the plain
// transcription q3kHaswellRef on quantized and raw blocks, and rows exist,
// the first of them checked here, where scaling one integer sum a block,
// the order shade had, gives other bits.
func TestQ3KHaswellOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(36, 3))
	differ := 0
	for trial := 0; trial < 400; trial++ {
		nb := 1 + trial%7
		var w, a []byte
		if trial%2 == 0 {
			w = encode(t, Q3_K, testData(rng, nb*qkK))
			a = quantizeAct(t, Q8_K, testData(rng, nb*qkK))
		} else {
			w = k35RawWeights(rng, Q3_K, nb, "random")
			a = k35RawActs(rng, nb, "random")
		}
		got, want := dotQ3_KQ8_KGo(w, a), q3kHaswellRef(w, a)
		if math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("trial %d (%d blocks): twin %v (%#x), haswell order %v (%#x)", trial, nb, got, math.Float32bits(got), want, math.Float32bits(want))
		}
		if one := q3kOneSumRef(w, a); math.Float32bits(one) != math.Float32bits(want) {
			if differ == 0 {
				t.Logf("trial %d (%d blocks): eight lanes %v (%#x), one sum %v (%#x)", trial, nb, want, math.Float32bits(want), one, math.Float32bits(one))
			}
			differ++
		}
	}
	t.Logf("%d of 400 rows round differently in the one-sum order", differ)
	if differ == 0 {
		t.Fatal("no row tells the eight-lane order from the one-sum order")
	}
}
