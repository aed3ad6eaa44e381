package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestDotF32MatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{0, 1, 31, 32, 33, 64, 100, 255, 256, 257, 4097} {
		a, b := make([]float32, n), make([]float32, n+3)
		var exact, mag float64
		for i := range a {
			a[i], b[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
			exact += float64(a[i]) * float64(b[i])
			mag += math.Abs(float64(a[i]) * float64(b[i]))
		}
		got := DotF32(a, b)
		if d := math.Abs(float64(got) - exact); d > 1e-5*mag+1e-6 {
			t.Errorf("n=%d: %v, exact %v", n, got, exact)
		}
		if g := dotF32FloatsGo(a, b); math.Abs(float64(g)-exact) > 1e-5*mag+1e-6 {
			t.Errorf("Go twin n=%d: %v, exact %v", n, g, exact)
		}
	}
}
