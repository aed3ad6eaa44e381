package bench

import (
	"context"
	"fmt"
	"slices"
	"time"

	"shade/engine"
	"shade/sample"
	"shade/speculate"
	"shade/weights"
)

// FlashOptions configure RunFlash.
type FlashOptions struct {
	// Budgets are the shares of the target's layers kept in DRAM (0 to 1);
	// the draft and the target's embedding, head and norms always are.
	Budgets []float64
	// AblationBudget is the budget of the ablation (default 0.5; < 0: none).
	AblationBudget float64
	Prompts        []string // default: the first three DefaultPrompts
	Tokens         int      // generated per prompt (default 32)
	// WarmupTokens, if > 0, has every mode at every budget first generate
	// that many tokens from the first prompt, untimed: what a mode learns
	// as it runs (lever's acceptance and cost scales, shared by an
	// engine's requests) then starts warm, as on a serving engine.
	WarmupTokens int
	// Chain and static-tree speculation's shapes.
	DraftMax, TreeWidth, TreeDepth int
	ReadAhead                      int
	Layout                         weights.Layout
	DiskBytes                      int64 // bytes of each disk probe (default 512 MiB)
	Progress                       func(what string)
	// Results, if set, receives each budget's results as soon as they
	// are measured (ablation true for the ablation's): a long run shows
	// its table as it goes.
	Results func(rs []FlashResult, ablation bool)
}

// FlashResult is one configuration's outcome over all prompts.
type FlashResult struct {
	Budget        float64 `json:"budget"`          // share of target layers resident
	Mode          string  `json:"mode"`            // flash-ar, chain, tree, lever, lever-no-…
	TokPerS       float64 `json:"tok_per_s"`       // median over prompts
	Speedup       float64 `json:"speedup_vs_ar"`   // median of per-prompt ratios to flash-ar at the same budget
	BytesPerToken float64 `json:"bytes_per_token"` // read from storage per generated token
	IOShare       float64 `json:"io_share"`        // time blocked on reads ÷ (that + compute)
	ReadGBps      float64 `json:"read_gb_per_s"`   // the pipeline's achieved read rate
	Acceptance    float64 `json:"acceptance"`
	TokensPerStep float64 `json:"tokens_per_step"`
	TreeNodes     float64 `json:"tree_nodes_per_step"`
	PrunedShare   float64 `json:"pruned_share,omitempty"`
	HeadRows      float64 `json:"head_rows_per_step,omitempty"`
	// DraftShare is the share of the steps' time spent drafting (the
	// rest verifies and books).
	DraftShare float64 `json:"draft_share"`
	Lossless   bool    `json:"same_output_as_ar"`
	Streamed   int     `json:"streamed_layers"`
}

// FlashReport is what RunFlash measured.
type FlashReport struct {
	Prompts    int                `json:"prompts"`
	Tokens     int                `json:"tokens_per_prompt"`
	Warmup     int                `json:"warmup_tokens,omitempty"` // untimed tokens per mode and budget first
	Layers     int                `json:"layers"`
	Results    []FlashResult      `json:"results"`
	Ablation   []FlashResult      `json:"ablation"`
	Disk       weights.DiskResult `json:"disk"`
	DiskNote   string             `json:"disk_note,omitempty"` // why Disk is empty
	Pruner     string             `json:"pruner"`
	Acceptance string             `json:"acceptance"` // whether lever started from a stored acceptance profile
	Cost       string             `json:"cost_model"`
}

// flashMode is one configuration compared.
type flashMode struct {
	name string
	cfg  speculate.Config
}

