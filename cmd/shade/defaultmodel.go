package main

import (
	"fmt"
	"io"

	"shade/tinystories"
)

// defaultModel is the model `shade run` uses without -m: the TinyStories
// model built into the binary, written once into the cache so that it is
// opened, checked and mapped as any model file is. A first command then
// tells a story instead of printing a random model's noise.
func defaultModel(stderr io.Writer) (string, error) {
	path, err := tinystories.Path()
	if err != nil {
		return "", err
	}
	fmt.Fprintf(stderr, "shade: no -m given: running the built-in %s model (%s: 260K parameters trained on TinyStories, it writes short children's stories); give a model of your own with -m\n",
		tinystories.Name, path)
	return path, nil
}
