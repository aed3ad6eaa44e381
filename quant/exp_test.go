package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestExp32 compares Exp32 with math.Exp over the softmax's range and at
// its edges.
func TestExp32(t *testing.T) {
	for x := float32(-110); x <= 90; x += 0.0137 {
		want := float32(math.Exp(float64(x)))
		got := Exp32(x)
		if d := math.Abs(float64(got) - float64(want)); d > 2e-7*float64(want) && d > 1e-45 {
			t.Fatalf("Exp32(%v) = %v, want %v", x, got, want)
		}
	}
	for _, tc := range []struct{ x, want float32 }{
		{0, 1}, {float32(math.Inf(-1)), 0}, {-200, 0}, {float32(math.Inf(1)), float32(math.Inf(1))}, {100, float32(math.Inf(1))},
	} {
		if got := Exp32(tc.x); got != tc.want {
			t.Errorf("Exp32(%v) = %v, want %v", tc.x, got, tc.want)
		}
	}
	if nan := float32(math.NaN()); !math.IsNaN(float64(Exp32(nan))) {
		t.Error("Exp32(NaN) is not NaN")
	}
}

// expInputs are softmax arguments (scores minus the running maximum, so
// mostly ≤ 0), the edges of Exp32's cases, specials and random bit patterns.
func expInputs(rng *rand.Rand, n int) []float32 {
	x := []float32{0, float32(math.Copysign(0, -1)), 1, -1, -103.99, -104, -104.01, 88.99, 89, 89.01, -87, -88, -150, 200,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), math.Float32frombits(0xffc00001), 1e-30, -1e-30, 3e38, -3e38}
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

// TestExp32sKernels: every kernel set this CPU runs gives Exp32's bits,
// NaN for NaN, at every length (whole vectors and tails).
func TestExp32sKernels(t *testing.T) {
	defer UseGeneric(false)
	rng := rand.New(rand.NewPCG(9, 10))
	in := expInputs(rng, 100000)
	for _, set := range KernelSets() {
		if err := UseKernels(set); err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 63, 64, 100, len(in)} {
			got := append([]float32(nil), in[:n]...)
			Exp32s(got)
			for i, v := range in[:n] {
				want := Exp32(v)
				if math.IsNaN(float64(want)) {
					if !math.IsNaN(float64(got[i])) {
						t.Fatalf("%s, n=%d: Exp32s(%v) = %v, want NaN", set, n, v, got[i])
					}
					continue
				}
				if math.Float32bits(got[i]) != math.Float32bits(want) {
					t.Fatalf("%s, n=%d: Exp32s(%v) = %v (%#x), Exp32 %v (%#x)", set, n, v, got[i], math.Float32bits(got[i]), want, math.Float32bits(want))
				}
			}
		}
	}
}

func BenchmarkExp32s(b *testing.B) {
	defer UseGeneric(false)
	x := expInputs(rand.New(rand.NewPCG(11, 12)), 64)
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
