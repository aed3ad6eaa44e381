package synth

import (
	"fmt"
	"io"
	"testing"

	"shade/quant"
)

// BenchmarkWrite measures generation + encoding throughput (bytes of file
// per second) on two layers of llama3-1b's shape with a 32000-token
// vocabulary, written to io.Discard. A whole llama3-1b Q4_0 file (≈0.7 GB)
// takes about its size divided by this rate plus the disk's share.
func BenchmarkWrite(b *testing.B) {
	vocab := openVocab(b)
	s, _ := LookupShape("llama3-1b")
	s.Layers = 2
	for _, typ := range []quant.Type{quant.Q4_0, quant.Q8_0, quant.Q4_K, quant.F16} {
		b.Run(fmt.Sprint(typ), func(b *testing.B) {
			o := Options{Shape: s, Type: typ, Vocab: vocab, Seed: 1}
			var total int64
			o.Progress = func(done, t int64) { total = t }
			for b.Loop() {
				if err := Write(io.Discard, o); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(total)
		})
	}
}

// BenchmarkNormalRow is the generator alone, per value.
func BenchmarkNormalRow(b *testing.B) {
	row := make([]float32, 4096)
	b.SetBytes(int64(len(row)) * 4)
	for i := 0; b.Loop(); i++ {
		normalRow(row, 1, i, 0, 1)
	}
}
