package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"shade/bench"
	"shade/engine"
	"shade/plot"
	"shade/qos"
)

func cmdBenchQoS(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("bench qos", "bench qos [-m TARGET.gguf --draft DRAFT.gguf] [--profiles scroll,social] [--policies all] [--reps N] [--seconds S] [--out DIR] [--json]", stderr)
	modelPath := fs.String("m", "", "background target model `file`; without it the --pair models are used (synthesized once into the cache)")
	pair := fs.String("pair", "8b", "without -m: the synthesized target/draft pair: 8b (a Llama-3.1-8B-shape Q4_0 target and its 4-layer draft, 18.6% of its bytes; bench flash's pair) or 1b (Llama-3.2-1B shape, a draft of 42% of its bytes)")
	warmUp := fs.Duration("warm-up", 2*time.Minute, "start each measured run once the LLM's prompt is in and it generates, waiting at most this long (0: start with the LLM, its prefill included)")
	draftPath := fs.String("draft", "", "draft model `file` of the target (for spec and the elastic policies)")
	profiles := fs.String("profiles", "scroll,social", "foreground profiles, comma-separated: scroll, video, game, social")
	var names []string
	for _, p := range bench.QoSPolicies(nil, bench.QoSOptions{}) {
		names = append(names, p.Name)
	}
	policies := fs.String("policies", "all", "background policies, comma-separated, or all: "+strings.Join(names, ", "))
	reps := fs.Int("reps", 3, "repetitions of every (profile, policy) run; the table shows medians")
	seconds := fs.Float64("seconds", 10, "length of each foreground run")
	hz := fs.Float64("hz", 120, "the foreground's refresh rate")
	fgCPU := fs.Int("fg-cpu", qos.LastCPU(), "CPU of the foreground")
	bgCPU := fs.Int("bg-cpu", 0, "CPU of the background LLM (this process)")
	bufMiB := fs.Int("buffer-mib", 0, "size of the foreground's burst buffer in MiB (0: 16× the last-level cache)")
	units := fs.Float64("units", 0, "foreground work units per frame (0: calibrate each profile alone first)")
	duty := fs.Float64("duty", 0, "sporadic background: on for this `fraction` of every --period (0: always on)")
	period := fs.Duration("period", 50*time.Second, "period of the sporadic background")
	window := fs.Duration("window", 100*time.Millisecond, "time window of the contention–slowdown correlation")
	maxStolen := fs.Float64("max-stolen", 0, "run a run again (up to --retries times) when other processes held the foreground's core for more than this `percent` of it (0: never)")
	retries := fs.Int("retries", 2, "most extra attempts of a run with --max-stolen")
	threads := fs.Int("threads", 1, "the LLM's worker threads (1: it stays on its core)")
	promptsPath := fs.String("prompts", "", "prompt `file`, "+bench.PromptFormat+" (default: the built-in prompts of bench spec)")
	maxTokens := fs.Int("max-tokens", 128, "tokens per generation; the LLM starts the next prompt when one ends")
	draftMax := fs.Int("draft-max", bench.DefaultDraftMax, "draft length of the spec policy")
	rateCap := fs.Float64("rate-cap", bench.DefaultRateCap, "freq-limit's cap in tok/s (with the 8b pair, unless set: 2, about half its plain decoding)")
	chunkLayers := fs.Int("chunk-layers", bench.DefaultChunkLayers, "chunk-sleep: target layers per chunk (with the 8b pair, unless set: 1)")
	chunkSleep := fs.Duration("chunk-sleep", bench.DefaultChunkSleep, "chunk-sleep: sleep after each chunk (with the 8b pair, unless set: 2ms)")
	outDir := fs.String("out", "", "write the report (qos.json) and plots (qos-PROFILE.svg: jank % vs LLM tok/s; qos-PROFILE-POLICY-timeline.svg: slowdown and contention score over the first repetition) to `dir`")
	keepRuns := fs.Bool("keep-runs", false, "with --out: also write every run's frames and contention samples as CSV (frames-PROFILE-POLICY-REP.csv, samples-…)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		fs.Usage()
		return errUsage
	}
	switch {
	case *reps < 1 || *reps > 1000:
		return fmt.Errorf("--reps %d: want 1 to 1000", *reps)
	case !(*seconds > 0 && *seconds <= 3600):
		return fmt.Errorf("--seconds %v: want (0, 3600]", *seconds)
	case *duty < 0 || *duty > 1:
		return fmt.Errorf("--duty %v: want a fraction in [0, 1]", *duty)
	case *duty > 0 && *duty < 1 && (*period <= 0 || *period > time.Hour):
		return fmt.Errorf("--period %v: want (0, 1h]", *period)
	case *window < time.Millisecond || *window > time.Minute:
		return fmt.Errorf("--window %v: want 1ms to 1m", *window)
	case *maxStolen < 0 || *maxStolen > 100 || *retries < 0 || *retries > 100:
		return fmt.Errorf("--max-stolen %v, --retries %d: want a percentage and 0 to 100 retries", *maxStolen, *retries)
	case *threads < 1 || *threads > 256:
		return fmt.Errorf("--threads %d: want 1 to 256", *threads)
	case *maxTokens < 1 || *maxTokens > 1<<16:
		return fmt.Errorf("--max-tokens %d: want 1 to 65536", *maxTokens)
	case *draftMax < 1 || *draftMax > 64:
		return fmt.Errorf("--draft-max %d: want 1 to 64", *draftMax)
	case *fgCPU < 0 || *fgCPU >= runtime.NumCPU() || *bgCPU < 0 || *bgCPU >= runtime.NumCPU():
		return fmt.Errorf("--fg-cpu %d, --bg-cpu %d: this machine has CPUs 0 to %d", *fgCPU, *bgCPU, runtime.NumCPU()-1)
	case *bufMiB < 0 || *bufMiB > 64<<10:
		return fmt.Errorf("--buffer-mib %d: want 1 to 65536 (0: the default)", *bufMiB)
	case *pair != "8b" && *pair != "1b":
		return fmt.Errorf("--pair %q: want 8b or 1b", *pair)
	case *warmUp < 0 || *warmUp > time.Hour:
		return fmt.Errorf("--warm-up %v: want [0, 1h]", *warmUp)
	case *fgCPU == *bgCPU:
		return fmt.Errorf("--fg-cpu and --bg-cpu are both %d: the experiment needs the foreground and the LLM on different CPUs", *fgCPU)
	}
	// The baselines' defaults are set for the 1B pair (a layer ≈ 2.5 ms,
	// plain decoding ≈ 18 tok/s on one core); the 8B pair's layers take
	// ≈ 7.5 ms and it decodes ≈ 4 tok/s, so the same cut in duty cycle
	// and the same share of its speed take other values.
	if *modelPath == "" && *pair == "8b" {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if !set["rate-cap"] {
			*rateCap = 2
		}
		if !set["chunk-layers"] {
			*chunkLayers = 1
		}
		if !set["chunk-sleep"] {
			*chunkSleep = 2 * time.Millisecond
		}
	}
	// The policies take this run's knobs, and the LLM once it is loaded;
	// the names are checked before it is.
	knobs := bench.QoSOptions{DraftMax: *draftMax, RateCap: *rateCap, ChunkLayers: *chunkLayers, ChunkSleep: *chunkSleep}
	pols, err := qos.LookupPolicies(*policies, bench.QoSPolicies(nil, knobs))
	if err != nil {
		return err
	}
	var profs []string
	for _, p := range strings.Split(*profiles, ",") {
		p = strings.TrimSpace(p)
		if _, err := qos.LookupProfile(p); err != nil {
			return err
		}
		profs = append(profs, p)
	}
	prompts := bench.DefaultPrompts
	if *promptsPath != "" {
		if prompts, err = bench.ReadPrompts(*promptsPath); err != nil {
			return err
		}
	}
	if *outDir != "" {
		if err := os.MkdirAll(*outDir, 0o755); err != nil {
			return err
		}
	}
	progress := func(what string) { fmt.Fprintf(stderr, "bench qos: %s\n", what) }

	var llm *bench.QoSLLM
	needModel := false
	for _, p := range pols {
		needModel = needModel || !p.Native
	}
	target, draft := *modelPath, *draftPath
	if needModel {
		if target == "" {
			if draft != "" {
				return fmt.Errorf("--draft needs -m: the target it drafts for")
			}
			models := qosModels
			if *pair == "8b" {
				models = flashModels
			}
			if target, draft, err = models(stderr); err != nil {
				return err
			}
		}
		e, err := openEngine(ctx, target, engine.Options{Threads: *threads, Draft: draft}, stderr)
		if err != nil {
			return err
		}
		defer e.Close()
		llm = &bench.QoSLLM{Engine: e, Prompts: prompts, MaxTokens: *maxTokens}
		progress(fmt.Sprintf("background LLM %s (draft %v), %d thread(s) on CPU %d", target, orDash(nonEmpty(draft)), *threads, *bgCPU))
		if pols, err = qos.LookupPolicies(*policies, bench.QoSPolicies(llm, knobs)); err != nil {
			return err
		}
	}
	exp := qos.Experiment{Profiles: profs, Policies: pols, Reps: *reps,
		Duration: time.Duration(*seconds * float64(time.Second)), Hz: *hz, FgCPU: *fgCPU, BgCPU: *bgCPU,
		Seed: 1, Window: *window, Units: *units, BufferBytes: int64(*bufMiB) << 20, Progress: progress,
		MaxStolenPct: *maxStolen, Retries: *retries, WarmUp: *warmUp}
	if *keepRuns {
		if *outDir == "" {
			return fmt.Errorf("--keep-runs needs --out DIR")
		}
		exp.Keep = func(prof, pol string, rep int, r *qos.PairResult) error {
			return qos.SaveRun(*outDir, prof, pol, rep, r)
		}
	}
	if llm != nil {
		exp.StartAt = llm.StartAt
	}
	if *duty > 0 && *duty < 1 {
		exp.Duty, exp.Period = *duty, *period
	}
	rep, err := exp.Run(ctx)
	if err != nil {
		return err
	}
	out := qosOutput{Target: target, Draft: draft, Report: rep}
	if *outDir != "" {
		if err := writeQoSFiles(*outDir, &out); err != nil {
			return err
		}
		progress("wrote " + filepath.Join(*outDir, "qos.json") + " and the plots")
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	printQoS(stdout, &out)
	return nil
}

type qosOutput struct {
	Target string `json:"target,omitempty"`
	Draft  string `json:"draft,omitempty"`
	qos.Report
}

func printQoS(w io.Writer, o *qosOutput) {
	r := &o.Report
	mode := "continuous"
	if r.Duty > 0 {
		mode = fmt.Sprintf("sporadic: on %.0f%% of every %.0f s", 100*r.Duty, r.PeriodS)
	}
	fmt.Fprintf(w, "foreground %g Hz, %d × %.0f s per cell (medians), background %s, CS–slowdown r over %.0f ms windows\n",
		r.Hz, r.Reps, r.Seconds, mode, r.WindowMs)
	if o.Target != "" {
		fmt.Fprintf(w, "LLM %s, draft %v\n", o.Target, orDash(nonEmpty(o.Draft)))
	}
	fmt.Fprintln(w, "profile  policy        jank %   p95 ms   p99 ms   slow   tok/s   eff tok/s   slowdown   r      stolen")
	for _, row := range r.Rows {
		rs := "–"
		if row.RValid {
			rs = fmt.Sprintf("%.2f", row.R)
		}
		tok, eff := "–", "–"
		if row.TokPerS > 0 {
			tok, eff = fmt.Sprintf("%.2f", row.TokPerS), fmt.Sprintf("%.2f", row.EffectiveTokPerS)
		}
		fmt.Fprintf(w, "%-8s %-12s %7.1f  %7.2f  %7.2f  %5.0f  %6s  %10s   %7.3f×  %-5s  %5.1f%%\n",
			row.Profile, row.Policy, row.JankPct, row.P95Ms, row.P99Ms, row.Slow, tok, eff, row.MeanSlowdown, rs, row.StolenPct)
	}
}

// writeQoSFiles writes the report and one plot per profile: jank % against
// the LLM's (effective) tok/s, a point per policy.
func writeQoSFiles(dir string, o *qosOutput) error {
	data, err := json.MarshalIndent(o, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "qos.json"), append(data, '\n'), 0o644); err != nil {
		return err
	}
	xLabel := "LLM tok/s"
	if o.Duty > 0 {
		xLabel = "LLM effective tok/s (idle time counted)"
	}
	byProfile := map[string][]qos.Row{}
	var order []string
	for _, row := range o.Rows {
		if byProfile[row.Profile] == nil {
			order = append(order, row.Profile)
		}
		byProfile[row.Profile] = append(byProfile[row.Profile], row)
	}
	// Over time: each LLM policy's first repetition, window by window.
	for _, row := range o.Rows {
		if len(row.Runs) == 0 || len(row.Runs[0].Windows) == 0 {
			continue
		}
		var slow, score []plot.Point
		for _, w := range row.Runs[0].Windows {
			if w.Frames > 0 {
				slow = append(slow, plot.Point{X: w.T, Y: w.Slowdown})
			}
			if w.Samples > 0 {
				score = append(score, plot.Point{X: w.T, Y: w.Score})
			}
		}
		c := plot.Chart{Title: fmt.Sprintf("%s beside %s: slowdown and contention over time (r %.2f)", row.Profile, row.Policy, row.Runs[0].Correlation.R),
			XLabel: fmt.Sprintf("seconds (%.0f ms windows)", o.WindowMs), YLabel: "frame time ÷ native; contention score", Width: 900, YZero: true,
			Series: []plot.Series{{Name: "slowdown", Points: slow, Line: true}, {Name: "contention", Points: score, Line: true}}}
		if err := writeChart(filepath.Join(dir, "qos-"+row.Profile+"-"+row.Policy+"-timeline.svg"), c); err != nil {
			return err
		}
	}
	for _, prof := range order {
		c := plot.Chart{Title: fmt.Sprintf("%s at %g Hz: foreground jank vs background LLM speed", prof, o.Hz),
			XLabel: xLabel, YLabel: "jank % (frames over the deadline)", XZero: true, YZero: true}
		for _, row := range byProfile[prof] {
			x := row.TokPerS
			if o.Duty > 0 {
				x = row.EffectiveTokPerS
			}
			c.Series = append(c.Series, plot.Series{Name: row.Policy, Points: []plot.Point{{X: x, Y: row.JankPct}}})
		}
		if err := writeChart(filepath.Join(dir, "qos-"+prof+".svg"), c); err != nil {
			return err
		}
	}
	return nil
}

func writeChart(path string, c plot.Chart) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = c.WriteSVG(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// qosModels returns the cached Llama-3.2-1B-shape Q4_0 target and its
// 4-layer draft (see agreeingPair).
func qosModels(stderr io.Writer) (target, draft string, err error) {
	return agreeingPair(stderr, "bench qos", "llama3-1b", "Llama-3.2-1B",
		"qos-llama3-1b-q4_0-tail4x0.05.gguf", "qos-llama3-1b-q4_0-tail4x0.05-draft4.gguf")
}
