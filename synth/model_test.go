package synth

import (
	"math"
	"path/filepath"
	"testing"

	"shade/gguf"
	"shade/model"
	"shade/quant"
)

// forwardStats runs a prompt through the model at path and greedy-decodes n
// tokens. It returns the std of the logits after the prompt, the decoded
// tokens, and how often the argmax was the input token itself.
func forwardStats(t testing.TB, path string, prompt []int32, n int) (std float64, out []int32, self int) {
	t.Helper()
	m, err := model.Open(path, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	st, err := m.NewState(len(prompt) + n + 1)
	if err != nil {
		t.Fatal(err)
	}
	v := m.Config.Vocab
	logits := make([]float32, v)
	toks := prompt
	for step := 0; step <= n; step++ {
		if err := st.Forward(model.Chain(toks)); err != nil {
			t.Fatal(err)
		}
		if err := st.Logits([]int{len(toks) - 1}, logits); err != nil {
			t.Fatal(err)
		}
		if err := st.CommitAll(); err != nil {
			t.Fatal(err)
		}
		best := 0
		for i, x := range logits {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				t.Fatalf("logit %d = %v", i, x)
			}
			if x > logits[best] {
				best = i
			}
		}
		if step == 0 {
			var s, sq float64
			for _, x := range logits {
				s += float64(x)
				sq += float64(x) * float64(x)
			}
			mean := s / float64(v)
			std = math.Sqrt(sq/float64(v) - mean*mean)
		} else {
			out = append(out, int32(best))
		}
		if int32(best) == toks[len(toks)-1] {
			self++
		}
		toks = []int32{int32(best)}
	}
	return std, out, self
}

func distinct(toks []int32) int {
	seen := map[int32]bool{}
	for _, t := range toks {
		seen[t] = true
	}
	return len(seen)
}

// TestActivations checks that the weight scales give a usable forward pass:
// logits spread by a few units and greedy decoding that does not lock onto
// one token, for tied (tiny-qwen2, tiny-qwen3) and untied (tiny) heads, with
// a 32000-token and the 512-token demo vocabulary.
func TestActivations(t *testing.T) {
	spm := openVocab(t)
	demo, err := DemoVocab()
	if err != nil {
		t.Fatal(err)
	}
	prompt := []int32{1, 450, 4996, 17354, 1701, 432, 17204, 975, 278, 17366, 11203}
	shapes := append(tinyShapes(), tiny256)
	for _, vocab := range []*gguf.File{spm, demo} {
		nv, _ := vocab.Meta.ArrayLen("tokenizer.ggml.tokens")
		for _, s := range shapes {
			for _, typ := range []quant.Type{quant.Q8_0, quant.Q4_0} {
				path := filepath.Join(t.TempDir(), "m.gguf")
				if err := WriteFile(path, Options{Shape: s, Type: typ, Vocab: vocab, Seed: 3}); err != nil {
					t.Fatal(err)
				}
				p := prompt
				if nv < 32000 {
					p = []int32{1, 45, 300, 17, 211, 98, 400, 12}
				}
				std, out, self := forwardStats(t, path, p, 32)
				t.Logf("%-10s %v vocab %5d: logit std %.2f, %d distinct of %d greedy tokens, %d self-repeats: %v",
					s.Name, typ, nv, std, distinct(out), len(out), self, out[:12])
				if std < 1 || std > 20 {
					t.Errorf("%s %v vocab %d: logit std %.2f outside [1, 20]", s.Name, typ, nv, std)
				}
				if d := distinct(out); d < 4 {
					t.Errorf("%s %v vocab %d: greedy decoding gave %d distinct tokens: %v", s.Name, typ, nv, d, out)
				}
			}
		}
	}
}
