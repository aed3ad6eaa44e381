package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestK35Sets holds every per-architecture set's Q3_K and Q5_K kernels,
// the dots and (where the set has it) gemmK for batches of 1..33 rows,
// bit for bit to the Go twins, over quantized and raw random blocks with
// odd row counts and padded strides. It runs wherever the sets do (under
// qemu for arm64).
func TestK35Sets(t *testing.T) {
	rng := rand.New(rand.NewPCG(53, 35))
	if len(archSets) == 0 {
		t.Skip("no per-architecture kernel sets on this CPU")
	}
	for si := range archSets {
		s := &archSets[si]
		t.Logf("set %s: gemmK for Q3_K %v, Q5_K %v", s.name, s.hasGemmK(Q3_K), s.hasGemmK(Q5_K))
		dots := map[Type]func(w, a []byte) float32{Q3_K: s.dotQ3_KQ8_K, Q5_K: s.dotQ5_KQ8_K}
		for _, typ := range k35Types {
			for _, nb := range []int{1, 2, 3, 5, 8, 17} {
				for _, mode := range []string{"quantized", "random", "0xff", "0x80"} {
					var w, a []byte
					if mode == "quantized" {
						w = encode(t, typ, testData(rng, nb*qkK))
						a = quantizeAct(t, Q8_K, testData(rng, nb*qkK))
					} else {
						w = k35RawWeights(rng, typ, nb, mode)
						a = k35RawActs(rng, nb, mode)
					}
					got, want := dots[typ](w, a), k35Twins[typ](w, a)
					if math.Float32bits(got) != math.Float32bits(want) {
						t.Fatalf("set %s %v %s %d blocks: dot %v, twin %v", s.name, typ, mode, nb, got, want)
					}
				}
			}
			if !s.hasGemmK(typ) {
				continue
			}
			const rows, nb, pad = 13, 3, 5
			bs := typ.BlockBytes()
			rb := nb*bs + pad
			w := make([]byte, rows*rb)
			for r := 0; r < rows; r++ {
				if r%2 == 1 {
					copy(w[r*rb:], k35RawWeights(rng, typ, nb, "random"))
				} else {
					copy(w[r*rb:], encode(t, typ, testData(rng, nb*qkK)))
				}
			}
			for n := 1; n <= 33; n++ {
				arb := nb*q8_KBytes + 1
				a := make([]byte, n*arb)
				for i := 0; i < n; i++ {
					copy(a[i*arb:], k35RawActs(rng, nb, "random"))
				}
				ys := rows + 1
				y := make([]float32, n*ys)
				s.gemmK(typ, w, rb, 1, rows, a, arb, n, y, ys)
				for i := 0; i < n; i++ {
					for r := 1; r < rows; r++ {
						want := k35Twins[typ](w[r*rb:r*rb+nb*bs], a[i*arb:])
						if got := y[i*ys+r]; math.Float32bits(got) != math.Float32bits(want) {
							t.Fatalf("set %s %v n=%d: y[%d][%d] = %v, twin %v", s.name, typ, n, i, r, got, want)
						}
					}
				}
			}
		}
	}
}
