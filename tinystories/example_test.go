package tinystories_test

import (
	"context"
	"fmt"
	"log"

	"shade"
	"shade/tinystories"
)

// The built-in model needs no download: Path writes it into the cache
// once, and it opens like any model file.
func ExamplePath() {
	path, err := tinystories.Path()
	if err != nil {
		log.Fatal(err)
	}
	m, err := shade.Open(path, &shade.Options{Threads: 2})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	res, err := m.Generate(context.Background(), "Once upon a time", shade.GenerateOptions{MaxTokens: 24}, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Text)
	// Output:
	// , there was a little girl named Lily. She loved to play outside in the p
}
