package main

import (
	"flag"
	"fmt"

	"shade/speculate"
)

// specFlags are the speculative-decoding flags that run, serve and
// bench spec share.
type specFlags struct {
	draft     *string
	mode      *string // nil where the command picks modes itself (bench spec)
	draftMax  *int
	treeWidth *int
	treeDepth *int

	// Lever mode (--spec lever) and its ablation switches.
	maxNodes     *int
	pruneLayer   *int
	noPrune      *bool
	noGainCost   *bool
	noLazyHead   *bool
	noBatchDraft *bool
}

func addSpecFlags(fs *flag.FlagSet, withMode bool) *specFlags {
	f := &specFlags{
		draft:        fs.String("draft", "", "draft model `file` for speculative decoding (same vocabulary as -m)"),
		draftMax:     fs.Int("draft-max", 8, "most tokens drafted per step (--spec chain, tree; a static lever tree)"),
		treeWidth:    fs.Int("tree-width", 3, "nodes per level of a draft tree (--spec tree; lever with --no-gain-cost)"),
		treeDepth:    fs.Int("tree-depth", 0, "most levels of a draft tree (--spec tree; 0: --draft-max)"),
		maxNodes:     fs.Int("max-nodes", 64, "safety cap on a gain-cost tree's nodes (--spec lever)"),
		pruneLayer:   fs.Int("prune-layer", 0, "target layers run before verification pruning (--spec lever; 0: the predictor's own)"),
		noPrune:      fs.Bool("no-prune", false, "lever: verify every drafted row through every layer"),
		noGainCost:   fs.Bool("no-gain-cost", false, "lever: a static tree (--tree-width × --tree-depth, --draft-max nodes) instead of a gain-cost one"),
		noLazyHead:   fs.Bool("no-lazy-head", false, "lever: compute logits for every verified row, not only along the accepted path"),
		noBatchDraft: fs.Bool("no-batch-draft", false, "lever: expand one frontier node per draft pass instead of batching them"),
	}
	if withMode {
		f.mode = fs.String("spec", "", "speculation: auto, chain, tree, ngram, lever or off (default: auto with --draft, else off)")
	}
	return f
}

// config checks the flags and returns the speculation they ask for.
func (f *specFlags) config() (speculate.Config, error) {
	m := speculate.ModeOff
	if f.mode != nil && *f.mode != "" {
		var err error
		if m, err = speculate.ParseMode(*f.mode); err != nil {
			return speculate.Config{}, err
		}
	} else if *f.draft != "" {
		m = speculate.ModeAuto
	}
	if (m == speculate.ModeChain || m == speculate.ModeTree || m == speculate.ModeFlash) && *f.draft == "" {
		return speculate.Config{}, fmt.Errorf("--spec %v needs a draft model (--draft FILE)", m)
	}
	if *f.draftMax < 1 || *f.draftMax > 64 || *f.treeWidth < 1 || *f.treeWidth > 16 || *f.treeDepth < 0 || *f.treeDepth > 64 {
		return speculate.Config{}, fmt.Errorf("--draft-max must be in [1, 64], --tree-width in [1, 16], --tree-depth in [0, 64]")
	}
	if *f.maxNodes < 1 || *f.maxNodes > 256 {
		return speculate.Config{}, fmt.Errorf("--max-nodes must be in [1, 256]")
	}
	if *f.pruneLayer < 0 || *f.pruneLayer > 4096 {
		return speculate.Config{}, fmt.Errorf("--prune-layer must be in [0, the target's layers)")
	}
	return speculate.Config{Mode: m, DraftMax: *f.draftMax, TreeWidth: *f.treeWidth, TreeDepth: *f.treeDepth,
		MaxNodes: *f.maxNodes, PruneLayer: *f.pruneLayer, Ablation: speculate.Ablation{NoPrune: *f.noPrune, NoGainCost: *f.noGainCost,
			NoLazyHead: *f.noLazyHead, NoBatchDraft: *f.noBatchDraft}}, nil
}
