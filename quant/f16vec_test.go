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

// TestF16RunsMatchLoops checks ScoresF16 against scoreF16Go (ggml's order)
// and MadsF16 against a loop of madF16Go, bit for bit, for head
// sizes around the kernels' 16- and 64-wide groups, run lengths and row
// strides, with the machine's kernels and the generic ones.
func TestF16RunsMatchLoops(t *testing.T) {
	defer UseGeneric(false)
	rng := rand.New(rand.NewPCG(5, 6))
	for _, generic := range []bool{false, true} {
		UseGeneric(generic)
		for _, hd := range []int{1, 8, 16, 24, 32, 64, 72, 128, 136, 256} {
			for _, count := range []int{1, 2, 3, 4, 5, 6, 17, 64, 131} {
				stride := 3*hd + 8
				rows := make([]uint16, (count-1)*stride+hd+1)
				for i := range rows {
					rows[i] = F32ToF16(float32(rng.NormFloat64()))
				}
				rows[1] = 0x7c00 // +Inf in the first key row and a value row propagates the same way
				// Three queries, and four and eight (a KV head's group,
				// which the AVX-512 kernel takes four at a time), five and
				// seven (four at a time, then one at a time).
				nq := []int{3, 4, 8, 5, 7}[(count+hd)%5]
				q := make([]float32, nq*hd)
				for i := range q {
					q[i] = float32(rng.NormFloat64())
				}
				RoundF16(q)
				ldo := count + 2
				got := make([]float32, nq*ldo)
				for i := range got {
					got[i] = 42 // guards between the queries' outputs
				}
				kbuf := make([]float32, hd)
				ScoresF16(got, ldo, q, hd, rows[1:], stride, count, kbuf)
				for i := range nq {
					for j := range ldo {
						g := got[i*ldo+j]
						if j >= count {
							if g != 42 {
								t.Fatalf("ScoresF16 wrote past query %d's %d scores", i, count)
							}
							continue
						}
						r := rows[1+j*stride : 1+j*stride+hd]
						qi := q[i*hd : (i+1)*hd]
						if want := scoreF16Go(qi, r); math.Float32bits(g) != math.Float32bits(want) {
							t.Fatalf("ScoresF16 generic=%v hd=%d count=%d query %d row %d: %v, want %v", generic, hd, count, i, j, g, want)
						}
						if j == 0 {
							continue // row 0 holds +Inf
						}
						var exact, mag float64
						for e := range qi {
							p := float64(qi[e]) * float64(F16ToF32(r[e]))
							exact += p
							mag += math.Abs(p)
						}
						if d := math.Abs(float64(g) - exact); d > 1e-6*mag+1e-30 {
							t.Fatalf("ScoresF16 hd=%d: %v, exact %v", hd, g, exact)
						}
					}
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

// TestRoundF16Kernels holds RoundF16 on every kernel set this CPU runs to
// the Go loop bit for bit (NaN for NaN), at lengths around the 8-wide
// groups, over normal, subnormal, overflowing and tie-breaking values.
func TestRoundF16Kernels(t *testing.T) {
	defer UseGeneric(false)
	rng := rand.New(rand.NewPCG(13, 14))
	in := []float32{0, float32(math.Copysign(0, -1)), 65504, 65519.99, 65520, -65520, 1e-8, -1e-8, 6e-8, 3e-8, 2.9802322e-8,
		1 + 1.0/2048, 1 + 3.0/2048, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), math.Float32frombits(0x7f800001)}
	for len(in) < 4000 {
		switch rng.IntN(3) {
		case 0:
			in = append(in, float32(rng.NormFloat64()*math.Pow(10, float64(rng.IntN(12)-6))))
		case 1:
			in = append(in, math.Float32frombits(rng.Uint32()))
		default: // halfway between two F16 values
			h := uint16(rng.IntN(0x7bff))
			in = append(in, (F16ToF32(h)+F16ToF32(h+1))/2)
		}
	}
	for _, set := range KernelSets() {
		if err := UseKernels(set); err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{0, 1, 7, 8, 9, 17, 64, len(in)} {
			want := append([]float32(nil), in[:n]...)
			roundF16Go(want)
			got := append([]float32(nil), in[:n]...)
			RoundF16(got)
			for i := range want {
				if math.IsNaN(float64(want[i])) && math.IsNaN(float64(got[i])) {
					continue
				}
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s n=%d: RoundF16(%v) = %v, Go loop %v", set, n, in[i], got[i], want[i])
				}
			}
		}
	}
}

// TestMadsF16Group holds MadsF16Group to one query at a time through the
// Go loop, bit for bit, with every kernel set: groups of 1–5 queries
// (four of 64 and 128 values take the AVX-512 kernel where it runs),
// weight rows apart, counts past a chunk, values with Inf and NaN among
// them, and weights that overflow F16. Accumulators past the group stay.
func TestMadsF16Group(t *testing.T) {
	defer UseGeneric(false)
	rng := rand.New(rand.NewPCG(7, 8))
	for _, set := range KernelSets() {
		if err := UseKernels(set); err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{8, 64, 128, 192} {
			for _, nq := range []int{1, 3, 4, 5, 6, 7, 8} {
				for _, count := range []int{1, 2, 7, 64, 65} {
					stride := n + 8*rng.IntN(3)
					rows := make([]uint16, (count-1)*stride+n)
					for i := range rows {
						rows[i] = F32ToF16(float32(rng.NormFloat64()))
					}
					rows[rng.IntN(len(rows))] = 0x7c00 // +Inf
					if count > 3 {
						rows[rng.IntN(len(rows))] = 0xfe01 // a NaN
					}
					ws := count + rng.IntN(5)
					w := make([]float32, nq*ws)
					for i := range w {
						w[i] = float32(rng.Float64())
					}
					w[rng.IntN(len(w))] = 70000 // past F16's range
					acc := make([]float32, nq*n+1)
					for i := range nq * n {
						acc[i] = f16Table[F32ToF16(float32(rng.NormFloat64()))]
					}
					acc[nq*n] = 42
					want := append([]float32(nil), acc[:nq*n]...)
					for q := range nq {
						for j := range count {
							madF16Go(want[q*n:(q+1)*n], rows[j*stride:j*stride+n], w[q*ws+j])
						}
					}
					MadsF16Group(acc[:nq*n], n, rows, stride, w, ws, count)
					for i := range want {
						if math.Float32bits(want[i]) != math.Float32bits(acc[i]) && !(math.IsNaN(float64(want[i])) && math.IsNaN(float64(acc[i]))) {
							t.Fatalf("%s n=%d nq=%d count=%d: query %d index %d = %v, want %v", set, n, nq, count, i/n, i%n, acc[i], want[i])
						}
					}
					if acc[nq*n] != 42 {
						t.Fatalf("%s n=%d nq=%d: wrote past the group", set, n, nq)
					}
				}
			}
		}
	}
}
