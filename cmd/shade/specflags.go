package main

import (
	"flag"
	"fmt"

	"shade/spec"
)

// specFlags are the speculative-decoding flags that run, serve and
// bench spec share.
type specFlags struct {
	draft     *string
	mode      *string // nil where the command picks modes itself (bench spec)
	draftMax  *int
	treeWidth *int
	treeDepth *int
}

func addSpecFlags(fs *flag.FlagSet, withMode bool) *specFlags {
	f := &specFlags{
		draft:     fs.String("draft", "", "draft model `file` for speculative decoding (same vocabulary as -m)"),
		draftMax:  fs.Int("draft-max", 8, "most tokens drafted per step"),
		treeWidth: fs.Int("tree-width", 3, "nodes per level of a draft tree (--spec tree)"),
		treeDepth: fs.Int("tree-depth", 0, "most levels of a draft tree (--spec tree; 0: --draft-max)"),
	}
	if withMode {
		f.mode = fs.String("spec", "", "speculation: auto, chain, tree, ngram or off (default: auto with --draft, else off)")
	}
	return f
}

// config checks the flags and returns the speculation they ask for.
func (f *specFlags) config() (spec.Config, error) {
	m := spec.Off
	if f.mode != nil && *f.mode != "" {
		var err error
		if m, err = spec.ParseMode(*f.mode); err != nil {
			return spec.Config{}, err
		}
	} else if *f.draft != "" {
		m = spec.Auto
	}
	if (m == spec.Chain || m == spec.TreeM) && *f.draft == "" {
		return spec.Config{}, fmt.Errorf("--spec %v needs a draft model (--draft FILE)", m)
	}
	if *f.draftMax < 1 || *f.draftMax > 64 || *f.treeWidth < 1 || *f.treeWidth > 16 || *f.treeDepth < 0 || *f.treeDepth > 64 {
		return spec.Config{}, fmt.Errorf("--draft-max must be in [1, 64], --tree-width in [1, 16], --tree-depth in [0, 64]")
	}
	return spec.Config{Mode: m, DraftMax: *f.draftMax, TreeWidth: *f.treeWidth, TreeDepth: *f.treeDepth}, nil
}
