package model

import (
	"slices"
	"testing"
)

// TestPruneBitIdentical: rows kept through Prune come out bit-identical to
// the same rows of an unpruned pass (logits and the KV they commit), for
// trees and chains, pruning once or twice at different layers.
func TestPruneBitIdentical(t *testing.T) {
	tree := Batch{
		Tokens: []int32{7, 100, 200, 300, 400, 500, 61},
		Parent: []int32{-1, 0, 0, 1, 2, 2, 3},
	}
	chain := Batch{Tokens: []int32{7, 100, 200, 300, 400}}
	cases := []struct {
		name   string
		batch  Batch
		at     []int   // prune after these layers (as fractions of depth: index into layers)
		keeps  [][]int // rows kept at each prune
		commit []int
	}{
		{"tree once", tree, []int{1}, [][]int{{0, 1, 3, 6}}, []int{0, 1, 3, 6}},
		{"tree twice", tree, []int{0, 2}, [][]int{{0, 1, 2, 3, 4, 6}, {0, 2, 4}}, []int{0, 2, 4}},
		{"tree keep all", tree, []int{1}, [][]int{{0, 1, 2, 3, 4, 5, 6}}, []int{0, 2, 5}},
		{"chain prefix", chain, []int{1}, [][]int{{0, 1, 2}}, []int{0, 1, 2}},
	}
	for _, name := range []string{"stories260K.gguf", "llama-tiny-q4_0.gguf", "qwen3-tiny-q8_0.gguf"} {
		m := openConformance(t, name)
		V, L := m.Config.Vocab, m.Config.Layers
		for _, tc := range cases {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				ref, _ := m.NewState(64)
				logitsOf(t, ref, Chain(testPrompt[:4]))
				ref.CommitAll()
				whole := logitsOf(t, ref, tc.batch)

				s, _ := m.NewState(64)
				logitsOf(t, s, Chain(testPrompt[:4]))
				s.CommitAll()
				if err := s.Begin(tc.batch); err != nil {
					t.Fatal(err)
				}
				next := 0
				for k, at := range tc.at {
					at = min(at, L-1)
					if err := s.RunLayers(next, at+1, nil); err != nil {
						t.Fatal(err)
					}
					next = at + 1
					if err := s.Prune(tc.keeps[k]); err != nil {
						t.Fatal(err)
					}
					if s.Rows() != len(tc.keeps[k]) {
						t.Fatalf("Rows after Prune = %d, want %d", s.Rows(), len(tc.keeps[k]))
					}
				}
				if err := s.RunLayers(next, L, nil); err != nil {
					t.Fatal(err)
				}
				kept := tc.keeps[len(tc.keeps)-1]
				got := make([]float32, len(kept)*V)
				if err := s.Logits(kept, got); err != nil {
					t.Fatal(err)
				}
				for k, r := range kept {
					if !slices.Equal(got[k*V:(k+1)*V], whole[r*V:(r+1)*V]) {
						t.Errorf("row %d: logits after pruning differ from the unpruned pass", r)
					}
				}
				for r := range tc.batch.Tokens {
					if !slices.Contains(kept, r) {
						if !s.Pruned(r) {
							t.Errorf("row %d not reported pruned", r)
						}
						if err := s.Logits([]int{r}, make([]float32, V)); err == nil {
							t.Errorf("Logits of pruned row %d accepted", r)
						}
					}
				}
				// The committed KV is the unpruned pass's: the next token matches.
				if err := s.Commit(tc.commit); err != nil {
					t.Fatal(err)
				}
				if err := ref.Commit(tc.commit); err != nil {
					t.Fatal(err)
				}
				a := logitsOf(t, s, Chain([]int32{42}))
				b := logitsOf(t, ref, Chain([]int32{42}))
				if !slices.Equal(a, b) {
					t.Error("after committing a pruned pass's path, the next logits differ")
				}
			})
		}
	}
}

func TestPruneErrors(t *testing.T) {
	m := openConformance(t, "stories260K.gguf")
	tree := Batch{Tokens: []int32{7, 100, 200, 300}, Parent: []int32{-1, 0, 0, 1}}
	s, _ := m.NewState(64)
	if err := s.Prune([]int{0}); err == nil {
		t.Error("Prune without a pass accepted")
	}
	if err := s.Begin(tree); err != nil {
		t.Fatal(err)
	}
	if err := s.RunLayers(0, 1, nil); err != nil {
		t.Fatal(err)
	}
	for _, keep := range [][]int{{}, {0, 3}, {1, 0}, {0, 0}, {0, 9}, {-1}} {
		if err := s.Prune(keep); err == nil {
			t.Errorf("Prune(%v) accepted", keep)
		}
	}
	if err := s.Prune([]int{0, 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.Prune([]int{0, 2}); err == nil {
		t.Error("Prune keeping an already pruned row accepted")
	}
	if err := s.RunLayers(1, m.Config.Layers, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit([]int{0, 2}); err == nil {
		t.Error("Commit of a pruned row accepted")
	}
	if err := s.Extend(Batch{Tokens: []int32{5}, Parent: []int32{3}}); err == nil {
		t.Error("Extend from a pruned row accepted")
	}
	if err := s.Extend(Batch{Tokens: []int32{5}, Parent: []int32{1}}); err != nil {
		t.Errorf("Extend from a kept row: %v", err)
	}
}
