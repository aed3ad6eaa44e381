package quant

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// attnGroups are the KV heads' query groups the attention benchmarks run,
// against a chunk of cache rows of 8 heads' width: a Llama-3.2-1B group
// (four query heads of 64 values), one of 128, one query alone, and
// Llama-3.2-3B (three query heads of 128) and Qwen2.5-0.5B (seven of 64)
// groups.
var attnGroups = []struct{ hd, nq, count int }{{64, 4, 256}, {128, 4, 256}, {64, 1, 256}, {128, 3, 256}, {64, 7, 256}}

// f16Rows returns count random F16 rows of hd values, stride apart.
func f16Rows(rng *rand.Rand, count, stride, hd int) []uint16 {
	rows := make([]uint16, (count-1)*stride+hd)
	for i := range rows {
		rows[i] = F32ToF16(float32(rng.NormFloat64()))
	}
	return rows
}

// The attention score run of one KV head at a cache depth.
func BenchmarkScoresF16(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range attnGroups {
		stride := 8 * c.hd
		keys := f16Rows(rng, c.count, stride, c.hd)
		q := make([]float32, c.nq*c.hd)
		for i := range q {
			q[i] = F16ToF32(F32ToF16(float32(rng.NormFloat64())))
		}
		out := make([]float32, c.nq*c.count)
		kbuf := make([]float32, c.hd)
		b.Run(fmt.Sprintf("hd%d-q%d-n%d", c.hd, c.nq, c.count), func(b *testing.B) {
			b.SetBytes(int64(2 * c.hd * c.count))
			for b.Loop() {
				ScoresF16(out, c.count, q, c.hd, keys, stride, c.count, kbuf)
			}
		})
	}
}

// The attention value sums of one KV head: each query's F16 accumulator
// taking a chunk of value rows weighted by its probabilities.
func BenchmarkMadsF16Group(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range attnGroups {
		stride := 8 * c.hd
		rows := f16Rows(rng, c.count, stride, c.hd)
		w := make([]float32, c.nq*c.count)
		for i := range w {
			w[i] = float32(rng.Float64()) / float32(c.count)
		}
		acc := make([]float32, c.nq*c.hd)
		b.Run(fmt.Sprintf("hd%d-q%d-n%d", c.hd, c.nq, c.count), func(b *testing.B) {
			b.SetBytes(int64(2 * c.hd * c.count))
			for b.Loop() {
				clear(acc)
				MadsF16Group(acc, c.hd, rows, stride, w, c.count, c.count)
			}
		})
	}
}
