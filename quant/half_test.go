package quant

import (
	"math"
	"math/big"
	"testing"
)

// TestF16RoundTripExhaustive widens every one of the 65536 half values and
// narrows it back.
func TestF16RoundTripExhaustive(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		f := F16ToF32(h)
		back := F32ToF16(f)
		isNaN := h&0x7c00 == 0x7c00 && h&0x3ff != 0
		if isNaN {
			if !math.IsNaN(float64(f)) {
				t.Fatalf("F16ToF32(%#04x) = %v, want NaN", h, f)
			}
			if back != h&0x8000|0x7e00 {
				t.Fatalf("F32ToF16(NaN from %#04x) = %#04x, want %#04x", h, back, h&0x8000|0x7e00)
			}
			continue
		}
		if back != h {
			t.Fatalf("F32ToF16(F16ToF32(%#04x) = %v) = %#04x", h, f, back)
		}
		if want := f16Value(h); float64(f) != want && !math.IsInf(want, 0) {
			t.Fatalf("F16ToF32(%#04x) = %v, want %v", h, f, want)
		}
	}
}

// f16Value decodes a finite half by its definition.
func f16Value(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp := int(h>>10) & 0x1f
	mant := float64(h & 0x3ff)
	switch exp {
	case 0x1f:
		return math.Inf(int(sign))
	case 0:
		return sign * mant * math.Pow(2, -24)
	}
	return sign * (1 + mant/1024) * math.Pow(2, float64(exp-15))
}

// nearestF16 rounds f to a half by brute force: the candidates are the two
// halves around it, compared in exact arithmetic.
func nearestF16(f float32) uint16 {
	if math.IsInf(float64(f), 0) {
		if f > 0 {
			return 0x7c00
		}
		return 0xfc00
	}
	a := math.Abs(float64(f))
	var sign uint16
	if math.Signbit(float64(f)) {
		sign = 0x8000
	}
	// Largest finite half is 65504; halfway to the next binade step is 65520.
	if a >= 65520 {
		return sign | 0x7c00
	}
	// Binary search the magnitude codes 0..0x7bff (they are ordered).
	lo, hi := uint16(0), uint16(0x7bff)
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if f16Value(mid) <= a {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	if lo == 0x7bff {
		return sign | lo
	}
	below, above := new(big.Float).SetFloat64(f16Value(lo)), new(big.Float).SetFloat64(f16Value(lo+1))
	x := new(big.Float).SetFloat64(a)
	dBelow := new(big.Float).Sub(x, below)
	dAbove := new(big.Float).Sub(above, x)
	switch dBelow.Cmp(dAbove) {
	case -1:
		return sign | lo
	case 1:
		return sign | (lo + 1)
	}
	if lo&1 == 0 {
		return sign | lo
	}
	return sign | (lo + 1)
}

func TestF32ToF16Rounding(t *testing.T) {
	cases := []float32{
		0, 1, -1, 0.5, 65504, 65519.996, 65520, 1e9, -1e9,
		5.9604645e-08, // 2^-24, smallest subnormal
		2.9802322e-08, // 2^-25: tie between 0 and 2^-24, rounds to even (0)
		2.9802326e-08, // just above 2^-25: rounds up
		8.940697e-08,  // 1.5 * 2^-24: tie, rounds to even (2 units)
		6.1035156e-05, // 2^-14, smallest normal
		6.1000000e-05, // subnormal near the top
		1.0009766,     // 1 + 2^-10: exact
		1.0004883,     // 1 + 2^-11: tie, rounds to even (1)
		1.0014648,     // 1 + 3*2^-11: tie, rounds to even (1 + 2^-9)
		float32(math.Inf(1)), float32(math.Inf(-1)),
		float32(math.Copysign(0, -1)),
	}
	for _, f := range cases {
		if got, want := F32ToF16(f), nearestF16(f); got != want {
			t.Errorf("F32ToF16(%g) = %#04x, want %#04x", f, got, want)
		}
	}
	// A sweep over float32 bit patterns with a stride, both signs.
	for b := uint32(0); b < 0x7f800000; b += 0x1235 {
		for _, s := range []uint32{0, 0x80000000} {
			f := math.Float32frombits(b | s)
			if got, want := F32ToF16(f), nearestF16(f); got != want {
				t.Fatalf("F32ToF16(%g [%#08x]) = %#04x, want %#04x", f, b|s, got, want)
			}
		}
		if testing.Short() {
			b += 0x100000
		}
	}
	if h := F32ToF16(float32(math.NaN())); h&0x7fff != 0x7e00 {
		t.Errorf("F32ToF16(NaN) = %#04x", h)
	}
}

func TestBF16(t *testing.T) {
	// Every bfloat16 value survives a round trip (NaNs stay NaN).
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		f := BF16ToF32(h)
		back := F32ToBF16(f)
		if math.IsNaN(float64(f)) {
			if !math.IsNaN(float64(BF16ToF32(back))) {
				t.Fatalf("bf16 NaN %#04x came back as %#04x", h, back)
			}
			continue
		}
		if back != h {
			t.Fatalf("F32ToBF16(BF16ToF32(%#04x)) = %#04x", h, back)
		}
	}
	cases := []struct {
		bits uint32
		want uint16
	}{
		{0x3f800000, 0x3f80}, // 1
		{0x3f808000, 0x3f80}, // tie, even stays
		{0x3f818000, 0x3f82}, // tie, odd rounds up
		{0x3f808001, 0x3f81}, // above tie
		{0x3f807fff, 0x3f80}, // below tie
		{0x7f7fffff, 0x7f80}, // max float rounds to inf
		{0x7fc00001, 0x7fc0}, // quiet NaN
		{0x7f800001, 0x7fc0}, // signalling NaN, quieted
	}
	for _, c := range cases {
		if got := F32ToBF16(math.Float32frombits(c.bits)); got != c.want {
			t.Errorf("F32ToBF16(%#08x) = %#04x, want %#04x", c.bits, got, c.want)
		}
	}
}
