package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"shade/bench"
	"shade/engine"
	"shade/gguf"
	"shade/quant"
	"shade/speculate"
	"shade/synth"
)

func cmdBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "spec" {
		return cmdBenchSpec(ctx, args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "qos" {
		return cmdBenchQoS(ctx, args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "flash" {
		return cmdBenchFlash(ctx, args[1:], stdout, stderr)
	}
	fs := newFlagSet("bench", "bench [-m MODEL.gguf] [--dram-budget 50%] [--threads N] [--batches 1,2,4,…] [--prompt 512] [--long] [--reps N] [--json]\n       shade bench spec -m TARGET.gguf --draft DRAFT.gguf [...]  (shade bench spec -h)\n       shade bench flash [-m TARGET.gguf --draft DRAFT.gguf] [...]  (shade bench flash -h)\n       shade bench qos [-m TARGET.gguf --draft DRAFT.gguf] [...]  (shade bench qos -h)", stderr)
	modelPath := fs.String("m", "", "model `file`; without it a Llama-3.2-1B-shape Q4_0 model with random weights is synthesized once into the cache")
	threads := fs.Int("threads", 0, "worker threads (0: one per CPU)")
	batches := fs.String("batches", "1,2,4,8,16,32,64", "batch sizes of the batched-forward measurement")
	reps := fs.Int("reps", 3, "repetitions of each measurement (medians are reported, and the best of the int8 peak's runs, at least five; the memory bandwidth is probed before every decode repetition and after the last)")
	decode := fs.Int("decode-tokens", 8, "decode steps timed per repetition")
	depth := fs.Int("depth", 32, "tokens of random text in the cache before each decode and batch measurement, as llama-bench -d N (decode then also reads their keys and values, which the roofline counts)")
	bwMiB := fs.Int("bw-mib", 1024, "size of the bandwidth probe's buffer in MiB")
	prompt := fs.String("prompt", "512", "prompt lengths of the prompt-processing measurement, comma-separated (0: none): each prompt of random tokens runs from an empty cache in ubatches of --ubatch tokens, logits of its last token only, and its median tok/s and attention share are reported, as llama-bench -p N reports ppN")
	long := fs.Bool("long", false, "also measure a 2048-token prompt (pp2048)")
	ubatch := fs.Int("ubatch", 512, "tokens per batched pass of a prompt (llama-bench's -ub, whose default is also 512)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	bf := addBudgetFlags(fs)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		fs.Usage()
		return errUsage
	}
	if err := bf.check(); err != nil {
		return err
	}
	var sizes []int
	for _, f := range strings.Split(*batches, ",") {
		b, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || b < 1 || b > 512 {
			return fmt.Errorf("--batches: %q is not a batch size in [1, 512]", f)
		}
		sizes = append(sizes, b)
	}
	var prompts []int
	for _, f := range strings.Split(*prompt, ",") {
		p, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || p < 0 || p > 1<<16 {
			return fmt.Errorf("--prompt: %q is not a prompt length in [0, 65536]", f)
		}
		if p > 0 && !slices.Contains(prompts, p) {
			prompts = append(prompts, p)
		}
	}
	if *long && !slices.Contains(prompts, 2048) {
		prompts = append(prompts, 2048)
	}
	if *ubatch < 1 || *ubatch > 1<<16 {
		return fmt.Errorf("--ubatch: %d is not in [1, 65536]", *ubatch)
	}
	// Bounded so that a typo cannot ask for a run that never ends or a
	// probe buffer larger than the machine.
	if *reps < 1 || *reps > 1000 {
		return fmt.Errorf("--reps: %d is not in [1, 1000]", *reps)
	}
	if *decode < 1 || *decode > 1<<16 {
		return fmt.Errorf("--decode-tokens: %d is not in [1, 65536]", *decode)
	}
	if *depth < 1 || *depth > 1<<20 {
		return fmt.Errorf("--depth: %d is not in [1, 1048576]", *depth)
	}
	if *bwMiB < 1 || *bwMiB > 1<<16 {
		return fmt.Errorf("--bw-mib: %d is not in [1, 65536]", *bwMiB)
	}
	path := *modelPath
	if path == "" {
		if path, err = benchModel(stderr); err != nil {
			return err
		}
	}
	defer quant.UseRepack(true) // bf.check set it
	// bench.Run repacks, and reports how long that took.
	o := engine.Options{Threads: *threads, NoRepack: true}
	bf.set(&o)
	e, err := openEngine(ctx, path, o, stderr)
	if err != nil {
		return err
	}
	defer e.Close()
	rep, err := bench.Run(e.Model, bench.Options{
		Batches: sizes, Reps: *reps, DecodeTokens: *decode, Prefix: *depth, BandwidthSize: int64(*bwMiB) << 20, Stream: e.Stream,
		Prompts: prompts, UBatch: *ubatch,
		Progress: func(what string) { fmt.Fprintf(stderr, "bench: %s\n", what) },
	})
	if err != nil {
		return err
	}
	rep.Model = path
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	printBench(stdout, &rep)
	return nil
}

func printBench(w io.Writer, r *bench.Report) {
	fmt.Fprintf(w, "cpu         %s, %s: %s\n", r.CPU, r.CPU.Arch, orDash(nonEmpty(strings.Join(r.CPU.Features, " "))))
	fmt.Fprintf(w, "model       %s (%s), %d threads, %s kernels\n", r.Model, r.Arch, r.Threads, r.Kernels)
	fmt.Fprintf(w, "weights     %s in all, %s read per decoded token at a depth of %d tokens (%s of it keys and values)\n",
		human(uint64(r.WeightBytes)), human(uint64(r.BytesPerToken)), r.Depth, human(uint64(r.KVBytesPerToken)))
	if l := panelLine(r.Panels); l != "" {
		fmt.Fprintf(w, "panels      %s\n", l)
	}
	b := r.Bandwidth
	fmt.Fprintf(w, "memory      %.1f GB/s read (%d threads × %d streams; by streams/thread:", b.GBps, b.Threads, b.StreamsPerThread)
	for _, s := range []int{1, 2, 4, 8} {
		fmt.Fprintf(w, " %d: %.1f", s, b.ByStreams[s])
	}
	fmt.Fprintln(w, ")")
	if len(r.Probes) > 1 {
		fmt.Fprintf(w, "            the median of %d probes, one before each decode repetition and one after the last: %.1f–%.1f GB/s\n",
			len(r.Probes), slices.Min(r.Probes), slices.Max(r.Probes))
	}
	fmt.Fprintf(w, "decode      %.2f tok/s, %.1f GB/s of weights and cache = %.0f%% of the %.1f tok/s roofline (median of each repetition against the probes around it)\n",
		r.DecodeTokPerS, r.DecodeGBps, 100*r.RooflineFrac, r.RooflineTokS)
	p := r.Int8Peak
	if p.GMACs > 0 {
		fmt.Fprintf(w, "int8 peak   %.0f G multiply-adds/s (%s, %d threads)\n", p.GMACs, p.Instruction, p.Threads)
	} else {
		fmt.Fprintf(w, "int8 peak   %s\n", orDash(nonEmpty(p.Instruction)))
	}
	peak := func(frac float64) string {
		if p.GMACs <= 0 {
			return "    —"
		}
		return fmt.Sprintf("%5.1f%%", 100*frac)
	}
	fmt.Fprintln(w, "forward     batch   ms/pass     tok/s   cost vs batch 1   G MAC/s   of int8 peak")
	for _, f := range r.Forward {
		cost := "      —" // no one-row pass in --batches to compare with
		if f.CostVsOne > 0 {
			cost = fmt.Sprintf("%6.2f×", f.CostVsOne)
		}
		fmt.Fprintf(w, "            %5d  %8.1f  %8.2f   %s          %7.1f   %s\n", f.Batch, f.MsPerPass, f.TokPerS, cost, f.GMACs, peak(f.PeakFrac))
	}
	if len(r.Prompt) > 0 {
		fmt.Fprintln(w, "prompt      test      ubatch         s      tok/s   attention   G MAC/s   of int8 peak")
		for _, pr := range r.Prompt {
			fmt.Fprintf(w, "            %-8s  %6d  %8.2f  %9.2f   %8.1f%%   %7.1f   %s\n", fmt.Sprintf("pp%d", pr.Tokens), pr.UBatch, pr.Seconds, pr.TokPerS, 100*pr.AttnShare, pr.GMACs, peak(pr.PeakFrac))
		}
	}
	printStreamBench(w, r)
}

// benchModel returns the cached Llama-3.2-1B-shape Q4_0 model, writing it
// once (random weights; the built-in vocabulary padded to 128256 tokens so
// the LM head has its real size).
func benchModel(stderr io.Writer) (string, error) {
	path := cachePath("bench-llama3-1b-q4_0.gguf")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	shape, err := synth.LookupShape("llama3-1b")
	if err != nil {
		return "", err
	}
	vocab, err := synth.DemoVocab()
	if err != nil {
		return "", err
	}
	if vocab, err = synth.PadVocab(vocab, shape.Vocab); err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	fmt.Fprintf(stderr, "bench: no -m given: writing a Llama-3.2-1B-shape Q4_0 model with random weights to %s (once)\n", path)
	o := synth.Options{Shape: shape, Type: quant.Q4_0, Vocab: vocab, Seed: 1}
	if err := synth.WriteFile(path, o); err != nil {
		return "", err
	}
	return path, nil
}

func cmdBenchSpec(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("bench spec", "bench spec -m TARGET.gguf [--draft DRAFT.gguf] [--policy balanced|ui-first|off] [--modes off,chain,tree,ngram,auto,lever] [-n N] [--prompts FILE.jsonl] [--json]", stderr)
	modelPath := fs.String("m", "", "target model `file`")
	modes := fs.String("modes", "off,chain,tree,ngram,auto", "modes to compare (off, chain, tree, ngram, auto, lever); off (plain decoding) always runs first as the baseline")
	n := fs.Int("n", 64, "tokens generated per prompt")
	promptsPath := fs.String("prompts", "", "prompt `file`, "+bench.PromptFormat+" (default: five built-in prompts: story, math, code, chat)")
	threads := fs.Int("threads", 0, "worker threads (0: one per CPU)")
	sf := addSpecFlags(fs, false)
	pf := addPolicyFlag(fs, "off", "elastic speculation for the speculative modes")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 || *modelPath == "" {
		fs.Usage()
		return errUsage
	}
	specCfg, err := sf.config()
	if err != nil {
		return err
	}
	var ms []speculate.Mode
	for _, name := range strings.Split(*modes, ",") {
		m, err := speculate.ParseMode(strings.TrimSpace(name))
		if err != nil {
			return err
		}
		ms = append(ms, m)
	}
	var prompts []string
	if *promptsPath != "" {
		if prompts, err = bench.ReadPrompts(*promptsPath); err != nil {
			return err
		}
	}
	policy, err := pf.policy()
	if err != nil {
		return err
	}
	e, err := openEngine(ctx, *modelPath, engine.Options{Threads: *threads, Draft: *sf.draft, Spec: specCfg.Mode, Policy: policy}, stderr)
	if err != nil {
		return err
	}
	defer e.Close()
	specCfg = e.Governed(specCfg)
	gov := e.Governor
	rep, err := bench.RunSpec(ctx, e, bench.SpecOptions{Modes: ms, Prompts: prompts, Tokens: *n, Governor: specCfg.Deps.Governor,
		DraftMax: specCfg.DraftMax, TreeWidth: specCfg.TreeWidth, TreeDepth: specCfg.TreeDepth, Base: specCfg,
		Progress: func(what string) { fmt.Fprintf(stderr, "bench: %s\n", what) }})
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	if gov != nil {
		st := gov.GovernorStats()
		printGovernorStats(stderr, &speculate.Stats{Governor: &st})
	}
	fmt.Fprintf(stdout, "%s with draft %s: %d prompts × %d tokens, greedy\n", *modelPath, orDash(nonEmpty(*sf.draft)), rep.Prompts, rep.Tokens)
	fmt.Fprintln(stdout, "mode      tok/s   speedup  acceptance  accepted/step  tokens/step  draft time  same output")
	for _, r := range rep.Results {
		fmt.Fprintf(stdout, "%-6s %8.2f   %6.2f×  %10.2f  %13.2f  %11.2f  %9.0f%%  %v\n",
			r.Mode, r.TokPerS, r.Speedup, r.Acceptance, r.AcceptedPerStp, r.TokensPerStep, 100*r.DraftShare, r.Lossless)
	}
	fmt.Fprintln(stdout, "tok/s is the median over the prompts; speedup the median over the prompts of the mode's tok/s ÷ plain decoding's on the same prompt, run just before it")
	return nil
}

func nonEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// agreeingPair returns a cached synthetic target of the named shape and its
// 4-layer draft, writing them once into the cache: random Q4_0 weights, the
// target's layers from the fifth on scaled by 0.05 so that the draft (the
// target's first 4 layers) predicts it well, as a trained draft would (≈93%
// greedy agreement), and the demo vocabulary padded to the shape's size so
// the LM head has its real cost.
func agreeingPair(stderr io.Writer, who, shapeName, shapeTitle, targetFile, draftFile string) (target, draft string, err error) {
	target, draft = cachePath(targetFile), cachePath(draftFile)
	if _, err := os.Stat(target); err != nil {
		shape, err := synth.LookupShape(shapeName)
		if err != nil {
			return "", "", err
		}
		vocab, err := synth.DemoVocab()
		if err != nil {
			return "", "", err
		}
		if vocab, err = synth.PadVocab(vocab, shape.Vocab); err != nil {
			return "", "", err
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return "", "", err
		}
		fmt.Fprintf(stderr, "%s: no -m given: writing a %s-shape Q4_0 target (random weights, layers 4+ scaled by 0.05) to %s (once)\n", who, shapeTitle, target)
		o := synth.Options{Shape: shape, Type: quant.Q4_0, Vocab: vocab, Seed: 1, TailFrom: 4, TailScale: 0.05}
		if err := synth.WriteFile(target, o); err != nil {
			return "", "", err
		}
		os.Remove(draft) // a draft of an older target
	}
	if _, err := os.Stat(draft); err != nil {
		fmt.Fprintf(stderr, "%s: writing its 4-layer draft to %s (once)\n", who, draft)
		tf, err := gguf.Open(target)
		if err != nil {
			return "", "", err
		}
		defer tf.Close()
		if err := synth.WriteDraft(draft, tf, 4); err != nil {
			return "", "", err
		}
	}
	return target, draft, nil
}
