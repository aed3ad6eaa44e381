package shade_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"shade"
	"shade/grammar"
)

// Structured output: the text is JSON valid for the schema whatever the
// model's weights (a story model knows nothing of JSON).
func ExampleGenerateOptions_grammar() {
	m, err := shade.Open(storiesPath, &shade.Options{Threads: 2})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	g, err := grammar.FromJSONSchema([]byte(`{"type":"object",
		"properties":{"hero":{"type":"string","maxLength":16},"age":{"type":"integer"}},
		"required":["hero","age"],"additionalProperties":false}`))
	if err != nil {
		log.Fatal(err) // an unsupported schema feature is an *grammar.UnsupportedError
	}
	res, err := m.Generate(context.Background(), "Once upon a time", shade.GenerateOptions{MaxTokens: 60, Grammar: g}, nil)
	if err != nil {
		log.Fatal(err)
	}
	var out struct {
		Hero string `json:"hero"`
		Age  int    `json:"age"`
	}
	fmt.Println(json.Unmarshal([]byte(res.Text), &out) == nil, res.Text)
	// Output: true { "hero" : "I'm a small bird" , "age" : -3000000000000000 }
}
