package engine

import (
	"context"
	"os"
	"testing"

	"shade/sample"
)

// BenchmarkLogprobsDecode decodes 16 tokens of the model in
// SHADE_BENCH_MODEL (e.g. a synthetic llama3-1b, whose vocabulary has 128k
// tokens) with and without log-probabilities: what reporting them adds to
// decode time. Skipped without the variable.
func BenchmarkLogprobsDecode(b *testing.B) {
	path := os.Getenv("SHADE_BENCH_MODEL")
	if path == "" {
		b.Skip("set SHADE_BENCH_MODEL to a GGUF model")
	}
	e, err := Load(path, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	e.Repack()
	warm := Request{Prompt: "Once upon a time", MaxTokens: 4, Sampling: sample.Params{Temp: 0}}
	if _, err := e.Generate(context.Background(), warm, func(string) error { return nil }); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		lp   bool
		top  int
	}{{"plain", false, 0}, {"logprobs", true, 0}, {"top20", true, 20}} {
		b.Run(c.name, func(b *testing.B) {
			r := Request{Prompt: "Once upon a time", MaxTokens: 16, IgnoreEOS: true, Sampling: sample.Params{Temp: 0},
				Logprobs: c.lp, TopLogprobs: c.top}
			for b.Loop() {
				if _, err := e.Generate(context.Background(), r, func(string) error { return nil }); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
