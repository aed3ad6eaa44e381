package model

import (
	"strconv"
	"testing"
)

func decodeStep(b testing.TB, s *State, tok []int32, logits []float32, rows []int, keep int) {
	if err := s.Truncate(keep); err != nil {
		b.Fatal(err)
	}
	if err := s.Forward(Chain(tok)); err != nil {
		b.Fatal(err)
	}
	if err := s.Logits(rows, logits); err != nil {
		b.Fatal(err)
	}
	if err := s.CommitAll(); err != nil {
		b.Fatal(err)
	}
}

// TestDecodeStepAllocs: once warm, a decode step allocates nothing.
func TestDecodeStepAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector drops sync.Pool items at random: allocation counts mean nothing under it")
	}
	for _, name := range []string{"llama-tiny-q4_0.gguf", "qwen2-tiny-q8_0.gguf"} {
		m := openConformance(t, name)
		s, _ := m.NewState(64)
		s.Forward(Chain(testPrompt))
		s.CommitAll()
		keep := s.Len()
		tok, rows := []int32{5}, []int{0}
		logits := make([]float32, m.Config.Vocab)
		decodeStep(t, s, tok, logits, rows, keep)
		if n := testing.AllocsPerRun(20, func() { decodeStep(t, s, tok, logits, rows, keep) }); n != 0 {
			t.Errorf("%s: %.1f allocations per decode step", name, n)
		}
	}
}

func benchDecode(b *testing.B, name string) {
	m := openConformanceB(b, name)
	s, _ := m.NewState(256)
	s.Forward(Chain(testPrompt))
	s.CommitAll()
	keep := s.Len()
	tok, rows := []int32{5}, []int{0}
	logits := make([]float32, m.Config.Vocab)
	b.SetBytes(m.DecodeBytes())
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		decodeStep(b, s, tok, logits, rows, keep)
	}
}

func benchForward(b *testing.B, name string, batch int) {
	m := openConformanceB(b, name)
	s, _ := m.NewState(256)
	s.Forward(Chain(testPrompt))
	s.CommitAll()
	keep := s.Len()
	toks := make([]int32, batch)
	for i := range toks {
		toks[i] = int32(100 + i)
	}
	logits := make([]float32, m.Config.Vocab)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		s.Truncate(keep)
		s.Forward(Chain(toks))
		s.Logits([]int{batch - 1}, logits)
	}
	b.ReportMetric(float64(batch)*float64(b.N)/b.Elapsed().Seconds(), "tok/s")
}

func BenchmarkDecodeQ4_0(b *testing.B) { benchDecode(b, "llama-tiny-q4_0.gguf") }
func BenchmarkDecodeQ8_0(b *testing.B) { benchDecode(b, "llama-tiny-q8_0.gguf") }
func BenchmarkDecodeQ4_K(b *testing.B) { benchDecode(b, "llama-tiny-q4_k_m.gguf") }

func BenchmarkForwardQ4_0(b *testing.B) {
	for _, batch := range []int{1, 2, 4, 8, 16, 32, 64} {
		b.Run("batch="+strconv.Itoa(batch), func(b *testing.B) { benchForward(b, "llama-tiny-q4_0.gguf", batch) })
	}
}
