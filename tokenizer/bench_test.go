package tokenizer

import (
	"os"
	"path/filepath"
	"testing"
)

func BenchmarkEncode(b *testing.B) {
	text, err := os.ReadFile(filepath.Join(testdata, "text", "gpl-3.txt"))
	if err != nil {
		b.Skipf("benchmark text not present: %v", err)
	}
	for _, c := range []struct{ name, vocab string }{
		{"spm-llama", "tokenizer/ggml-vocab-llama-spm.gguf"},
		{"bpe-gpt2", "tokenizer/ggml-vocab-gpt-2.gguf"},
		{"bpe-llama3", "tokenizer/ggml-vocab-llama3.gguf"},
		{"bpe-qwen2", "conformance/qwen2-tiny-q8_0.gguf"},
	} {
		b.Run(c.name, func(b *testing.B) {
			tk := loadGGUF(b, c.vocab)
			if tk.kind == kindBPE && c.name == "bpe-qwen2" {
				// The qwen2 conformance file carries the gpt-2 pre-tokenizer;
				// measure the qwen2 one on the same vocab.
				q := *tk
				q.split, q.pre = qwen2Split, "qwen2"
				tk = &q
			}
			b.SetBytes(int64(len(text)))
			var n int
			for b.Loop() {
				ids, err := tk.Encode(string(text), true, false)
				if err != nil {
					b.Fatal(err)
				}
				n = len(ids)
			}
			b.ReportMetric(float64(n), "tokens")
		})
	}
}

func BenchmarkDecoder(b *testing.B) {
	text, err := os.ReadFile(filepath.Join(testdata, "text", "gpl-3.txt"))
	if err != nil {
		b.Skipf("benchmark text not present: %v", err)
	}
	tk := loadGGUF(b, "tokenizer/ggml-vocab-llama3.gguf")
	ids, err := tk.Encode(string(text), false, false)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		d := NewDecoder(tk)
		for _, id := range ids {
			d.Add(id)
		}
		d.Flush()
	}
}
