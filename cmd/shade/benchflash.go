package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"shade/bench"
	"shade/engine"
	"shade/speculate"
	"shade/weights"
)

func cmdBenchFlash(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("bench flash", "bench flash [-m TARGET.gguf --draft DRAFT.gguf] [--budgets 0,25,50,75,100] [--ablation 50] [-n N] [--warmup N] [--prompts FILE.jsonl] [--svg FILE] [--json]", stderr)
	modelPath := fs.String("m", "", "target model `file`; without it (and --draft) a Llama-3.1-8B-shape Q4_0 target whose 4-layer draft predicts it well is synthesized once into the cache (about 4.5 GB)")
	draftPath := fs.String("draft", "", "draft model `file` (required with -m)")
	budgets := fs.String("budgets", "0,25,50,75,100", "DRAM budgets to compare, as `percentages` of the target's layers kept resident (the draft and the target's embedding, head and norms always are)")
	ablation := fs.Float64("ablation", 50, "budget `percentage` of the ablation that turns Lever's parts off one at a time, (< 0: no ablation)")
	n := fs.Int("n", 32, "tokens generated per prompt")
	warmup := fs.Int("warmup", 0, "tokens each mode first generates from the first prompt at each budget, untimed, so that what lever learns as it runs starts warm (0: none)")
	promptsPath := fs.String("prompts", "", "prompt `file`, "+bench.PromptFormat+" (default: three built-in prompts)")
	threads := fs.Int("threads", 0, "worker threads (0: one per CPU)")
	draftMax := fs.Int("draft-max", 8, "tokens per step of chain speculation and nodes of the static tree")
	treeWidth := fs.Int("tree-width", 2, "nodes per level of the static tree")
	readAhead := fs.Int("read-ahead", weights.DefaultReadAhead, "streamed layers read ahead of the one computing")
	layout := fs.String("stream-layout", "spread", "which layers stream: spread or tail")
	svgPath := fs.String("svg", "", "write a plot of tok/s against the budget to this SVG `file`")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 || (*modelPath == "") != (*draftPath == "") {
		fs.Usage()
		if len(pos) == 0 {
			return fmt.Errorf("-m and --draft go together (or neither, for the synthesized 8B pair)")
		}
		return errUsage
	}
	var shares []float64
	for _, f := range strings.Split(*budgets, ",") {
		v, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(f), "%"), 64)
		if err != nil || v < 0 || v > 100 {
			return fmt.Errorf("--budgets: %q is not a percentage in [0, 100]", f)
		}
		shares = append(shares, v/100)
	}
	if *ablation > 100 || *n < 1 || *n > 4096 || *draftMax < 1 || *draftMax > 64 || *treeWidth < 1 || *treeWidth > 16 || *readAhead < 0 || *readAhead > 64 || *warmup < 0 || *warmup > 4096 {
		return fmt.Errorf("--ablation must be ≤ 100, -n in [1, 4096], --draft-max in [1, 64], --tree-width in [1, 16], --read-ahead in [0, 64], --warmup in [0, 4096]")
	}
	lay, err := weights.ParseLayout(*layout)
	if err != nil {
		return fmt.Errorf("--stream-layout: %w", err)
	}
	var prompts []string
	if *promptsPath != "" {
		if prompts, err = bench.ReadPrompts(*promptsPath); err != nil {
			return err
		}
	}
	target, draft := *modelPath, *draftPath
	if target == "" {
		if target, draft, err = flashModels(stderr); err != nil {
			return err
		}
	}
	// RunFlash sets each budget and repacks what stays resident itself.
	e, err := openEngine(ctx, target, engine.Options{Threads: *threads, Draft: draft, Spec: speculate.ModeFlash, NoRepack: true}, stderr)
	if err != nil {
		return err
	}
	defer e.Close()
	abl := *ablation / 100
	if *ablation < 0 {
		abl = -1
	} else if *ablation == 0 {
		abl = 1e-9 // 0%: every layer streamed, not "no ablation"
	}
	o := bench.FlashOptions{Budgets: shares, AblationBudget: abl, Prompts: prompts, Tokens: *n, WarmupTokens: *warmup,
		DraftMax: *draftMax, TreeWidth: *treeWidth, TreeDepth: *draftMax, ReadAhead: *readAhead, Layout: lay,
		Progress: func(what string) { fmt.Fprintf(stderr, "bench: %s\n", what) }}
	if !*asJSON {
		// The table as it is measured: a full run takes an hour on the 8B shape.
		np := len(prompts)
		if np == 0 {
			np = 3 // RunFlash's built-in prompts
		}
		warm := ""
		if *warmup > 0 {
			warm = fmt.Sprintf(", after an untimed warm-up of %d tokens per mode and budget", *warmup)
		}
		fmt.Fprintf(stdout, "%s with draft %s: %d prompts × %d tokens, greedy%s\n", target, draft, np, *n, warm)
		fmt.Fprintln(stdout, flashHeader)
		o.Results = func(rs []bench.FlashResult, ablation bool) {
			if ablation {
				fmt.Fprintf(stdout, "ablation at %.0f%%:\n%s\n", 100*rs[0].Budget, flashHeader)
			}
			for _, x := range rs {
				printFlashRow(stdout, x)
			}
		}
	}
	rep, err := bench.RunFlash(ctx, e, o)
	if err != nil {
		return err
	}
	if *svgPath != "" {
		f, err := os.Create(*svgPath)
		if err != nil {
			return err
		}
		title := fmt.Sprintf("shade bench flash: %s", filepath.Base(target))
		if err := bench.WriteFlashSVG(f, &rep, title); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	printFlash(stdout, &rep)
	if *svgPath != "" {
		fmt.Fprintf(stdout, "plot: %s\n", *svgPath)
	}
	return nil
}

