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
			m, sum = x, float32(math.FMA(float64(sum), float64(e), 1))
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

// softmaxScores fills nq queries' scores (stride apart) in one of several
// styles: plain random, rising (the maximum rises at most slots), ties of
// both zeros, and special values (NaN, ±Inf, subnormals) among them.
func softmaxScores(rng *rand.Rand, style, nq, stride, n int) []float32 {
	sc := make([]float32, (nq-1)*stride+n+5)
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

// TestSoftmax holds SoftmaxArgs, Exp32s and SoftmaxSteps, on every kernel
// set, against softmaxLoop query by query, bit for bit (any NaN matching
// any NaN): 1-8 queries (the query heads of a KV head), every slot count
// 0-64, strides past it, maxima and sums carried in (-Inf and 0 at a
// chunk's start, others later).
func TestSoftmax(t *testing.T) {
	defer UseGeneric(false)
	for _, set := range KernelSets() {
		if err := UseKernels(set); err != nil {
			t.Fatal(err)
		}
		t.Run(set, testSoftmax)
	}
}

func testSoftmax(t *testing.T) {
	rng := rand.New(rand.NewPCG(81, 82))
	for _, nq := range []int{1, 2, 3, 4, 5, 7, 8} {
		for n := 0; n <= 64; n++ {
			if nq != 4 && n%5 != 0 && n%16 > 1 && n != 63 {
				continue // every n for four queries; a spread for the others
			}
			for _, stride := range []int{n, 64, 67} {
				if stride < n {
					continue
				}
				for style := range 4 {
					for carried := range 2 {
						name := fmt.Sprintf("nq=%d/n=%d/stride=%d/style=%d/carried=%d", nq, n, stride, style, carried)
						sc := softmaxScores(rng, style, nq, stride, n)
						ref := append([]float32(nil), sc...)
						scale := float32(0.125)
						maxs, sums := make([]float32, nq), make([]float32, nq)
						for q := range nq {
							maxs[q], sums[q] = float32(math.Inf(-1)), 0
							if carried == 1 {
								maxs[q], sums[q] = float32(rng.NormFloat64()), 1+rng.Float32()*5
							}
						}
						if carried == 1 && style == 3 {
							maxs[nq/2] = float32(math.Inf(1))
						}
						ex := make([]float32, len(sc))
						w := make([]float32, len(sc))
						f := make([]float32, len(sc))
						raised := make([]float32, 70)
						gotMaxs, gotSums := append([]float32(nil), maxs...), append([]float32(nil), sums...)
						rose := make([]uint64, nq)
						for q := range rose {
							rose[q] = 1<<64 - 1 // SoftmaxArgs clears it
						}
						SoftmaxArgs(sc, ex, stride, n, scale, gotMaxs, rose)
						args := append([]float32(nil), ex...)
						for q := range nq {
							Exp32s(ex[q*stride : q*stride+n])
						}
						SoftmaxSteps(ex, w, f, raised, stride, n, rose, gotSums)
						anyRose := make([]bool, n)
						for q := range nq {
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
}

// TestSoftmaxChecks holds the exported functions' argument checks.
func TestSoftmaxChecks(t *testing.T) {
	maxs, sums, rose := make([]float32, 4), make([]float32, 4), make([]uint64, 4)
	for _, c := range []struct {
		name      string
		size, str int
		n, words  int
	}{
		{"too many slots", 4 * 65, 65, 65, 4},
		{"stride below n", 4 * 64, 10, 20, 4},
		{"short slice", 3*64 + 10, 64, 20, 4},
		{"negative", 256, 64, -1, 4},
		{"rose words", 256, 64, 20, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			x := make([]float32, c.size)
			SoftmaxArgs(x, x, c.str, c.n, 1, maxs, rose[:c.words])
		})
	}
	x := make([]float32, 256)
	for _, c := range []struct {
		name    string
		raised  int
		queries int
	}{{"short raised", 10, 4}, {"no queries", 64, 0}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Fatalf("SoftmaxSteps, %s: no panic", c.name)
				}
			}()
			SoftmaxSteps(x, x, x, x[:c.raised], 64, 20, rose[:c.queries], sums[:c.queries])
		}()
	}
}

// BenchmarkSoftmax runs a chunk of 64 slots for the four query heads of a
// KV head (Llama 3), exponentials included.
func BenchmarkSoftmax(b *testing.B) {
	defer UseGeneric(false)
	rng := rand.New(rand.NewPCG(83, 84))
	for _, set := range KernelSets() {
		if err := UseKernels(set); err != nil {
			b.Fatal(err)
		}
		b.Run(set, func(b *testing.B) {
			const n, nq = 64, 4
			sc0 := softmaxScores(rng, 0, nq, n, n)
			sc := make([]float32, len(sc0))
			ex := make([]float32, len(sc0))
			w := make([]float32, len(sc0))
			f := make([]float32, len(sc0))
			raised := make([]float32, n)
			maxs, sums, rose := make([]float32, nq), make([]float32, nq), make([]uint64, nq)
			for b.Loop() {
				copy(sc, sc0)
				for q := range nq {
					maxs[q], sums[q] = -1, 1
				}
				SoftmaxArgs(sc, ex, n, n, 0.125, maxs, rose)
				Exp32s(ex[:nq*n])
				SoftmaxSteps(ex, w, f, raised, n, n, rose, sums)
				clear(raised)
			}
			b.ReportMetric(float64(nq*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gslots/s")
		})
	}
}
