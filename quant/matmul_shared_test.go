package quant

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"shade/par"
)

// TestMatMulSharedAllKernels checks that MatMulShared gives, bit for bit, what MatMul
// gives for each matrix on its own: on groups that share their activations
// (three Q4_0 of different heights, as q, k and v; Q4_K beside Q6_K, as in a
// Q4_K_M file) and on groups that must split (Q4_0 beside Q8_0, rows that are
// not whole tiles), repacked and in the file's layout, for every kernel set
// and batches of 1 to 17 rows, on 1 and 2 threads.
func TestMatMulSharedAllKernels(t *testing.T) {
	defer UseGeneric(false)
	defer UseRepack(true)
	rng := rand.New(rand.NewPCG(81, 82))
	groups := []struct {
		name  string
		types []Type
		rows  []int
		cols  int
	}{
		{"q4_0 qkv", []Type{Q4_0, Q4_0, Q4_0}, []int{128, 32, 32}, 256},
		{"q8_0 pair", []Type{Q8_0, Q8_0}, []int{64, 48}, 128},
		{"q4_k q4_k q6_k", []Type{Q4_K, Q4_K, Q6_K}, []int{64, 32, 32}, 512},
		{"q4_0 q8_0", []Type{Q4_0, Q8_0}, []int{32, 32}, 128},
		{"ragged", []Type{Q4_0, Q4_0}, []int{40, 16}, 64},
		{"f16 pair", []Type{F16, F16}, []int{16, 8}, 64},
		{"empty", []Type{Q4_0, Q4_0}, []int{32, 0}, 64},
	}
	for _, set := range KernelSets() {
		if err := UseKernels(set); err != nil {
			t.Fatal(err)
		}
		for _, repack := range []bool{false, true} {
			UseRepack(repack)
			for _, threads := range []int{1, 2} {
				p := par.New(threads)
				for _, g := range groups {
					ms := make([]Matrix, len(g.types))
					for i, typ := range g.types {
						m, err := NewMatrix(typ, g.rows[i], g.cols, randomWeights(rng, typ, g.rows[i], g.cols))
						if err != nil {
							t.Fatal(err)
						}
						ms[i] = Repackable(m, nil)
						ms[i].Repack(p)
					}
					for _, n := range []int{1, 2, 5, 16, 17} {
						name := fmt.Sprintf("%s/repack=%v/threads=%d/%s/n=%d", set, repack, threads, g.name, n)
						x := testData(rng, n*g.cols)
						want := make([][]float32, len(ms))
						got := make([][]float32, len(ms))
						var buf Scratch
						for i, m := range ms {
							want[i] = make([]float32, n*m.Rows)
							MatMul(p, m, x, n, want[i], &buf)
							got[i] = make([]float32, n*m.Rows)
							for e := range got[i] {
								got[i][e] = float32(math.NaN())
							}
						}
						MatMulShared(p, ms, x, n, got, &buf)
						for i := range ms {
							for e := range want[i] {
								if math.Float32bits(got[i][e]) != math.Float32bits(want[i][e]) {
									t.Fatalf("%s: matrix %d output %d: %v, MatMul gives %v", name, i, e, got[i][e], want[i][e])
								}
							}
						}
					}
					for _, m := range ms {
						m.DropPanels()
					}
				}
				p.Close()
			}
		}
	}
}

// TestMatMulSharedAllocates checks that a MatMulShared whose scratch has
// grown allocates nothing, as MatMul does.
func TestMatMulSharedAllocates(t *testing.T) {
	rng := rand.New(rand.NewPCG(83, 84))
	p := par.New(2)
	defer p.Close()
	ms := make([]Matrix, 3)
	ys := make([][]float32, 3)
	for i, rows := range []int{64, 16, 16} {
		ms[i], _ = NewMatrix(Q4_0, rows, 128, randomWeights(rng, Q4_0, rows, 128))
		ys[i] = make([]float32, 4*rows)
	}
	x := testData(rng, 4*128)
	var buf Scratch
	MatMulShared(p, ms, x, 4, ys, &buf)
	if a := testing.AllocsPerRun(20, func() { MatMulShared(p, ms, x, 4, ys, &buf) }); a != 0 {
		t.Errorf("MatMulShared allocates %.1f times a call", a)
	}
}
