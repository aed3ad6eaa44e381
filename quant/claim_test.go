package quant

import (
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"shade/par"
)

// TestClaimOnce: an owner taking a share's blocks from the front while
// thieves take them from the back gets every block exactly once.
func TestClaimOnce(t *testing.T) {
	for _, blocks := range []int{0, 1, 2, 7, 1000} {
		var j matJob
		var claims [1]atomic.Uint64
		j.claims = claims[:]
		j.claims[0].Store(uint64(blocks))
		got := make([][]int, 4)
		var wg sync.WaitGroup
		for g := range got {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					b, ok := j.claim(0, g > 0)
					if !ok {
						return
					}
					got[g] = append(got[g], b)
				}
			}()
		}
		wg.Wait()
		seen := make([]int, blocks)
		for g, bs := range got {
			for i, b := range bs {
				if b < 0 || b >= blocks {
					t.Fatalf("%d blocks: claimed block %d", blocks, b)
				}
				seen[b]++
				// The owner's blocks rise and the thieves' fall.
				if i > 0 && (g == 0) != (b > bs[i-1]) {
					t.Fatalf("%d blocks: claimer %d took %d after %d", blocks, g, b, bs[i-1])
				}
			}
		}
		for b, c := range seen {
			if c != 1 {
				t.Fatalf("%d blocks: block %d claimed %d times", blocks, b, c)
			}
		}
	}
}

// TestMatMulClaimedBlocks: with shares cut into blocks of one row tile,
// which thread computes which block varies from call to call, and the
// outputs are still bit for bit those of one thread, for every type, one
// matrix or several at once, decode and batches, on every kernel path.
func TestMatMulClaimedBlocks(t *testing.T) {
	savedBytes, savedRows := claimBlockBytes, claimBlockRows
	defer func() { claimBlockBytes, claimBlockRows = savedBytes, savedRows }()
	claimBlockBytes, claimBlockRows = 1, rowTile // one row tile a block: the most claims
	forEachKernelPath(t, testMatMulClaimedBlocks)
}

func testMatMulClaimedBlocks(t *testing.T) {
	rng := rand.New(rand.NewPCG(91, 92))
	pools := []*par.Pool{par.New(2), par.New(3), par.New(5)}
	defer func() {
		for _, p := range pools {
			p.Close()
		}
	}()
	reps := 8
	if testing.Short() {
		reps = 2
	}
	const cols = 512
	rows := []int{160, 48, 48} // 10 and 3 row tiles: shares of uneven block counts
	for _, typ := range []Type{Q4_0, Q8_0, Q4_K, Q6_K, F16, F32} {
		ms := make([]Matrix, len(rows))
		for i, r := range rows {
			var data []byte
			switch typ {
			case Q4_K, Q6_K:
				data = kWeights(t, rng, typ, r, cols/qkK, "quantized")
			case F16, F32:
				size, _ := typ.RowBytes(r * cols)
				data = make([]byte, size)
				for e := 0; e < r*cols; e++ {
					v := float32(rng.NormFloat64())
					if typ == F16 {
						h := F32ToF16(v)
						data[2*e], data[2*e+1] = byte(h), byte(h>>8)
					} else {
						b := math.Float32bits(v)
						data[4*e], data[4*e+1], data[4*e+2], data[4*e+3] = byte(b), byte(b>>8), byte(b>>16), byte(b>>24)
					}
				}
			default:
				data = randomWeights(rng, typ, r, cols)
			}
			m, err := NewMatrix(typ, r, cols, data)
			if err != nil {
				t.Fatal(err)
			}
			ms[i] = Repackable(m, nil)
		}
		for _, n := range []int{1, 3, 16} {
			x := testData(rng, n*cols)
			want := make([][]float32, len(ms))
			var buf Scratch
			for i, m := range ms {
				want[i] = make([]float32, n*m.Rows)
				MatMul(nil, m, x, n, want[i], &buf)
			}
			for _, p := range pools {
				for rep := 0; rep < reps; rep++ {
					got := make([][]float32, len(ms))
					for i, m := range ms {
						got[i] = make([]float32, n*m.Rows)
					}
					if rep%2 == 0 {
						MatMul(p, ms[0], x, n, got[0], &buf)
						got = got[:1]
					} else {
						MatMulShared(p, ms, x, n, got, &buf)
					}
					for i := range got {
						for e := range got[i] {
							if math.Float32bits(got[i][e]) != math.Float32bits(want[i][e]) {
								t.Fatalf("%v n=%d %v rep %d: matrix %d output %d = %v, one thread gave %v",
									typ, n, p, rep, i, e, got[i][e], want[i][e])
							}
						}
					}
				}
			}
		}
	}
}
