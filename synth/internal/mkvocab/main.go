// Command mkvocab writes a vocabulary-only GGUF file: the tokenizer.* keys
// of a model file, general.architecture and a name, and no tensors. It makes
// synth/vocab/stories512.gguf (see the go:generate line in synth/vocab.go)
// from llama2.c's stories260K model, whose 512-token SentencePiece
// vocabulary is MIT-licensed.
//
// Usage: go run ./internal/mkvocab -o OUT.gguf -name NAME -license LICENSE MODEL.gguf
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"

	"shade/gguf"
)

func main() {
	out := flag.String("o", "", "output `file`")
	name := flag.String("name", "", "general.name of the output")
	license := flag.String("license", "", "general.license of the output, if any")
	flag.Parse()
	if *out == "" || flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *out, *name, *license); err != nil {
		fmt.Fprintln(os.Stderr, "mkvocab:", err)
		os.Exit(1)
	}
}

func run(src, dst, name, license string) error {
	f, err := gguf.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	arch, err := f.Meta.String("general.architecture")
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	w := gguf.NewWriter(&buf)
	if err := w.Set("general.architecture", arch); err != nil {
		return err
	}
	if name != "" {
		if err := w.Set("general.name", name); err != nil {
			return err
		}
	}
	if license != "" {
		if err := w.Set("general.license", license); err != nil {
			return err
		}
	}
	if err := w.CopyMeta(&f.Meta, "tokenizer."); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	// Check that what was written parses back with every token.
	g, err := gguf.Parse(buf.Bytes())
	if err != nil {
		return err
	}
	want, _ := f.Meta.ArrayLen("tokenizer.ggml.tokens")
	if got, err := g.Meta.ArrayLen("tokenizer.ggml.tokens"); err != nil || got != want {
		return fmt.Errorf("round trip: %d tokens, want %d (%v)", got, want, err)
	}
	return os.WriteFile(dst, buf.Bytes(), 0o644)
}