// RunFlash compares, at each DRAM budget, plain streamed decoding
// (Flash-AR), chain and static-tree speculation and the full Lever design,
// then runs an ablation at one budget turning off one of Lever's parts at
// a time. Generation is greedy; modes alternate prompt by prompt so a
// shared machine's changing load falls on all alike; figures are medians
// over prompts. The storage's O_DIRECT bandwidth is measured in the same
// run, before and after. The engine must have a draft; its budget is left
// as the last one run.
func RunFlash(ctx context.Context, e *engine.Engine, o FlashOptions) (FlashReport, error) {
	if e.Draft == nil {
		return FlashReport{}, fmt.Errorf("bench flash: needs a draft model")
	}
	if len(o.Budgets) == 0 {
		o.Budgets = []float64{0, 0.25, 0.5, 0.75, 1}
	}
	for _, b := range o.Budgets {
		if b < 0 || b > 1 {
			return FlashReport{}, fmt.Errorf("bench flash: budget %v outside [0, 1]", b)
		}
	}
	if o.AblationBudget == 0 {
		o.AblationBudget = 0.5
	}
	if len(o.Prompts) == 0 {
		o.Prompts = DefaultPrompts[:3]
	}
	if o.Tokens <= 0 {
		o.Tokens = 32
	}
	if o.DiskBytes <= 0 {
		o.DiskBytes = 512 << 20
	}
	progress := func(f string, a ...any) {
		if o.Progress != nil {
			o.Progress(fmt.Sprintf(f, a...))
		}
	}
	rep := FlashReport{Prompts: len(o.Prompts), Tokens: o.Tokens, Warmup: o.WarmupTokens, Layers: e.Model.Config.Layers}
	ls, err := e.FlashResources(nil) // measured before any layer streams
	if err != nil {
		return rep, err
	}
	rep.Cost = ls.CostSource
	rep.Pruner = ls.PrunerNote
	rep.Acceptance = e.DraftProfileNote
	path, off := e.Model.File.Path, int64(e.Model.File.DataOffset)
	progress("disk: O_DIRECT read bandwidth of %s", path)
	// A disk probe that cannot run (a file smaller than one read, say) is
	// reported, not fatal: the comparison of modes stands without it.
	disk, diskErr := weights.MeasureDisk(path, weights.DiskOptions{Offset: off, Bytes: o.DiskBytes})

	base := speculate.Config{DraftMax: o.DraftMax, TreeWidth: o.TreeWidth, TreeDepth: o.TreeDepth}
	with := func(m speculate.Mode, f func(c *speculate.Config)) speculate.Config {
		c := base
		c.Mode = m
		if f != nil {
			f(&c)
		}
		return c
	}
	main := []flashMode{
		{"flash-ar", with(speculate.ModeOff, nil)},
		{"chain", with(speculate.ModeChain, nil)},
		{"tree", with(speculate.ModeTree, nil)},
		{"lever", with(speculate.ModeFlash, nil)},
	}
	for _, b := range o.Budgets {
		res, err := runFlashBudget(ctx, e, o, b, main, progress)
		if err != nil {
			return rep, err
		}
		rep.Results = append(rep.Results, res...)
		if o.Results != nil {
			o.Results(res, false)
		}
	}
	if o.AblationBudget > 0 {
		abl := []flashMode{
			{"flash-ar", with(speculate.ModeOff, nil)},
			{"lever", with(speculate.ModeFlash, nil)},
			{"no gain-cost", with(speculate.ModeFlash, func(c *speculate.Config) { c.Ablation.NoGainCost = true })},
			{"no pruning", with(speculate.ModeFlash, func(c *speculate.Config) { c.Ablation.NoPrune = true })},
			{"no lazy head", with(speculate.ModeFlash, func(c *speculate.Config) { c.Ablation.NoLazyHead = true })},
			{"no batch draft", with(speculate.ModeFlash, func(c *speculate.Config) { c.Ablation.NoBatchDraft = true })},
		}
		if rep.Ablation, err = runFlashBudget(ctx, e, o, o.AblationBudget, abl, progress); err != nil {
			return rep, err
		}
		if o.Results != nil {
			o.Results(rep.Ablation, true)
		}
	}
	progress("disk: O_DIRECT read bandwidth again")
	again, err := weights.MeasureDisk(path, weights.DiskOptions{Offset: off, Bytes: o.DiskBytes})
	switch {
	case diskErr != nil:
		rep.DiskNote = diskErr.Error()
	case err != nil:
		rep.DiskNote = err.Error()
	default:
		rep.Disk = disk.Merge(again)
	}
	return rep, nil
}

// SetLayerBudget keeps the given share of the target's layers resident
// (with the draft and the target's globals) and streams the rest.
func SetLayerBudget(e *engine.Engine, share float64, o weights.Options) (weights.Plan, error) {
	var layers int64
	for _, b := range e.Model.Weights.LayerBytes {
		layers += b
	}
	budget := e.Model.Weights.GlobalBytes + int64(share*float64(layers))
	if e.Draft != nil {
		budget += e.Draft.WeightBytes()
	}
	if share >= 1 {
		budget += 1 << 20 // rounding never streams a layer at 100%
	}
	return e.SetDRAMBudget(budget, o)
}

