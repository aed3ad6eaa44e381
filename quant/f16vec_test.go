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

// TestF16RunsMatchLoops checks DotsF16 and MadsF16 against loops of the
// one-row kernels (DotF16, madF16Go) bit for bit, for head
// sizes around the kernels' 16- and 64-wide groups, run lengths and row
// strides, with the machine's kernels and the generic ones.
func TestF16RunsMatchLoops(t *testing.T) {
	defer UseGeneric(false)
	rng := rand.New(rand.NewPCG(5, 6))
	for _, generic := range []bool{false, true} {
		UseGeneric(generic)
		for _, hd := range []int{1, 8, 16, 24, 32, 64, 72, 128, 136, 256} {
			for _, count := range []int{1, 2, 5, 17} {
				stride := 3*hd + 8
				rows := make([]uint16, (count-1)*stride+hd+1)
				for i := range rows {
					rows[i] = F32ToF16(float32(rng.NormFloat64()))
				}
				rows[0] = 0x7c00 // +Inf in a value propagates the same way
				q := make([]float32, hd)
				for i := range q {
					q[i] = float32(rng.NormFloat64())
				}
				RoundF16(q)
				got := make([]float32, count+1)
				got[count] = 42 // guard
				DotsF16(got[:count], q, rows[1:], stride)
				for j := range count {
					r := rows[1+j*stride : 1+j*stride+hd]
					if d := DotF16(q, r); math.Float32bits(got[j]) != math.Float32bits(d) {
						t.Fatalf("DotsF16 hd=%d count=%d row %d: %v, DotF16 %v", hd, count, j, got[j], d)
					}
				}
				if got[count] != 42 {
					t.Fatalf("DotsF16 wrote past its output")
				}
				w := make([]float32, count)
				for j := range w {
					w[j] = float32(rng.Float64())
				}
				acc := make([]float32, hd+1)
				for i := range hd {
					acc[i] = f16Table[F32ToF16(float32(rng.NormFloat64()))]
				}
				acc[hd] = 42
				want := append([]float32(nil), acc[:hd]...)
				for j, s := range w {
					madF16Go(want, rows[j*stride:j*stride+hd], s)
				}
				MadsF16(acc[:hd], rows, stride, w)
				for i := range want {
					if math.Float32bits(want[i]) != math.Float32bits(acc[i]) {
						t.Fatalf("MadsF16 generic=%v hd=%d count=%d: index %d = %v, want %v", generic, hd, count, i, acc[i], want[i])
					}
				}
				if acc[hd] != 42 {
					t.Fatalf("MadsF16 wrote past its accumulator")
				}
			}
		}
	}
}
