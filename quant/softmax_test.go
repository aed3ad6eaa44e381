package quant

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// softmaxLoop is the online softmax of one query as ggml's flash
// attention takes it (softmax.go's loop), written out independently of
// the kernels and their twins: it scales sc in place and returns the
// exponentials' arguments, weights and factors per slot, whether the
// maximum rose, and the final maximum and sum.
func softmaxLoop(sc []float32, scale, m, sum float32) (args, w, f []float32, rose []bool, nm, nsum float32) {
	for j := range sc {
		x := sc[j] * scale
		sc[j] = x
		if x > m {
			e := Exp32(m - x)
			args = append(args, m-x)
			m, sum = x, float32(sum*e)+1
			w, f, rose = append(w, 1), append(f, e), append(rose, true)
		} else {
			e := Exp32(x - m)
			args = append(args, x-m)
			sum += e
			w, f, rose = append(w, e), append(f, 1), append(rose, false)
		}
	}
	return args, w, f, rose, m, sum
}

// softmaxScores fills four queries' scores (stride apart) in one of several
// styles: plain random, rising (the maximum rises at most slots), ties of
// both zeros, and special values (NaN, ±Inf, subnormals) among them.
func softmaxScores(rng *rand.Rand, style, stride, n int) []float32 {
	sc := make([]float32, 3*stride+n+5)
	for i := range sc {
		sc[i] = float32(rng.NormFloat64() * 4)
		switch style {
		case 1:
			sc[i] = float32(i%max(stride, 1))*0.5 + float32(rng.NormFloat64())
		case 2:
			sc[i] = [...]float32{0, float32(math.Copysign(0, -1)), 1, -1, 1}[rng.IntN(5)]
		case 3:
			if rng.IntN(4) == 0 {
				sc[i] = [...]float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)),
					math.Float32frombits(1), -math.Float32frombits(5), math.MaxFloat32}[rng.IntN(6)]
			}
		}
	}
	return sc
}

func same32(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || (a != a && b != b)
}

// TestSoftmax4 holds SoftmaxArgs4, Exp32s and SoftmaxSteps4, on every
// kernel set, against softmaxLoop query by query, bit for bit (any NaN
// matching any NaN): every slot count 0-64, strides past it, maxima and
// sums carried in (-Inf and 0 at a chunk's start, others later).
func TestSoftmax4(t *testing.T) {
	defer UseGeneric(false)
	for _, set := range KernelSets() {
		if err := UseKernels(set); err != nil {
			t.Fatal(err)
		}
		t.Run(set, testSoftmax4)
	}
}

