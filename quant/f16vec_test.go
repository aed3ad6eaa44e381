package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestF16VecMatchesGo checks the dispatched half-precision kernels against
// their Go definitions bit for bit, at lengths around the 8-wide groups.
func TestF16VecMatchesGo(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 128, 130} {
		src := make([]float32, n)
		v := make([]uint16, n)
		for i := range src {
			src[i] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(6)-3)))
			v[i] = F32ToF16(float32(rng.NormFloat64()))
		}
		if n > 2 {
			src[0], src[1] = 65520, 1e-8 // overflow to Inf and underflow to a subnormal
		}
		wantH, gotH := make([]uint16, n+1), make([]uint16, n+1)
		wantH[n], gotH[n] = 0xbeef, 0xbeef // guard
		toF16Go(wantH[:n], src)
		ToF16(gotH[:n], src)
		for i := range wantH {
			if wantH[i] != gotH[i] {
				t.Fatalf("ToF16 n=%d: index %d = %#x, want %#x", n, i, gotH[i], wantH[i])
			}
		}
		acc := make([]float32, n)
		for i := range acc {
			acc[i] = f16Table[F32ToF16(float32(rng.NormFloat64()))]
		}
		want, got := append([]float32(nil), acc...), append([]float32(nil), acc...)
		s := float32(rng.Float64())
		madF16Go(want, v, s)
		MadF16(got, v, s)
		scaleF16Go(want, 0.73)
		ScaleF16(got, 0.73)
		for i := range want {
			if math.Float32bits(want[i]) != math.Float32bits(got[i]) {
				t.Fatalf("MadF16/ScaleF16 n=%d: index %d = %v, want %v", n, i, got[i], want[i])
			}
			if f16Table[F32ToF16(got[i])] != got[i] {
				t.Fatalf("accumulator %v is not an F16 value", got[i])
			}
		}
		q := append([]float32(nil), src...)
		RoundF16(q)
		for i := range q {
			if math.IsInf(float64(q[i]), 0) {
				q[i] = 1
			}
		}
		var exact float64
		var mag float64
		for i := range q {
			p := float64(q[i]) * float64(F16ToF32(v[i]))
			exact += p
			mag += math.Abs(p)
		}
		if d := math.Abs(float64(DotF16(q, v)) - exact); d > 1e-6*mag+1e-30 {
			t.Fatalf("DotF16 n=%d: %v, exact %v", n, DotF16(q, v), exact)
		}
	}
}
