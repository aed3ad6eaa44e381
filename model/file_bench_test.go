package model

import (
	"os"
	"strconv"
	"testing"
)

// The File benchmarks run a model file of a real shape (say one from
// `shade synth`), named by SHADE_BENCH_MODEL, for profiling:
//
//	SHADE_BENCH_MODEL=l1b.gguf go test ./model -run - -bench File -cpuprofile cpu.out
//
// SHADE_BENCH_BATCH sets BenchmarkFileForward's rows (default 16), and
// SHADE_BENCH_DEPTH how many tokens the cache holds before the timed steps
// (default 8; as `shade bench --depth`).
func openBenchFile(b *testing.B) (*Model, *State, int) {
	path := os.Getenv("SHADE_BENCH_MODEL")
	if path == "" {
		b.Skip("SHADE_BENCH_MODEL names no model file")
	}
	depth := 8
	if v, err := strconv.Atoi(os.Getenv("SHADE_BENCH_DEPTH")); err == nil && v > 0 && v <= 1<<16 {
		depth = v
	}
	m, err := Open(path, 2)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { m.Close() })
	m.Repack() // not in the first timed step
	s, err := m.NewState(depth + 256)
	if err != nil {
		b.Fatal(err)
	}
	for done := 0; done < depth; {
		toks := make([]int32, min(512, depth-done))
		for i := range toks {
			toks[i] = int32(1 + (done+i)%1000)
		}
		if err := s.Forward(Chain(toks)); err != nil {
			b.Fatal(err)
		}
		s.CommitAll()
		done += len(toks)
	}
	return m, s, s.Len()
}

func BenchmarkFileDecode(b *testing.B) {
	m, s, keep := openBenchFile(b)
	tok, rows := []int32{5}, []int{0}
	logits := make([]float32, m.Config.Vocab)
	b.SetBytes(m.DecodeBytes())
	for b.Loop() {
		decodeStep(b, s, tok, logits, rows, keep)
	}
}

func BenchmarkFileForward(b *testing.B) {
	m, s, keep := openBenchFile(b)
	batch := 16
	if v, err := strconv.Atoi(os.Getenv("SHADE_BENCH_BATCH")); err == nil && v > 0 && v < 200 {
		batch = v
	}
	toks := make([]int32, batch)
	for i := range toks {
		toks[i] = int32(100 + i)
	}
	logits := make([]float32, m.Config.Vocab)
	for b.Loop() {
		if err := s.Truncate(keep); err != nil {
			b.Fatal(err)
		}
		if err := s.Forward(Chain(toks)); err != nil {
			b.Fatal(err)
		}
		if err := s.Logits([]int{batch - 1}, logits); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(batch)*float64(b.N)/b.Elapsed().Seconds(), "tok/s")
}