func runFlashBudget(ctx context.Context, e *engine.Engine, o FlashOptions, budget float64, modes []flashMode, progress func(string, ...any)) ([]FlashResult, error) {
	plan, err := SetLayerBudget(e, budget, weights.Options{ReadAhead: o.ReadAhead, Layout: o.Layout})
	if err != nil {
		return nil, err
	}
	e.Repack() // not inside the first timed generation
	results := make([]FlashResult, len(modes))
	tps := make([][]float64, len(modes))
	var read, gen []int64
	read = make([]int64, len(modes))
	gen = make([]int64, len(modes))
	ioWait := make([]time.Duration, len(modes))
	compute := make([]time.Duration, len(modes))
	readTime := make([]time.Duration, len(modes))
	totals := make([]speculate.Stats, len(modes))
	for j, m := range modes {
		results[j] = FlashResult{Budget: budget, Mode: m.name, Lossless: true, Streamed: len(plan.Streamed)}
	}
	if o.WarmupTokens > 0 {
		for _, m := range modes {
			progress("flash: budget %.0f%%, warm-up of %s", 100*budget, m.name)
			if _, err := e.Generate(ctx, engine.Request{Prompt: o.Prompts[0], MaxTokens: o.WarmupTokens, Sampling: sample.Params{Temp: 0}, IgnoreEOS: true, Spec: m.cfg},
				func(string) error { return nil }); err != nil {
				return nil, fmt.Errorf("bench flash: warm-up of %s at budget %v: %w", m.name, budget, err)
			}
		}
	}
	for i, p := range o.Prompts {
		var reference []int32
		for j, m := range modes {
			progress("flash: budget %.0f%% (%d of %d layers streamed), prompt %d of %d, %s", 100*budget, len(plan.Streamed), plan.Layers, i+1, len(o.Prompts), m.name)
			st, err := e.Generate(ctx, engine.Request{Prompt: p, MaxTokens: o.Tokens, Sampling: sample.Params{Temp: 0}, IgnoreEOS: true, Spec: m.cfg},
				func(string) error { return nil })
			if err != nil {
				return nil, fmt.Errorf("bench flash: %s at budget %v: %w", m.name, budget, err)
			}
			tps[j] = append(tps[j], st.GenTPS)
			if j == 0 {
				reference = st.Tokens
			} else if !slices.Equal(st.Tokens, reference) {
				results[j].Lossless = false
			}
			gen[j] += int64(st.GenTokens)
			if s := st.Stream; s != nil {
				read[j] += s.BytesRead
				ioWait[j] += s.IOWait
				compute[j] += s.ComputeTime
				readTime[j] += s.ReadTime
			}
			if s := st.Spec; s != nil {
				totals[j].Add(s)
			}
		}
	}
	for j := range modes {
		r := &results[j]
		r.TokPerS = median(tps[j])
		var ratios []float64
		for i := range tps[j] {
			ratios = append(ratios, tps[j][i]/tps[0][i])
		}
		r.Speedup = median(ratios)
		if gen[j] > 0 {
			r.BytesPerToken = float64(read[j]) / float64(gen[j])
		}
		if all := ioWait[j] + compute[j]; all > 0 {
			r.IOShare = ioWait[j].Seconds() / all.Seconds()
		}
		if readTime[j] > 0 {
			r.ReadGBps = float64(read[j]) / readTime[j].Seconds() / 1e9
		}
		t := &totals[j]
		r.Acceptance = t.AcceptanceRate()
		if t.Steps > 0 {
			r.TokensPerStep = float64(t.Generated) / float64(t.Steps)
			r.TreeNodes = float64(t.Drafted) / float64(t.Steps)
			r.HeadRows = float64(t.HeadRows) / float64(t.Steps)
		}
		if all := t.DraftTime + t.VerifyTime + t.OtherTime; all > 0 {
			r.DraftShare = t.DraftTime.Seconds() / all.Seconds()
		}
		if t.Drafted > 0 {
			r.PrunedShare = float64(t.Pruned) / float64(t.Drafted)
		}
	}
	return results, nil
}