const flashHeader = "budget  streamed  mode            tok/s  vs AR   read/token  I/O share  read GB/s  accept  tok/step  nodes  pruned  head rows  drafting  same"

func printFlashRow(w io.Writer, x bench.FlashResult) {
	fmt.Fprintf(w, "%5.0f%%  %8d  %-14s %6.2f  %4.2f×  %10s  %8.0f%%  %9.2f  %6.2f  %8.2f  %5.1f  %5.1f%%  %9.2f  %7.0f%%  %v\n",
		100*x.Budget, x.Streamed, x.Mode, x.TokPerS, x.Speedup, weights.Human(int64(x.BytesPerToken)), 100*x.IOShare, x.ReadGBps,
		x.Acceptance, x.TokensPerStep, x.TreeNodes, 100*x.PrunedShare, x.HeadRows, 100*x.DraftShare, x.Lossless)
}

// printFlash ends the table: calibrations used, the disk, and lever's
// ratios at the 50% budget.
func printFlash(w io.Writer, r *bench.FlashReport) {
	fmt.Fprintf(w, "cost model: %s; pruning predictor: %s; acceptance profile: %s\n", r.Cost, r.Pruner, r.Acceptance)
	if r.DiskNote != "" {
		fmt.Fprintf(w, "disk: not measured (%s)\n", r.DiskNote)
	} else {
		direct := "O_DIRECT"
		if !r.Disk.Direct {
			direct = "page cache: no O_DIRECT here"
		}
		fmt.Fprintf(w, "disk: %.2f GB/s (%s, %d readers, measured before and after in this run)", r.Disk.GBps, direct, r.Disk.Readers)
		var best float64
		for _, x := range append(append([]bench.FlashResult(nil), r.Results...), r.Ablation...) {
			best = max(best, x.ReadGBps)
		}
		if r.Disk.GBps > 0 {
			fmt.Fprintf(w, "; the pipeline read at up to %.2f GB/s = %.0f%% of it", best, 100*best/r.Disk.GBps)
		}
		fmt.Fprintln(w)
	}
	// Lever against the other two at 50%, where it was run.
	var ar, chain, lever float64
	for _, x := range r.Results {
		if x.Budget == 0.5 {
			switch x.Mode {
			case "flash-ar":
				ar = x.TokPerS
			case "chain":
				chain = x.TokPerS
			case "lever":
				lever = x.TokPerS
			}
		}
	}
	if ar > 0 && chain > 0 && lever > 0 {
		fmt.Fprintf(w, "at 50%%: lever %.2f× Flash-AR, %.2f× chain speculation (tok/s ratios of the medians)\n", lever/ar, lever/chain)
	}
}

// flashModels returns the cached Llama-3.1-8B-shape Q4_0 target and its
// 4-layer draft (see agreeingPair).
func flashModels(stderr io.Writer) (string, string, error) {
	return agreeingPair(stderr, "bench flash", "llama3-8b", "Llama-3.1-8B",
		"flash-llama3-8b-q4_0-tail4.gguf", "flash-llama3-8b-q4_0-tail4-draft4.gguf")
}
