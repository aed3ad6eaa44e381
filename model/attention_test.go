package model

import (
	"math"
	"slices"
	"testing"
)

// TestLongPromptBatchInvariant runs a prompt longer than an attention
// block and chunk (attnBlock, attnChunk) as one batch, as uneven ubatches
// and token by token, and checks every row's final hidden state (what the
// LM head reads) is bit-identical: a
// query's attention must not depend on which block, chunk or batch it was
// computed in. Head sizes 8, 32 and 64 take the generic and the assembly
// paths of the multi-row kernels.
func TestLongPromptBatchInvariant(t *testing.T) {
	const n = 150
	for _, name := range []string{"stories260K.gguf", "llama-tiny-q4_0.gguf", "qwen3-tiny-q8_0.gguf"} {
		t.Run(name, func(t *testing.T) {
			m := openConformance(t, name)
			V, D := m.Config.Vocab, m.Config.Dim
			prompt := make([]int32, n)
			for i := range prompt {
				prompt[i] = int32((i*131 + 7) % V)
			}
			whole, _ := m.NewState(n)
			all := hiddenOf(t, whole, Chain(prompt))
			for _, cuts := range [][]int{{70, 71, n}, {1, 17, 100, n}} {
				s, _ := m.NewState(n)
				lo := 0
				for _, hi := range cuts {
					got := hiddenOf(t, s, Chain(prompt[lo:hi]))
					if err := s.CommitAll(); err != nil {
						t.Fatal(err)
					}
					for r := lo; r < hi; r++ {
						if !slices.Equal(got[(r-lo)*D:(r-lo+1)*D], all[r*D:(r+1)*D]) {
							t.Fatalf("cuts %v: row %d differs from the whole-prompt batch", cuts, r)
						}
					}
					lo = hi
				}
			}
			seq, _ := m.NewState(n)
			for r, tok := range prompt {
				got := hiddenOf(t, seq, Chain([]int32{tok}))
				if err := seq.CommitAll(); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, all[r*D:(r+1)*D]) {
					t.Fatalf("row %d: token by token differs from the batch", r)
				}
			}
		})
	}
}

// hiddenOf runs a batch on a state and returns every row's residual stream
// after the last layer, back to back.
func hiddenOf(t *testing.T, s *State, b Batch) []float32 {
	t.Helper()
	if err := s.Forward(b); err != nil {
		t.Fatal(err)
	}
	var out []float32
	for i := range b.Tokens {
		out = append(out, s.Hidden(i)...)
	}
	return out
}

// TestGroupSteps holds the softmax steps of a KV head's query heads taken
// together (quant.SoftmaxArgs, SoftmaxSteps) against the steps of one head
// at a time, bit for bit, on models whose KV heads have 2 and 4 query heads
// and on the qwen ones: every row's final hidden state of a prompt longer
// than a chunk, run in uneven ubatches, then of eight decode steps after it.
func TestGroupSteps(t *testing.T) {
	defer func() { groupSteps = true }()
	for _, name := range []string{"llama3-tiny-q4_0.gguf", "llama-tiny-q8_0.gguf", "qwen2-tiny-q8_0.gguf", "qwen3-tiny-q8_0.gguf"} {
		t.Run(name, func(t *testing.T) {
			m := openConformance(t, name)
			t.Logf("%d query heads a KV head", m.Config.Heads/m.Config.KVHeads)
			const n = 200
			V := m.Config.Vocab
			prompt := make([]int32, n)
			for i := range prompt {
				prompt[i] = int32((i*97 + 3) % V)
			}
			run := func(group bool) []float32 {
				groupSteps = group
				s, _ := m.NewState(n + 8)
				var out []float32
				lo := 0
				for _, hi := range []int{n / 2, n/2 + 37, n} {
					out = append(out, hiddenOf(t, s, Chain(prompt[lo:hi]))...)
					if err := s.CommitAll(); err != nil {
						t.Fatal(err)
					}
					lo = hi
				}
				for i := range 8 {
					out = append(out, hiddenOf(t, s, Chain([]int32{int32(i + 1)}))...)
					if err := s.CommitAll(); err != nil {
						t.Fatal(err)
					}
				}
				return out
			}
			want, got := run(false), run(true)
			D := m.Config.Dim
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("row %d, value %d: %v with the heads' steps together, %v one head at a time", i/D, i%D, got[i], want[i])
				}
			}
		})
	}
}
