//go:build amd64 && !noasm && gc

package quant

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkGemmKKernels runs each generated kernel alone on one row group
// of 8 super-blocks (2048 columns) in L1: ns per super-block per pair is
// the kernel's compute cost without the memory's.
func BenchmarkGemmKKernels(b *testing.B) {
	rng := rand.New(rand.NewPCG(47, 48))
	const nb = 8
	for ti, typ := range []Type{Q4_K, Q6_K} {
		rb := nb * typ.BlockBytes()
		w := kWeights(b, rng, typ, 8, nb, "quantized")
		a := kActRows(rng, 8, nb, "quantized")
		y := make([]float32, 64)
		for _, s := range gemmKShapes {
			f := s.q4k
			if ti == 1 {
				f = s.q6k
			}
			b.Run(fmt.Sprintf("%v/R%dC%d", typ, s.r, s.c), func(b *testing.B) {
				for b.Loop() {
					f(&w[0], rb, &a[0], nb*q8_KBytes, nb, &y[0], 8)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(nb*s.r*s.c), "ns/pair-block")
			})
		}
	}
}
