package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"shade/gguf"
	"shade/quant"
	"shade/synth"
)

func cmdSynth(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var names []string
	for _, s := range synth.Shapes() {
		names = append(names, s.Name)
	}
	fs := newFlagSet("synth", "synth --shape NAME --type TYPE --vocab VOCAB.gguf -o FILE", stderr)
	shapeName := fs.String("shape", "", "model shape: "+strings.Join(names, ", "))
	typeName := fs.String("type", "Q4_0", "matrix type: F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K")
	vocabPath := fs.String("vocab", "", "GGUF `file` whose tokenizer.* keys to copy (e.g. ../shared/testdata/tokenizer/ggml-vocab-llama3.gguf); default: the built-in 512-token demo vocabulary")
	out := fs.String("o", "", "output `file`")
	seed := fs.Uint64("seed", 1, "random seed")
	quiet := fs.Bool("quiet", false, "no progress on stderr")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 || *shapeName == "" || *out == "" {
		fs.Usage()
		return errUsage
	}
	shape, err := synth.LookupShape(*shapeName)
	if err != nil {
		return err
	}
	typ, err := quant.ParseType(*typeName)
	if err != nil {
		return err
	}
	if !typ.Supported() {
		return fmt.Errorf("type %v is not one shade computes with", typ)
	}
	var vocab *gguf.File
	if *vocabPath != "" {
		if vocab, err = gguf.Open(*vocabPath); err != nil {
			return err
		}
		defer vocab.Close()
	} else if vocab, err = synth.DemoVocab(); err != nil {
		return err
	}
	t0 := time.Now()
	last := time.Time{}
	opts := synth.Options{Shape: shape, Type: typ, Vocab: vocab, Seed: *seed,
		Progress: func(done, total int64) {
			if *quiet || (time.Since(last) < 500*time.Millisecond && done < total) {
				return
			}
			last = time.Now()
			fmt.Fprintf(stderr, "\rwriting %s: %s / %s", *out, human(uint64(done)), human(uint64(total)))
			if done >= total {
				fmt.Fprintln(stderr)
			}
		}}
	if err := synth.WriteFile(*out, opts); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s: %s shape, %v, %.1fs\n", *out, shape.Name, typ, time.Since(t0).Seconds())
	return nil
}