func testSoftmax4(t *testing.T) {
	rng := rand.New(rand.NewPCG(81, 82))
	for n := 0; n <= 64; n++ {
		for _, stride := range []int{n, 64, 67} {
			if stride < n {
				continue
			}
			for style := range 4 {
				for carried := range 2 {
					name := fmt.Sprintf("n=%d/stride=%d/style=%d/carried=%d", n, stride, style, carried)
					sc := softmaxScores(rng, style, stride, n)
					ref := append([]float32(nil), sc...)
					scale := float32(0.125)
					maxs, sums := [4]float32{}, [4]float32{}
					for q := range 4 {
						maxs[q], sums[q] = float32(math.Inf(-1)), 0
						if carried == 1 {
							maxs[q], sums[q] = float32(rng.NormFloat64()), 1+rng.Float32()*5
						}
					}
					if carried == 1 && style == 3 {
						maxs[1] = float32(math.Inf(1))
					}
					ex := make([]float32, len(sc))
					w := make([]float32, len(sc))
					f := make([]float32, len(sc))
					raised := make([]float32, 70)
					gotMaxs, gotSums := maxs, sums
					var rose [4]uint64
					SoftmaxArgs4(sc, ex, stride, n, scale, &gotMaxs, &rose)
					args := append([]float32(nil), ex...)
					for q := range 4 {
						Exp32s(ex[q*stride : q*stride+n])
					}
					SoftmaxSteps4(ex, w, f, raised, stride, n, &rose, &gotSums)
					anyRose := make([]bool, n)
					for q := range 4 {
						o := q * stride
						wantArgs, wantW, wantF, wantRose, m, s := softmaxLoop(ref[o:o+n], scale, maxs[q], sums[q])
						for j := range n {
							switch {
							case !same32(sc[o+j], ref[o+j]):
								t.Fatalf("%s: query %d slot %d: scaled score %v, want %v", name, q, j, sc[o+j], ref[o+j])
							case !same32(args[o+j], wantArgs[j]):
								t.Fatalf("%s: query %d slot %d: argument %v, want %v", name, q, j, args[o+j], wantArgs[j])
							case rose[q]>>j&1 == 1 != wantRose[j]:
								t.Fatalf("%s: query %d slot %d: rose %v, want %v", name, q, j, rose[q]>>j&1 == 1, wantRose[j])
							case !same32(w[o+j], wantW[j]) || !same32(f[o+j], wantF[j]):
								t.Fatalf("%s: query %d slot %d: weight, factor %v %v, want %v %v", name, q, j, w[o+j], f[o+j], wantW[j], wantF[j])
							}
							anyRose[j] = anyRose[j] || wantRose[j]
						}
						if rose[q]>>n != 0 {
							t.Fatalf("%s: query %d: rose bits %#x past slot %d", name, q, rose[q], n)
						}
						if !same32(gotMaxs[q], m) || !same32(gotSums[q], s) {
							t.Fatalf("%s: query %d: max, sum %v %v, want %v %v", name, q, gotMaxs[q], gotSums[q], m, s)
						}
					}
					for j, r := range raised {
						want := float32(0)
						if j < n && anyRose[j] {
							want = 1
						}
						if r != want {
							t.Fatalf("%s: raised[%d] = %v, want %v", name, j, r, want)
						}
					}
				}
			}
		}
	}
}

// TestSoftmax4Checks holds the exported functions' argument checks.
func TestSoftmax4Checks(t *testing.T) {
	var maxs, sums [4]float32
	var rose [4]uint64
	for _, c := range []struct {
		name      string
		size, str int
		n         int
	}{
		{"too many slots", 4 * 65, 65, 65},
		{"stride below n", 4 * 64, 10, 20},
		{"short slice", 3*64 + 10, 64, 20},
		{"negative", 256, 64, -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			x := make([]float32, c.size)
			SoftmaxArgs4(x, x, c.str, c.n, 1, &maxs, &rose)
		})
	}
	x := make([]float32, 256)
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("SoftmaxSteps4 with a short raised: no panic")
			}
		}()
		SoftmaxSteps4(x, x, x, x[:10], 64, 20, &rose, &sums)
	}()
}

func BenchmarkSoftmax4(b *testing.B) {
	defer UseGeneric(false)
	rng := rand.New(rand.NewPCG(83, 84))
	for _, set := range KernelSets() {
		if err := UseKernels(set); err != nil {
			b.Fatal(err)
		}
		b.Run(set, func(b *testing.B) {
			const n = 64
			sc0 := softmaxScores(rng, 0, n, n)
			sc := make([]float32, len(sc0))
			ex := make([]float32, len(sc0))
			w := make([]float32, len(sc0))
			f := make([]float32, len(sc0))
			raised := make([]float32, n)
			maxs, sums, rose := new([4]float32), new([4]float32), new([4]uint64)
			for b.Loop() {
				copy(sc, sc0)
				*maxs, *sums = [4]float32{-1, -1, -1, -1}, [4]float32{1, 1, 1, 1}
				SoftmaxArgs4(sc, ex, n, n, 0.125, maxs, rose)
				Exp32s(ex[:4*n])
				SoftmaxSteps4(ex, w, f, raised, n, n, rose, sums)
				clear(raised)
			}
			b.ReportMetric(float64(4*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gslots/s")
		})
	}
}
