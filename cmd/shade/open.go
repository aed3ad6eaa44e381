package main

import (
	"context"
	"fmt"
	"io"
	"os"

	shadelib "shade"
	"shade/engine"
)

// modelFile finds a model: a path, or a USER/REPO/FILE.gguf reference
// already pulled into the cache.
func modelFile(ref string) string {
	if _, err := os.Stat(ref); err == nil {
		return ref
	}
	if dir, err := shadelib.ModelDir(); err == nil {
		if _, dst, err := shadelib.Resolve(ref, "", dir); err == nil {
			if _, err := os.Stat(dst); err == nil {
				return dst
			}
		}
	}
	return ref
}

// openEngine opens a model for a command (engine.Open): the target and
// o.Draft may be paths or references already pulled into the cache, and
// what the set-up did is said on stderr.
func openEngine(ctx context.Context, path string, o engine.Options, stderr io.Writer) (*engine.Engine, error) {
	if o.Draft != "" {
		o.Draft = modelFile(o.Draft)
	}
	o.Note = func(line string) { fmt.Fprintf(stderr, "shade: %s\n", line) }
	return engine.Open(ctx, modelFile(path), o)
}
