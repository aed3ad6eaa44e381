package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"

	"shade/engine"
	"shade/sample"
	"shade/speculate"
)

func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("run", "run [-m MODEL.gguf] -p PROMPT [-n N] [sampling flags] [--draft DRAFT.gguf --spec MODE] [--dram-budget 50%] [--policy balanced|ui-first|off] [--threads N] [--json]", stderr)
	modelPath := fs.String("m", "", "model `file` (GGUF), or USER/REPO/FILE.gguf already pulled; without it the built-in TinyStories model (stories260K) is used")
	prompt := fs.String("p", "", "the prompt `text`")
	promptFile := fs.String("f", "", "read the prompt from `file`")
	n := fs.Int("n", 128, "maximum tokens to generate (≤ 0: until end of text or a full context)")
	smp := addSamplingFlags(fs, sample.Defaults())
	var stops stopFlag
	fs.Var(&stops, "stop", "stop generating as soon as the text contains `TEXT` (repeatable; \\n is a newline); the text ends before it")
	seed := fs.Int64("seed", -1, "random seed (-1: a random one, printed in the stats)")
	threads := fs.Int("threads", 0, "worker threads (0: one per CPU)")
	ctxSize := fs.Int("ctx", 0, "context size in tokens (0: the model's, at most 4096)")
	asJSON := fs.Bool("json", false, "print the stats line as JSON")
	ignoreEOS := fs.Bool("ignore-eos", false, "keep generating past end-of-text tokens")
	sf := addSpecFlags(fs, true)
	bf := addBudgetFlags(fs)
	pf := addPolicyFlag(fs, "off", "elastic speculation: yield memory bandwidth to the foreground")
	showStats := fs.Bool("stats", false, "print speculation statistics after the run, and how long repacking weights into row panels took before it")
	compareAR := fs.Bool("compare-ar", false, "also run plain autoregressive decoding first and report the speedup")
	gf := addGrammarFlags(fs)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	gram, err := gf.load()
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		fs.Usage()
		return fmt.Errorf("unexpected arguments %q", pos)
	}
	if *promptFile != "" && *prompt != "" {
		return fmt.Errorf("-p and -f both give the prompt: use one (-p TEXT or -f FILE)")
	}
	path := *modelPath
	if path == "" {
		if path, err = defaultModel(stderr); err != nil {
			return err
		}
	}
	if *seed < 0 {
		*seed = int64(rand.Uint32())
	}
	params, err := smp.params(uint64(*seed))
	if err != nil {
		return err
	}
	specCfg, err := sf.config()
	if err != nil {
		return err
	}
	policy, err := pf.policy()
	if err != nil {
		return err
	}
	mode := specCfg.Mode
	if err := bf.check(); err != nil {
		return err
	}
	o := engine.Options{Threads: *threads, Draft: *sf.draft, Spec: mode, Ctx: *ctxSize, Policy: policy}
	bf.set(&o)
	e, err := openEngine(ctx, path, o, stderr)
	if err != nil {
		return err
	}
	defer e.Close()
	if *showStats {
		printKernels(stderr)
		printPanelStats(stderr, e)
	}
	specCfg = e.Governed(specCfg)
	if *promptFile != "" {
		if *prompt, err = readPrompt(*promptFile, e, *ctxSize); err != nil {
			return err
		}
	}

	req := engine.Request{
		Prompt: *prompt, MaxTokens: *n, Ctx: *ctxSize, Sampling: params, IgnoreEOS: *ignoreEOS,
		Spec: specCfg, Stop: stops, Grammar: gram, Continuation: true,
	}
	var ar *engine.Stats
	if *compareAR && mode != speculate.ModeOff {
		plain := req
		plain.Spec = speculate.Config{Mode: speculate.ModeOff}
		st, err := e.Generate(ctx, plain, func(string) error { return nil })
		if err != nil {
			return fmt.Errorf("autoregressive baseline: %w", err)
		}
		ar = &st
	}
	st, err := e.Generate(ctx, req, func(text string) error {
		_, err := io.WriteString(stdout, text)
		return err
	})
	fmt.Fprintln(stdout)
	if err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	printRunStats(stderr, st, *seed, *asJSON)
	if !*asJSON {
		printStreamStats(stderr, st)
	}
	if *showStats || ar != nil {
		printSpecStats(stderr, st, ar, mode)
		printGovernorStats(stderr, st.Spec)
	}
	return nil
}

