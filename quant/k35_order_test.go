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

// q6kHaswellRef is ggml_vec_dot_q6_K_q8_K's AVX2 branch written out
// plainly, apart from dotQ6_KQ8_KGo: levels decoded as dequantizeQ6_K
// indexes them (value i of half h: low nibble of ql[64h + i%64] if i%128 <
// 64 else its high nibble, bits 2·((i%128)/32) of qh[32h + i%32]), the
// q8sclsub lanes from the bsums, the FMAs exact through big.Float.
func q6kHaswellRef(w, a []byte) float32 {
	var acc [8]float32
	for b := 0; b < len(w)/q6_KBytes; b++ {
		x := w[b*q6_KBytes : (b+1)*q6_KBytes]
		y := a[b*q8_KBytes : (b+1)*q8_KBytes]
		var lanes [8]int64
		for i := 0; i < qkK; i++ {
			h, r := i/128, i%128
			lo := x[64*h+r%64] & 0xf
			if r >= 64 {
				lo = x[64*h+r%64] >> 4
			}
			q := int64(lo) | int64(x[128+32*h+r%32]>>(2*(r/32))&3)<<4
			lanes[(i%32)/4] += int64(int8(x[192+i/16])) * q * int64(int8(y[4+i]))
		}
		for l := 0; l < 8; l++ {
			for k := 2 * l; k < 2*l+2; k++ {
				bs := int64(int16(binary.LittleEndian.Uint16(y[4+qkK+2*k:])))
				lanes[l] -= 32 * int64(int8(x[192+k])) * bs
			}
		}
		d := math.Float32frombits(binary.LittleEndian.Uint32(y)) * f16At(x[208:])
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

// q6kOneSumRef is the order dotQ6_KQ8_KGo had before: one integer a
// super-block, scaled once, the products rounded alone.
func q6kOneSumRef(w, a []byte) float32 {
	var sum float32
	for b := 0; b < len(w)/q6_KBytes; b++ {
		x := w[b*q6_KBytes : (b+1)*q6_KBytes]
		y := a[b*q8_KBytes : (b+1)*q8_KBytes]
		var sumi int32
		for i := 0; i < qkK; i++ {
			h, r := i/128, i%128
			lo := x[64*h+r%64] & 0xf
			if r >= 64 {
				lo = x[64*h+r%64] >> 4
			}
			q := int32(lo) | int32(x[128+32*h+r%32]>>(2*(r/32))&3)<<4
			sumi += int32(int8(x[192+i/16])) * (q - 32) * int32(int8(y[4+i]))
		}
		sum += float32(f16At(x[208:]) * f32At(y) * float32(sumi))
	}
	return sum
}

// TestQ6KHaswellOrder is TestQ3KHaswellOrder for Q6_K, and holds every
// kernel set's Q6_K dot to the twin.
func TestQ6KHaswellOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(36, 6))
	differ := 0
	for trial := 0; trial < 400; trial++ {
		nb := 1 + trial%7
		var w, a []byte
		if trial%2 == 0 {
			w = encode(t, Q6_K, testData(rng, nb*qkK))
			a = quantizeAct(t, Q8_K, testData(rng, nb*qkK))
		} else {
			w = make([]byte, nb*q6_KBytes)
			for i := range w {
				w[i] = byte(rng.IntN(256))
			}
			for b := 0; b < nb; b++ {
				binary.LittleEndian.PutUint16(w[b*q6_KBytes+208:], k35Halves[rng.IntN(len(k35Halves))])
			}
			a = k35RawActs(rng, nb, "random")
		}
		got, want := dotQ6_KQ8_KGo(w, a), q6kHaswellRef(w, a)
		if math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("trial %d (%d blocks): twin %v (%#x), haswell order %v (%#x)", trial, nb, got, math.Float32bits(got), want, math.Float32bits(want))
		}
		for si := range archSets {
			s := &archSets[si]
			if g := s.dotQ6_KQ8_K(w, a); math.Float32bits(g) != math.Float32bits(want) {
				t.Fatalf("trial %d (%d blocks): set %s dot %v, twin %v", trial, nb, s.name, g, want)
			}
		}
		if one := q6kOneSumRef(w, a); math.Float32bits(one) != math.Float32bits(want) {
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
