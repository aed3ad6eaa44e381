package engine

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"shade/cost"
	"shade/flash"
	"shade/gguf"
	"shade/quant"
	"shade/sample"
	"shade/speculate"
	"shade/synth"
	"shade/weights"
)

// failingReader fails the read numbered failAt (1-based), with an error or
// a short read.
type failingReader struct {
	r      io.ReaderAt
	n      atomic.Int64
	failAt atomic.Int64
	short  bool
}

func (f *failingReader) ReadAt(p []byte, off int64) (int, error) {
	if f.n.Add(1) == f.failAt.Load() {
		if f.short {
			return f.r.ReadAt(p[:len(p)/3], off)
		}
		return 0, errors.New("input/output error")
	}
	return f.r.ReadAt(p, off)
}

func synthEngine(t *testing.T) (*Engine, string) {
	t.Helper()
	vocab, err := synth.DemoVocab()
	if err != nil {
		t.Fatal(err)
	}
	shape := synth.Shape{Name: "budget-test", Arch: "llama", Dim: 128, Layers: 6, Heads: 4, KVHeads: 2, HeadDim: 32,
		FFN: 256, ContextLen: 512, RopeBase: 10000, RMSEps: 1e-5}
	dir := t.TempDir()
	path := filepath.Join(dir, "target.gguf")
	if err := synth.WriteFile(path, synth.Options{Shape: shape, Type: quant.Q8_0, Vocab: vocab, Seed: 3, TailFrom: 2, TailScale: 0.1}); err != nil {
		t.Fatal(err)
	}
	e, err := Load(path, 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e, path
}

func TestDRAMBudgetGeneration(t *testing.T) {
	e, path := synthEngine(t)
	req := Request{Prompt: "Once upon a time", MaxTokens: 12, IgnoreEOS: true, Sampling: sample.Params{Temp: 0}}
	ref, err := e.Generate(context.Background(), req, func(string) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if ref.Stream != nil {
		t.Fatal("stream stats without a budget")
	}
	for _, short := range []bool{false, true} {
		fr := &failingReader{short: short}
		plan, err := e.SetDRAMBudget(0, weights.Options{ReadAhead: 2, WrapReader: func(r io.ReaderAt) io.ReaderAt { fr.r = r; return fr }})
		if err != nil {
			t.Fatal(err)
		}
		if len(plan.Streamed) != 6 || plan.Warning() == "" {
			t.Fatalf("0 budget: %s, warning %q", plan.String(), plan.Warning())
		}
		fr.failAt.Store(fr.n.Load() + 20) // a few tokens into the generation
		_, err = e.Generate(context.Background(), req, func(string) error { return nil })
		if err == nil || !strings.Contains(err.Error(), "streaming layer") || !strings.Contains(err.Error(), "target.gguf") {
			t.Fatalf("short %v: generation error %v, want one naming the layer and file", short, err)
		}
		st, err := e.Generate(context.Background(), req, func(string) error { return nil })
		if err != nil {
			t.Fatalf("the generation after a read error: %v", err)
		}
		if !slices.Equal(st.Tokens, ref.Tokens) {
			t.Fatalf("streamed tokens %v, resident %v", st.Tokens, ref.Tokens)
		}
		if st.Stream == nil || st.Stream.BytesRead < int64(st.GenTokens)*plan.StreamedBytes || st.Stream.ReadErrors != 0 {
			t.Fatalf("stream stats %+v", st.Stream)
		}
	}

	// A draft counts against the budget: LoadDraft plans again.
	draft := writeDraft(t, path, 2)
	if _, err := e.SetDRAMBudget(e.Model.WeightBytes(), weights.DefaultOptions()); err != nil || e.Stream != nil {
		t.Fatalf("100%%: streamer %v, %v", e.Stream, err)
	}
	if err := e.LoadDraft(draft); err != nil {
		t.Fatal(err)
	}
	if e.Stream == nil || e.DRAMPlan.DraftBytes != e.Draft.WeightBytes() {
		t.Fatalf("after LoadDraft: streamer %v, plan %+v", e.Stream, e.DRAMPlan)
	}
	sreq := req
	sreq.Spec = speculate.Config{Mode: speculate.ModeChain, DraftMax: 4}
	st, err := e.Generate(context.Background(), sreq, func(string) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(st.Tokens, ref.Tokens) || st.Stream == nil || st.Stream.BytesRead == 0 {
		t.Fatalf("speculative over streamed layers: tokens %v (want %v), stream %+v", st.Tokens, ref.Tokens, st.Stream)
	}
}

// TestFlashStreamed: flash mode over streamed layers, its trees sized by a
// cost model where reads dominate, gives the target's own greedy output.
func TestFlashStreamed(t *testing.T) {
	e, path := synthEngine(t)
	req := Request{Prompt: "Once upon a time", MaxTokens: 24, IgnoreEOS: true, Sampling: sample.Params{Temp: 0}}
	ref, err := e.Generate(context.Background(), req, func(string) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	draft := writeDraft(t, path, 2)
	if err := e.LoadDraft(draft); err != nil {
		t.Fatal(err)
	}
	if _, err := e.SetDRAMBudget(0, weights.Options{ReadAhead: 2}); err != nil || e.Stream == nil {
		t.Fatalf("0 budget: streamer %v, %v", e.Stream, err)
	}
	// A cost model of its own, where drafting is cheap against the
	// verify pass's reads, so that every step drafts a tree whatever this
	// machine's speed: a quick measurement on a loaded machine could make
	// trees not worth drafting at all.
	L := e.Model.Config.Layers
	cm := &cost.Model{Batches: []int{1, 64}, Layers: L, LayerBytes: 1 << 20, DiskBps: float64(1<<20) / 0.05,
		DraftPass: []float64{1e-4, 4e-4}, TargetLayer: []float64{1e-4, 64e-4}, TargetHead: []float64{1e-4, 8e-4},
		Direct: true, StreamedLayers: L}
	r := req
	r.Spec = speculate.Config{Mode: speculate.ModeFlash, Deps: speculate.Deps{Flash: &flash.Setup{Cost: cm}}}
	st, err := e.Generate(context.Background(), r, func(string) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(st.Tokens, ref.Tokens) {
		t.Fatalf("tokens %v, want %v", st.Tokens, ref.Tokens)
	}
	if st.Spec.MaxTree == 0 || st.Stream == nil || st.Stream.BytesRead == 0 {
		t.Fatalf("no tree drafted (largest %d) or nothing streamed (%+v)", st.Spec.MaxTree, st.Stream)
	}
}

// writeDraft writes a draft of the model at path (its first layers) into a
// temporary directory and returns its path.
func writeDraft(t *testing.T, path string, layers int) string {
	t.Helper()
	draft := filepath.Join(t.TempDir(), "draft.gguf")
	tf, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	err = synth.WriteDraft(draft, tf, layers)
	tf.Close()
	if err != nil {
		t.Fatal(err)
	}
	return draft
}
