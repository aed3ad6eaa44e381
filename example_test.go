package shade_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"shade"
)

// A model file of the shared test data: 260K parameters trained on
// children's stories.
const storiesPath = "../shared/testdata/conformance/stories260K.gguf"

// The same model in F16: a smaller file with the same vocabulary, that
// serves as a draft model in the examples.
const storiesF16Path = "../shared/testdata/conformance/stories260K-f16.gguf"

func ExampleModel_Generate() {
	m, err := shade.Open(storiesPath, &shade.Options{Threads: 2})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	// The zero GenerateOptions decode greedily; the callback sees the text
	// as it is made (a context cancel stops it within one step).
	var pieces int
	res, err := m.Generate(context.Background(), "Once upon a time", shade.GenerateOptions{MaxTokens: 24},
		func(text string) error { pieces++; return nil })
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Text)
	fmt.Println(res.Tokens, "tokens in", pieces, "pieces, stop:", res.StopReason)
	// Output:
	// , there was a little girl named Lily. She loved to play outside in the p
	// 24 tokens in 24 pieces, stop: length
}

func ExampleModel_Stream() {
	m, err := shade.Open(storiesPath, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	text, wait := m.Stream(context.Background(), "Once upon a time", shade.GenerateOptions{MaxTokens: 8})
	var b strings.Builder
	for piece := range text {
		b.WriteString(piece)
	}
	res, err := wait()
	fmt.Printf("%q %v %v\n", b.String(), res.Text == b.String(), err)
	// Output: ", there was a little girl" true <nil>
}

func ExampleModel_Chat() {
	// With a draft model: shade.Open(target, &shade.Options{Draft: draft}).
	m, err := shade.Open(storiesPath, &shade.Options{Spec: "ngram"})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	res, err := m.Chat(context.Background(), []shade.Message{
		{Role: "system", Content: "You tell stories."},
		{Role: "user", Content: "Tell me about a cat."},
	}, shade.GenerateOptions{MaxTokens: 16, Temperature: 0.8, Seed: 42}, nil)
	fmt.Println(m.TemplateName(), res.Tokens > 0, err)
	// Output: llama-2 true <nil>
}

func ExampleOptions() {
	// Keep at most 1.2 MiB of weights in DRAM: the draft, the target's
	// embedding, head and norms, and as many of its layers as fit; the
	// others are read from the file for every token. And pace speculation
	// so that it yields memory bandwidth to the foreground.
	m, err := shade.Open(storiesPath, &shade.Options{Threads: 2, Draft: storiesF16Path,
		DRAMBudget: "1.2MiB", Policy: "balanced"})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	res, err := m.Generate(context.Background(), "Once upon a time", shade.GenerateOptions{MaxTokens: 8}, nil)
	if err != nil {
		log.Fatal(err)
	}
	streamed, layers := m.Streaming()
	fmt.Printf("%q: %d of %d layers streamed, policy %s\n", res.Text, streamed, layers, m.Policy())
	// The foreground got busy:
	if err := m.SetPolicy("ui-first"); err != nil {
		log.Fatal(err)
	}
	fmt.Println(m.Policy())
	// Output:
	// ", there was a little girl": 3 of 5 layers streamed, policy balanced
	// ui-first
}
