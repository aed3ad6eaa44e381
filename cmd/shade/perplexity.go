package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"shade/engine"
)

func cmdPerplexity(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("perplexity", "perplexity -m MODEL.gguf -f TEXT [--ctx N] [--json]", stderr)
	modelPath := fs.String("m", "", "model `file` (GGUF)")
	textPath := fs.String("f", "", "text `file` to score")
	nctx := fs.Int("ctx", 512, "tokens per chunk")
	threads := fs.Int("threads", 0, "worker threads (0: one per CPU)")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	quiet := fs.Bool("quiet", false, "no progress on stderr")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 || *modelPath == "" || *textPath == "" {
		fs.Usage()
		return errUsage
	}
	text, err := os.ReadFile(*textPath)
	if err != nil {
		return err
	}
	e, err := engine.Load(*modelPath, *threads)
	if err != nil {
		return err
	}
	defer e.Close()
	e.Repack()
	progress := func(done, total int, ppl float64) {
		if !*quiet {
			fmt.Fprintf(stderr, "\rchunk %d/%d  PPL %.4f", done, total, ppl)
			if done == total {
				fmt.Fprintln(stderr)
			}
		}
	}
	res, err := e.Perplexity(ctx, string(text), *nctx, progress)
	if err != nil {
		return err
	}
	if *asJSON {
		out := struct {
			Model string `json:"model"`
			Text  string `json:"text"`
			engine.PerplexityResult
		}{*modelPath, *textPath, res}
		b, _ := json.Marshal(out)
		fmt.Fprintln(stdout, string(b))
		return nil
	}
	fmt.Fprintf(stdout, "PPL = %.4f (%d chunks of %d tokens, %d tokens scored, %.1fs)\n", res.PPL, res.Chunks, res.Ctx, res.Scored, res.Duration.Seconds())
	return nil
}
