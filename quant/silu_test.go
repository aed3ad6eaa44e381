package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

// siluInputs are activations of every magnitude a feed-forward block sees,
// the clamp edges and beyond, and signed zeros.
func siluInputs(rng *rand.Rand, n int) []float32 {
	x := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 86.9, -86.9, 87, -87, 88, -88, 89, -89, 100, -100, 1e-30, -1e-30, 3e38, -3e38}
	for len(x) < n {
		switch rng.IntN(3) {
		case 0:
			x = append(x, float32(rng.NormFloat64()))
		case 1:
			x = append(x, float32(rng.NormFloat64()*20))
		default:
			x = append(x, float32(math.Ldexp(rng.Float64()-0.5, rng.IntN(20)-10)))
		}
	}
	return x
}

// TestSiLUMulKernels: the kernel set in use and the Go reference agree bit
// for bit, for every length (whole vectors and tails).
func TestSiLUMulKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{0, 1, 7, 8, 9, 31, 64, 1000} {
		h := siluInputs(rng, max(n, 18))[:n]
		u := make([]float32, n)
		for i := range u {
			u[i] = float32(rng.NormFloat64())
		}
		want := append([]float32(nil), h...)
		siluMulGo(want, u)
		got := append([]float32(nil), h...)
		SiLUMul(got, u)
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s, n=%d: silu(%g)·%g = %g, Go reference %g", Kernels(), n, h[i], u[i], got[i], want[i])
			}
		}
	}
}

// TestSiLUMulAccuracy holds expf32 within 2 ulp of e^x and silu within a
// few ulp of the float64 value.
func TestSiLUMulAccuracy(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for range 200000 {
		x := float32(rng.Float64()*174 - 87)
		got, want := float64(expf32(x)), math.Exp(float64(x))
		if ulps := math.Abs(got-want) / ulp32(want); ulps > 2 {
			t.Fatalf("expf32(%g) = %g, e^x = %g: %.1f ulp", x, got, want, ulps)
		}
	}
	h := siluInputs(rng, 100000)
	u := make([]float32, len(h))
	for i := range u {
		u[i] = 1
	}
	want := make([]float64, len(h))
	for i, g := range h {
		want[i] = float64(g) / (1 + math.Exp(-float64(g)))
	}
	SiLUMul(h, u)
	for i, w := range want {
		// Below h = -87 the exponential is clamped (silu.go): the result
		// stays below 1e-34 in magnitude instead of being exact.
		if math.Abs(w) < 1e-34 {
			if math.Abs(float64(h[i])) > 1e-34 {
				t.Fatalf("silu = %g, want %g", h[i], w)
			}
			continue
		}
		if ulps := math.Abs(float64(h[i])-w) / ulp32(w); ulps > 4 {
			t.Fatalf("silu = %g, want %g: %.1f ulp", h[i], w, ulps)
		}
	}
}

// ulp32 is the spacing of float32 values near x.
func ulp32(x float64) float64 {
	f := float32(math.Abs(x))
	return float64(math.Float32frombits(math.Float32bits(f)+1) - f)
}

func BenchmarkSiLUMul(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	h := siluInputs(rng, 8192)
	u := make([]float32, len(h))
	w := make([]float32, len(h))
	b.SetBytes(int64(8 * len(h)))
	for b.Loop() {
		copy(w, h)
		SiLUMul(w, u)
	}
}
