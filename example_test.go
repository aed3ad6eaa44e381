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
