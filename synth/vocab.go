package synth

import (
	_ "embed"
	"fmt"

	"shade/gguf"
	"shade/quant"
)

//go:generate go run ./internal/mkvocab -o vocab/stories512.gguf -name "stories260K vocabulary (llama2.c)" -license MIT ../../shared/testdata/conformance/stories260K.gguf

// demoVocab is the 512-token SentencePiece vocabulary of llama2.c's
// stories260K model (MIT licence), as a vocabulary-only GGUF file: its
// tokenizer.* keys and no tensors. go generate remakes it.
//
//go:embed vocab/stories512.gguf
var demoVocab []byte

// DemoVocab returns the built-in 512-token vocabulary, parsed from bytes
// embedded in the binary, so a demo model can be made with no files at all.
func DemoVocab() (*gguf.File, error) {
	f, err := gguf.Parse(demoVocab)
	if err != nil {
		return nil, fmt.Errorf("synth: demo vocabulary: %w", err)
	}
	return f, nil
}

// Demo is what WriteDemo writes: the tiny shape, Q8_0, seed 1, the demo
// vocabulary.
func Demo() (Options, error) {
	shape, err := LookupShape("tiny")
	if err != nil {
		return Options{}, err
	}
	vocab, err := DemoVocab()
	if err != nil {
		return Options{}, err
	}
	return Options{Shape: shape, Type: quant.Q8_0, Vocab: vocab, Seed: 1}, nil
}

// WriteDemo writes the demo model to path: a tiny llama with random weights
// and the built-in vocabulary (a few hundred kilobytes).
func WriteDemo(path string) error {
	o, err := Demo()
	if err != nil {
		return err
	}
	return WriteFile(path, o)
}
