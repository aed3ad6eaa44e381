package shade_test

import (
	"context"
	"fmt"
	"log"

	"shade"
)

// A Background generation (an app summarizing or prefetching) pauses
// between steps whenever a Foreground one (what the user is waiting for)
// runs, and resumes with its KV kept: its text is the same as alone.
func ExampleGenerateOptions_priority() {
	m, err := shade.Open(storiesPath, &shade.Options{Threads: 2})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	done := make(chan shade.Result)
	go func() {
		res, err := m.Generate(context.Background(), "Once upon a time",
			shade.GenerateOptions{MaxTokens: 200, IgnoreEOS: true, Priority: shade.Background}, nil)
		if err != nil {
			log.Fatal(err)
		}
		done <- res
	}()
	fg, err := m.Generate(context.Background(), "The dog", shade.GenerateOptions{MaxTokens: 16}, nil)
	if err != nil {
		log.Fatal(err)
	}
	bg := <-done
	fmt.Println("foreground:", fg.Tokens, "tokens; background:", bg.Tokens, "tokens")
	// Output:
	// foreground: 16 tokens; background: 200 tokens
}
