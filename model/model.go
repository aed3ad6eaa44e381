package model

import (
	"fmt"
	"runtime"

	"shade/gguf"
	"shade/panelcache"
	"shade/par"
	"shade/quant"
)

// Model is a loaded model: its configuration and weights, and the worker
// pool its kernels run on. It is read-only once loaded and can back several
// States, one goroutine per State at a time (they share the pool).
type Model struct {
	Config  *Config
	Weights *Weights
	File    *gguf.File
	Pool    *par.Pool
	// Panels says where Repack puts the row panels (nil: DefaultPanels).
	Panels *panelcache.Options

	panels panelcache.Result // of the last Repack that did something
}

// DefaultPanels is where the row panels of a Model with no Panels of its
// own live: a panel cache file in panelcache.DefaultDir (docs/panels.md
// says why). The command line sets it from --panels; set it before
// loading, not while models repack.
var DefaultPanels = panelcache.Options{Mode: panelcache.Cache}

// Open maps a GGUF file and loads the model in it. threads ≤ 0 uses every
// CPU; more than par.MaxThreads is an error.
func Open(path string, threads int) (*Model, error) {
	if mx := par.MaxThreads(); threads > mx {
		return nil, fmt.Errorf("model: %d threads: at most %d (%d per CPU) can help, and each costs memory and wake-ups", threads, mx, mx/runtime.NumCPU())
	}
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	pool := par.New(threads)
	m, err := FromFile(f, pool)
	if err != nil {
		pool.Close()
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// FromFile loads the model in an opened file.
func FromFile(f *gguf.File, pool *par.Pool) (*Model, error) {
	c, err := ReadConfig(f)
	if err != nil {
		return nil, err
	}
	w, err := LoadWeights(f, c)
	if err != nil {
		return nil, err
	}
	return &Model{Config: c, Weights: w, File: f, Pool: pool}, nil
}

// Close releases the pool, the row panels and the file's mapping.
func (m *Model) Close() error {
	if m.Pool != nil {
		m.Pool.Close()
	}
	m.DropPanels()
	return m.File.Close()
}

// Repack builds now, on the model's pool, the row panels of the matrices
// that compute on them (quant.Repackable) and stay in memory: the embedding,
// the head and the resident layers (all of them, unless the layer source is
// a ResidentLayers that streams some; another source's layers are left to
// their first use). Where they live is m.Panels' choice: mapped from a
// panel cache file (built on the first start), repacked into memory, or
// nowhere (off: the model computes in the file's layout for good; a cache
// problem falls back to memory, see PanelStats). Otherwise each matrix is
// repacked in memory at its first use, so the first pass pays for all of
// it. Call it once the model's layers are placed: a layer repacked and
// then streamed drops its copy, so repacking it first costs only time. It
// returns the bytes of panels it put in place. If the mapped file faults
// (it changed under the process), Repack stops there: the next forward
// pass reads the same pages and returns the error.
func (m *Model) Repack() (n int64) {
	o := DefaultPanels
	if m.Panels != nil {
		o = *m.Panels
	}
	if o.Mode == panelcache.Off {
		m.noPanels()
		return 0
	}
	var err error
	defer func() {
		if err != nil {
			n = 0
		}
	}()
	defer gguf.CatchFault(&err)
	defer gguf.GuardFaults()()
	var mats []quant.Matrix
	each(m, func(q quant.Matrix) { mats = append(mats, q) })
	r := panelcache.Install(m.Pool, m.File, mats, o)
	if r.Source != panelcache.SourceNone || m.panels.Source == "" {
		m.panels = r
	}
	return r.Bytes
}

// PanelStats says where the last Repack that put panels in place took
// them from, and how long that took (Source "none" when nothing was
// repacked: off, or no panel kernels on this CPU).
func (m *Model) PanelStats() panelcache.Result {
	if m.panels.Source == "" {
		return panelcache.Result{Source: panelcache.SourceNone}
	}
	return m.panels
}

// noPanels makes every matrix Repack covers compute in the file's layout
// from now on, dropping panels it has.
func (m *Model) noPanels() {
	w := m.Weights
	w.Embed = w.Embed.WithoutPanels()
	w.Output = w.Output.WithoutPanels()
	if src, ok := w.Layers.(ResidentLayers); ok {
		for i := range m.Config.Layers {
			if l, ok := src.ResidentLayer(i); ok {
				for _, lm := range l.Matrices() {
					*lm.M = lm.M.WithoutPanels()
				}
			}
		}
	}
}

// DropPanels frees the row panels of the matrices Repack covers, at once
// rather than when the collector finds them unreachable (they are outside
// the Go heap, so a small heap may not collect for a long time). The model
// computes in the file's layout until it is repacked again. It must not be
// called while the model computes.
func (m *Model) DropPanels() {
	each(m, func(q quant.Matrix) { q.DropPanels() })
}

// each calls f on the embedding, the head and every resident layer's
// matrices (see Repack).
func each(m *Model, f func(quant.Matrix)) {
	f(m.Weights.Embed)
	f(m.Weights.Output)
	src, ok := m.Weights.Layers.(ResidentLayers)
	if !ok {
		return
	}
	for i := range m.Config.Layers {
		if l, ok := src.ResidentLayer(i); ok {
			for _, lm := range l.Matrices() {
				f(*lm.M)
			}
		}
	}
}

// WeightBytes is the size of all weight matrices, counting a tied
// embedding once.
func (m *Model) WeightBytes() int64 {
	n := m.Weights.GlobalBytes
	for _, b := range m.Weights.LayerBytes {
		n += b
	}
	return n
}

// DecodeBytes is what one decode step reads: every layer's matrices, the
// LM head, and one embedding row.
func (m *Model) DecodeBytes() int64 {
	n := int64(len(m.Weights.Output.Data))
	for _, b := range m.Weights.LayerBytes {
		n += b
	}
	return n + int64(len(m.Weights.Embed.Data)/m.Config.Vocab)
}

// LayerMACs is the multiply-adds of every layer's matrices for one token
// (attention over the cache not counted).
func (m *Model) LayerMACs() int64 {
	c := m.Config
	per := int64(c.Dim) * int64(2*c.QDim()+2*c.KVDim()+3*c.FFN)
	return per * int64(c.Layers)
}

// HeadMACs is the multiply-adds of the LM head for one row of logits.
func (m *Model) HeadMACs() int64 { return int64(m.Config.Dim) * int64(m.Config.Vocab) }
