package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

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
	text, err := readText(*textPath, maxPerplexityText)
	if err != nil {
		return err
	}
	e, err := openEngine(ctx, *modelPath, engine.Options{Threads: *threads}, stderr)
	if err != nil {
		return err
	}
	defer e.Close()
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

// maxPerplexityText bounds the text perplexity reads: far more than any
// evaluation corpus (wikitext-2's test set is 1.3 MB), and a bound on the
// memory a mistaken file (/dev/zero) can take before it is refused.
const maxPerplexityText = 256 << 20

// readText reads a text file of at most limit bytes.
func readText(path string, limit int64) ([]byte, error) {
	f, err := openInput(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: longer than %d MiB: too long to score at once", path, limit>>20)
	}
	return b, nil
}
