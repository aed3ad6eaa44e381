package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestExp32 holds Exp32 within an ulp of e^x (glibc's expf is within
// 0.502 ulp; float32(math.Exp) is rounded twice) over the softmax's range,
// and to glibc's results at its special cases and bounds (internal/libm's
// tests check it against glibc bit for bit).
func TestExp32(t *testing.T) {
	for x := float32(-110); x <= 90; x += 0.0137 {
		want := float32(math.Exp(float64(x)))
		got := Exp32(x)
		ulp := math.Abs(float64(math.Nextafter32(want, float32(math.Inf(1))) - want))
		if math.IsInf(float64(want), 1) {
			ulp = math.Abs(float64(want - math.Nextafter32(want, 0)))
		}
		if d := math.Abs(float64(got) - float64(want)); d > ulp {
			t.Fatalf("Exp32(%v) = %v, want %v", x, got, want)
		}
	}
	inf := float32(math.Inf(1))
	for _, tc := range []struct{ x, want uint32 }{
		{0x00000000, 0x3f800000}, // 0: 1
		{0x80000000, 0x3f800000}, // -0: 1
		{0xff800000, 0},          // -Inf: 0
		{0x7f800000, 0x7f800000}, // +Inf
		{0xc3480000, 0},          // -200: 0
		{0x42c80000, math.Float32bits(inf)},
		{0x42b17217, 0x7f7fff84}, // the overflow bound: finite
		{0x42b17218, 0x7f800000}, // just above: +Inf
		{0xc2cff1b4, 0x00000001}, // the underflow bound: the least subnormal
		{0xc2cff1b5, 0},          // just below: 0
		{0xc2ce8ecf, 0x00000001}, // glibc's ln(2^-149) bound
		{0xc2ce8ece, 0x00000001},
		{0xc2b00000, 0x0041edc4}, // -88: subnormal
		{0x7fc00001, 0x7fc00001}, // NaN stays, quiet
		{0x7f800001, 0x7fc00001}, // signalling NaN comes back quieted
		{0xffc00000, 0xffc00000},
	} {
		if got := math.Float32bits(Exp32(math.Float32frombits(tc.x))); got != tc.want {
			t.Errorf("Exp32(%#08x = %v) = %#08x, want %#08x", tc.x, math.Float32frombits(tc.x), got, tc.want)
		}
	}
}

// expInputs are softmax arguments (scores minus the running maximum, so
// mostly ≤ 0), the edges of Exp32's cases, specials and random bit patterns.
func expInputs(rng *rand.Rand, n int) []float32 {
	x := []float32{0, float32(math.Copysign(0, -1)), 1, -1, -103.99, -104, -104.01, 88.99, 89, 89.01, -87, -88, -150, 200,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), math.Float32frombits(0xffc00001), 1e-30, -1e-30, 3e38, -3e38,
		math.Float32frombits(0x7f800001), math.Float32frombits(0xff800123)}
	// A few ulps either side of glibc's bounds: overflow, underflow, the
	// least subnormal's, |x| = 88 (where its special-case branch starts)
	// and the normal/subnormal boundary ln(2^-126).
	for _, b := range []uint32{0x42b17217, 0xc2cff1b4, 0xc2ce8ecf, 0x42b00000, 0xc2b00000, 0xc2aeac50} {
		for d := uint32(0); d < 8; d++ {
			x = append(x, math.Float32frombits(b+d), math.Float32frombits(b-d))
		}
	}
	for len(x) < n {
		switch rng.IntN(4) {
		case 0:
			x = append(x, -float32(rng.ExpFloat64()))
		case 1:
			x = append(x, -float32(rng.ExpFloat64()*30))
		case 2:
			x = append(x, float32(rng.Float64()*200-105))
		default:
			x = append(x, math.Float32frombits(rng.Uint32()))
		}
	}
	return x
}

// TestExp32sKernels: every kernel set this CPU runs gives Exp32's bits (NaN
// payloads too) at every length (whole vectors and tails), and over a sweep
// of every 4099th float32 bit pattern.
func TestExp32sKernels(t *testing.T) {
	defer UseGeneric(false)
	rng := rand.New(rand.NewPCG(9, 10))
	in := expInputs(rng, 100000)
	for b := uint64(0); b < 1<<32; b += 4099 {
		in = append(in, math.Float32frombits(uint32(b)))
	}
	for _, set := range KernelSets() {
		if err := UseKernels(set); err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 31, 32, 33, 63, 64, 100, len(in)} {
			got := append([]float32(nil), in[:n]...)
			Exp32s(got)
			for i, v := range in[:n] {
				want := Exp32(v)
				if math.Float32bits(got[i]) != math.Float32bits(want) {
					t.Fatalf("%s, n=%d: Exp32s(%v) = %v (%#x), Exp32 %v (%#x)", set, n, v, got[i], math.Float32bits(got[i]), want, math.Float32bits(want))
				}
			}
		}
	}
}

func BenchmarkExp32s(b *testing.B) {
	defer UseGeneric(false)
	// Softmax arguments (score steps, ≤ 0), as attention gives them.
	rng := rand.New(rand.NewPCG(11, 12))
	x := make([]float32, 64)
	for i := range x {
		x[i] = -float32(rng.ExpFloat64() * 4)
	}
	buf := make([]float32, len(x))
	for _, set := range KernelSets() {
		if err := UseKernels(set); err != nil {
			b.Fatal(err)
		}
		b.Run(set, func(b *testing.B) {
			for b.Loop() {
				copy(buf, x)
				Exp32s(buf)
			}
			b.ReportMetric(float64(len(x))*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mexp/s")
		})
	}
}