func printSpecStats(w io.Writer, st engine.Stats, ar *engine.Stats, mode speculate.Mode) {
	s := st.Spec
	if s == nil {
		return
	}
	fmt.Fprintf(w, "speculation %v: %d steps, %d drafted, %d accepted (rate %.2f), %.2f accepted per step, %.2f tokens per step\n",
		mode, s.Steps, s.Drafted, s.Accepted, s.AcceptanceRate(), s.MeanAccepted(), float64(s.Generated)/max(float64(s.Steps), 1))
	if len(s.ByDepth) > 0 {
		fmt.Fprint(w, "  accepted by draft position:")
		for i, d := range s.ByDepth {
			rate := 0.0
			if d.Drafted > 0 {
				rate = float64(d.Accepted) / float64(d.Drafted)
			}
			fmt.Fprintf(w, " %d: %d/%d (%.2f)", i+1, d.Accepted, d.Drafted, rate)
		}
		fmt.Fprintln(w)
	}
	total := s.DraftTime + s.VerifyTime + s.OtherTime
	if total > 0 {
		fmt.Fprintf(w, "  time: draft %.0f%%, verify %.0f%%, other %.0f%% | %.1f tok/s\n",
			100*s.DraftTime.Seconds()/total.Seconds(), 100*s.VerifyTime.Seconds()/total.Seconds(), 100*s.OtherTime.Seconds()/total.Seconds(), st.GenTPS)
	}
	if mode == speculate.ModeFlash {
		steps := max(float64(s.Steps), 1)
		fmt.Fprintf(w, "  lever: tree %.1f nodes per step (largest %d), %.2f draft passes per step; LM head %d rows (%.2f per step)\n",
			float64(s.Drafted)/steps, s.MaxTree, float64(s.DraftPasses)/steps, s.HeadRows, float64(s.HeadRows)/steps)
		if s.PruneNote != "" {
			fmt.Fprintf(w, "  pruning %s\n", s.PruneNote)
		} else {
			fmt.Fprintf(w, "  pruning: %d rows pruned in %d of %d steps (%.1f%% of drafted), %d of them the target would have kept\n",
				s.Pruned, s.PruneSteps, s.Steps, 100*float64(s.Pruned)/max(float64(s.Drafted), 1), s.PrunedLost)
		}
	}
	if ar != nil && ar.GenTPS > 0 {
		fmt.Fprintf(w, "  autoregressive: %.1f tok/s; speculative: %.1f tok/s; speedup %.2f×\n", ar.GenTPS, st.GenTPS, st.GenTPS/ar.GenTPS)
	}
}

func printRunStats(w io.Writer, st engine.Stats, seed int64, asJSON bool) {
	if asJSON {
		out := struct {
			engine.Stats
			Seed int64 `json:"seed"`
		}{st, seed}
		b, _ := json.Marshal(out)
		fmt.Fprintln(w, string(b))
		return
	}
	fmt.Fprintf(w, "prompt %d tokens %.1f tok/s | generated %d tokens %.1f tok/s | load %.1f ms | resident %.1f MiB | stop %s | seed %d\n",
		st.PromptTokens, st.PromptTPS, st.GenTokens, st.GenTPS, float64(st.LoadDuration.Microseconds())/1000,
		float64(st.ResidentBytes)/(1<<20), st.StopReason, seed)
}

// readPrompt reads a prompt file (-f), at most as many bytes as a prompt
// that fits the context can have: the context's tokens times the longest
// piece of the vocabulary. A longer file cannot fit, and reading it all
// (/dev/zero, say) would only use memory and time before saying so.
func readPrompt(path string, e *engine.Engine, ctxSize int) (string, error) {
	f, err := openInput(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	n := e.ContextSize(ctxSize)
	longest := 1
	for id := range int32(e.Tok.VocabSize()) {
		longest = max(longest, len(e.Tok.Piece(id)))
	}
	limit := int64(n) * int64(longest)
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return "", fmt.Errorf("-f %s: %w", path, err)
	}
	if int64(len(b)) > limit {
		return "", fmt.Errorf("-f %s: %w: the file is longer than %d bytes, more than a context of %d tokens can hold (--ctx)", path, engine.ErrPromptTooLong, limit, n)
	}
	return string(b), nil
}

// shortFloat widens a float32 without showing its binary noise in --help
// (0.05, not 0.05000000074505806).
func shortFloat(x float32) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(float64(x), 'g', -1, 32), 64)
	return v
}

// cachePath is where shade keeps a model it made itself (the bench
// models): the user's cache directory, or the temporary one.
func cachePath(name string) string {
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	return filepath.Join(dir, "shade", name)
}
