package bench

import (
	"context"
	"fmt"
	"slices"

	"shade/engine"
	"shade/sample"
	"shade/speculate"
)

// SpecOptions configure RunSpec.
type SpecOptions struct {
	Modes     []speculate.Mode // default: off, chain, tree, ngram, auto
	Prompts   []string         // default: DefaultPrompts
	Tokens    int              // generated per prompt (default 64)
	DraftMax  int
	TreeWidth int
	TreeDepth int
	// Governor, if set, paces every speculative mode (off stays plain,
	// the baseline).
	Governor speculate.Governor
	// Base, if set, carries the other speculation settings (lever's
	// switches, say) every mode runs with; Mode, DraftMax, TreeWidth and
	// TreeDepth are set from the fields above.
	Base     speculate.Config
	Progress func(what string)
}

// DefaultPrompts cover the seed papers' task kinds: story, math, code, chat.
var DefaultPrompts = []string{
	"Once upon a time, there was a little dog named Max.",
	"Lily and Ben went to the park with their mom. They saw",
	"Question: Tom has 3 apples and buys 5 more. How many apples does he have? Answer:",
	"def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n",
	"Summarize: The meeting covered the budget, the new hires and the launch date.",
}

// SpecResult is one mode's outcome over all prompts.
type SpecResult struct {
	Mode           string  `json:"mode"`
	TokPerS        float64 `json:"tok_per_s"` // median over prompts
	Speedup        float64 `json:"speedup_vs_ar"`
	Acceptance     float64 `json:"acceptance"` // accepted ÷ drafted, all prompts
	AcceptedPerStp float64 `json:"accepted_per_step"`
	TokensPerStep  float64 `json:"tokens_per_step"`
	DraftShare     float64 `json:"draft_time_share"`
	Lossless       bool    `json:"same_output_as_ar"`
}

// SpecReport is what RunSpec measured.
type SpecReport struct {
	Prompts int          `json:"prompts"`
	Tokens  int          `json:"tokens_per_prompt"`
	Results []SpecResult `json:"results"`
}

// RunSpec generates Tokens greedy tokens for every prompt in every mode, in
// one run, modes alternating prompt by prompt, and reports each mode's
// median speed, its median speedup over plain decoding (mode off) on the
// same prompts, its acceptance, and whether its output equals plain
// decoding's (it must: greedy speculation is lossless).
func RunSpec(ctx context.Context, e *engine.Engine, o SpecOptions) (SpecReport, error) {
	if len(o.Modes) == 0 {
		o.Modes = []speculate.Mode{speculate.ModeOff, speculate.ModeChain, speculate.ModeTree, speculate.ModeNgram, speculate.ModeAuto}
	}
	o.Modes = slices.DeleteFunc(slices.Clone(o.Modes), func(m speculate.Mode) bool { return m == speculate.ModeOff })
	o.Modes = append([]speculate.Mode{speculate.ModeOff}, o.Modes...)
	if len(o.Prompts) == 0 {
		o.Prompts = DefaultPrompts
	}
	if o.Tokens <= 0 {
		o.Tokens = 64
	}
	rep := SpecReport{Prompts: len(o.Prompts), Tokens: o.Tokens}
	var modes []speculate.Mode
	for _, m := range o.Modes {
		if e.Draft == nil && (m == speculate.ModeChain || m == speculate.ModeTree || m == speculate.ModeFlash) {
			continue
		}
		modes = append(modes, m)
	}
	// Modes alternate within each prompt, so that a shared machine's
	// changing load falls on all of them alike.
	tps := make([][]float64, len(modes))
	totals := make([]speculate.Stats, len(modes))
	results := make([]SpecResult, len(modes))
	for j, mode := range modes {
		results[j] = SpecResult{Mode: mode.String(), Lossless: true}
	}
	for i, p := range o.Prompts {
		if o.Progress != nil {
			o.Progress(fmt.Sprintf("spec: prompt %d of %d, modes %v", i+1, len(o.Prompts), modes))
		}
		var reference []int32
		for j, mode := range modes {
			cfg := o.Base
			cfg.Mode, cfg.DraftMax, cfg.TreeWidth, cfg.TreeDepth = mode, o.DraftMax, o.TreeWidth, o.TreeDepth
			cfg.Deps.Governor = nil
			if mode != speculate.ModeOff {
				cfg.Deps.Governor = o.Governor
			}
			st, err := e.Generate(ctx, engine.Request{
				Prompt: p, MaxTokens: o.Tokens, Sampling: sample.Params{Temp: 0}, IgnoreEOS: true, Spec: cfg,
			}, func(string) error { return nil })
			if err != nil {
				return rep, fmt.Errorf("bench spec: %v: %w", mode, err)
			}
			tps[j] = append(tps[j], st.GenTPS)
			if mode == speculate.ModeOff {
				reference = st.Tokens
			} else if !slices.Equal(st.Tokens, reference) {
				results[j].Lossless = false
			}
			if s := st.Spec; s != nil {
				totals[j].Add(s)
			}
		}
	}
	for j := range modes {
		res, total := &results[j], &totals[j]
		res.TokPerS = median(tps[j])
		// The speedup is the median of per-prompt ratios: each ratio
		// compares runs made back to back.
		var ratios []float64
		for i := range tps[j] {
			ratios = append(ratios, tps[j][i]/tps[0][i])
		}
		res.Speedup = median(ratios)
		res.Acceptance = total.AcceptanceRate()
		res.AcceptedPerStp = total.MeanAccepted()
		if total.Steps > 0 {
			res.TokensPerStep = float64(total.Generated) / float64(total.Steps)
		}
		if all := total.DraftTime + total.VerifyTime + total.OtherTime; all > 0 {
			res.DraftShare = total.DraftTime.Seconds() / all.Seconds()
		}
		rep.Results = append(rep.Results, *res)
	}
	return rep, nil
}
