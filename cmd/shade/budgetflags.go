package main

import (
	"flag"
	"fmt"
	"io"
	"math"

	"shade/bench"
	"shade/engine"
	"shade/panelcache"
	"shade/quant"
	"shade/weights"
)

// budgetFlags are the flags of where weights live that run, serve and
// bench share: the DRAM budget, and row panels.
type budgetFlags struct {
	budget    *string
	readAhead *int
	layout    *string
	repack    *bool
	panels    *string
	panelDir  *string
	stderr    io.Writer
}

func addBudgetFlags(fs *flag.FlagSet) *budgetFlags {
	return &budgetFlags{
		stderr: fs.Output(),
		budget: fs.String("dram-budget", "", "keep at most `budget` of weights in DRAM: a percentage of the target model's weight bytes (40%) "+
			"or a size (2GiB, 512MiB, 1.5GB, bytes). The draft, the target's embedding, head and norms and as many target layers as fit stay resident; "+
			"the other layers are read from the model file with O_DIRECT for every forward pass (default: everything resident)"),
		readAhead: fs.Int("read-ahead", weights.DefaultReadAhead, "with --dram-budget: streamed layers read ahead of the one computing (0: each read when needed)"),
		layout:    fs.String("stream-layout", "spread", "with --dram-budget: which layers stream: spread (evenly among the resident ones, so reads hide behind their compute) or tail (the last ones; for comparison)"),
		repack: fs.Bool("repack", true, "compute resident Q4_0, Q8_0 and Q4_K weights repacked into row panels where the CPU has the kernels for them: faster, "+
			"same output (false: --panels=off)"),
		panels: fs.String("panels", "cache", "where Q4_0, Q8_0 and Q4_K weights repacked into row panels live: cache (a file built on the first start, "+
			"then mapped: page cache the OS can evict and share, no repacking later; costs their size on disk), memory (repacked at every start into "+
			"memory the OS cannot evict without swap) or off (the file's layout: nothing to build, slower kernels)"),
		panelDir: fs.String("panel-cache", "", "the panel cache's `directory` (default: $SHADE_PANEL_CACHE or "+
			"$XDG_CACHE_HOME/shade/panels, ~/.cache/shade/panels)"),
	}
}

// check validates the flags before anything is loaded, and turns
// repacking off for the whole process with --repack=false or --panels=off
// (quant.UseRepack).
func (b *budgetFlags) check() error {
	mode, err := panelcache.ParseMode(*b.panels)
	if err != nil {
		return fmt.Errorf("--panels: %w", err)
	}
	if !*b.repack {
		mode = panelcache.Off
	}
	quant.UseRepack(mode != panelcache.Off)
	if *b.readAhead < 0 || *b.readAhead > 64 {
		return fmt.Errorf("--read-ahead must be in [0, 64]")
	}
	if _, err := weights.ParseLayout(*b.layout); err != nil {
		return fmt.Errorf("--stream-layout: %w", err)
	}
	if *b.budget != "" {
		if _, err := weights.ParseBudget(*b.budget, math.MaxInt32); err != nil {
			return fmt.Errorf("--dram-budget: %w", err)
		}
	}
	return nil
}

// panelOptions is where the flags put row panels (check has validated them).
func (b *budgetFlags) panelOptions() *panelcache.Options {
	mode, _ := panelcache.ParseMode(*b.panels)
	if !*b.repack {
		mode = panelcache.Off
	}
	return &panelcache.Options{Mode: mode, Dir: *b.panelDir, Warn: func(s string) {
		if b.stderr != nil {
			fmt.Fprintf(b.stderr, "shade: warning: %s\n", s)
		}
	}}
}

// set puts the flags' budget, streaming and panels into an engine's
// options (check has validated them).
func (b *budgetFlags) set(o *engine.Options) {
	layout, _ := weights.ParseLayout(*b.layout)
	o.DRAMBudget = *b.budget
	o.Stream = weights.Options{ReadAhead: *b.readAhead, Layout: layout}
	o.Panels = b.panelOptions()
}

// panelLine is the report of where a model's row panels came from, for
// run --stats and bench ("" when nothing was repacked).
func panelLine(r panelcache.Result) string {
	if r.Source == panelcache.SourceNone {
		return ""
	}
	return r.String()
}

// printPanelStats is run --stats' line on row panels (part of the load
// time), one for the target and one for a draft.
func printPanelStats(w io.Writer, e *engine.Engine) {
	if l := panelLine(e.Model.PanelStats()); l != "" {
		fmt.Fprintf(w, "shade: %s (part of the load time; --panels says where they live)\n", l)
	}
	if e.Draft != nil {
		if l := panelLine(e.Draft.PanelStats()); l != "" {
			fmt.Fprintf(w, "shade: draft: %s\n", l)
		}
	}
}

// printStreamStats is the stream line of run's stats.
func printStreamStats(w io.Writer, st engine.Stats) {
	s := st.Stream
	if s == nil {
		return
	}
	perToken := 0.0
	if st.GenTokens > 0 {
		perToken = float64(s.BytesRead) / float64(st.GenTokens)
	}
	direct := "O_DIRECT"
	if !s.Direct {
		direct = "page cache"
	}
	fmt.Fprintf(w, "stream: %d of %d layers streamed (%s per pass, %s), %s read in %d passes = %s per generated token | I/O wait %.0f%% of layer time | reads %.2f GB/s | resident %s planned, process %s, buffers %s\n",
		len(s.StreamedLayers), s.Layers, weights.Human(s.StreamedBytesPerPass), direct, weights.Human(s.BytesRead), s.Passes,
		weights.Human(int64(perToken)), 100*s.IOShare, s.ReadGBps, weights.Human(s.PlannedResidentBytes),
		weights.Human(s.ProcessResidentBytes), weights.Human(s.BufferBytes))
	if s.ReadErrors > 0 {
		fmt.Fprintf(w, "stream: %d read errors\n", s.ReadErrors)
	}
}

// printStreamBench is shade bench's streaming section.
func printStreamBench(w io.Writer, r *bench.Report) {
	s := r.Stream
	if s == nil {
		return
	}
	fmt.Fprintf(w, "stream      %d of %d layers streamed, %s per token; I/O wait %.0f%% of layer time\n",
		len(s.Plan.Streamed), s.Plan.Layers, weights.Human(s.BytesPerToken), 100*s.IOShare)
	direct := "O_DIRECT"
	if !s.Disk.Direct {
		direct = "page cache (no O_DIRECT here)"
	}
	same := ""
	if g, ok := s.Disk.ByReaders[s.Decode.Readers]; ok && s.Disk.Readers != s.Decode.Readers {
		same = fmt.Sprintf("; %.2f GB/s with the pipeline's %d", g, s.Decode.Readers)
	}
	fmt.Fprintf(w, "            pipeline %.2f GB/s while reading (%.2f GB/s over decode) = %.0f%% of the disk's %.2f GB/s (%s, best with %d readers%s)\n",
		s.PipelineGBps, s.WallGBps, 100*s.DiskFrac, s.Disk.GBps, direct, s.Disk.Readers, same)
	fmt.Fprintf(w, "            decode %.2f tok/s = %.0f%% of the %.2f tok/s streaming roofline (disk GB/s ÷ streamed bytes per token)\n",
		r.DecodeTokPerS, 100*s.RooflineFrac, s.RooflineTokS)
}
