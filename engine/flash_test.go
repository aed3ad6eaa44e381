package engine

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"shade/calib"
	"shade/cost"
	"shade/flash"
	"shade/internal/testutil"
	"shade/sample"
	"shade/speculate"
)

// copyModel copies a conformance model into a temporary directory, so that
// calibrations stored beside it do not touch the shared pack.
var copyModel = testutil.CopyConformance

func TestFlashModeAndCalibrations(t *testing.T) {
	path := copyModel(t, "stories260K.gguf")
	e, err := Load(path, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := e.LoadDraft(filepath.Join(conformanceDir, "stories260K-f16.gguf")); err != nil {
		t.Fatal(err)
	}
	noop := func(string) error { return nil }
	req := Request{Prompt: "Once upon a time", MaxTokens: 40, Sampling: sample.Params{Temp: 0}}
	plain, err := e.Generate(context.Background(), req, noop)
	if err != nil {
		t.Fatal(err)
	}
	// Without stored calibrations: the cost model is measured, pruning off.
	r := req
	r.Spec = speculate.Config{Mode: speculate.ModeFlash}
	st, err := e.Generate(context.Background(), r, noop)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(st.Tokens, plain.Tokens) {
		t.Errorf("flash mode: output differs from plain decoding")
	}
	if ls, _ := e.FlashResources(nil); ls.CostSource != ProfileMeasured || ls.Pruner != nil {
		t.Errorf("setup without calibrations: %+v", ls)
	}
	if st.Spec.PruneNote == "" {
		t.Error("stats do not say pruning is off")
	}

	// Stored ones are used by a new engine: a cost model that makes every
	// layer stream slowly (big trees) and a predictor.
	cm := *e.flash.Cost
	cm.DiskBps, cm.LayerBytes = 1e6, 1e5
	if _, err := calib.Save(path, CalibCost, &cm); err != nil {
		t.Fatal(err)
	}
	p := &flash.Pruner{Layer: 3, Layers: 5, Version: 1, Mean: make([]float64, 6), Std: []float64{1, 1, 1, 1, 1, 1},
		Weights: []float64{10, 0, 0, 0, 0, 0}, Bias: -5, Threshold: 0.7, MaxFrac: 0.9, MinKeep: 1}
	if _, err := calib.Save(path, CalibPruner, p); err != nil {
		t.Fatal(err)
	}
	e2, err := Load(path, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer e2.Close()
	if err := e2.LoadDraft(filepath.Join(conformanceDir, "stories260K-f16.gguf")); err != nil {
		t.Fatal(err)
	}
	ls, err := e2.FlashResources(nil)
	if err != nil {
		t.Fatal(err)
	}
	if ls.CostSource != ProfileCalibrated || ls.Pruner == nil || ls.Cost.DiskBps != 1e6 {
		t.Fatalf("stored calibrations not used: %+v", ls)
	}
	// Stream every layer as far as the cost model knows.
	r.Spec = speculate.Config{Mode: speculate.ModeFlash, Deps: speculate.Deps{Flash: &flash.Setup{Cost: func() *cost.Model { c := *ls.Cost; c.StreamedLayers = c.Layers; return &c }()}}}
	st, err = e2.Generate(context.Background(), r, noop)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(st.Tokens, plain.Tokens) {
		t.Errorf("flash mode with pruning: output differs from plain decoding")
	}
	if st.Spec.PruneNote != "" || st.Spec.MaxTree < 8 {
		t.Errorf("with a stored predictor and streamed layers: note %q, largest tree %d", st.Spec.PruneNote, st.Spec.MaxTree)
	}
}

// TestShortGenerationTimed: a generation that ends within its first decode
// step still counts that step's time.
func TestShortGenerationTimed(t *testing.T) {
	e := load(t, "stories260K.gguf")
	if err := e.LoadDraft(filepath.Join(conformanceDir, "stories260K-f16.gguf")); err != nil {
		t.Fatal(err)
	}
	st, err := e.Generate(context.Background(), Request{Prompt: "Once upon a time", MaxTokens: 2, Sampling: sample.Params{Temp: 0},
		Spec: speculate.Config{Mode: speculate.ModeChain, DraftMax: 4}}, func(string) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if st.GenTokens != 2 || st.GenDuration <= 0 || st.GenTPS <= 0 {
		t.Errorf("2 tokens in one step: duration %v, %v tok/s", st.GenDuration, st.GenTPS)
	}
}

// TestDraftProfileStored: the acceptance a draft has learned against its
// target, saved beside the target, is where the next engine of the same
// pair starts; another draft does not start from it.
func TestDraftProfileStored(t *testing.T) {
	e, path := synthEngine(t)
	draft := writeDraft(t, path, 2)
	if err := e.LoadDraft(draft); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(e.DraftProfileNote, "none stored") {
		t.Fatalf("fresh pair: note %q", e.DraftProfileNote)
	}
	req := Request{Prompt: "Once upon a time", MaxTokens: 24, IgnoreEOS: true, Sampling: sample.Params{Temp: 0},
		Spec: speculate.Config{Mode: speculate.ModeChain, DraftMax: 4}}
	if _, err := e.Generate(context.Background(), req, func(string) error { return nil }); err != nil {
		t.Fatal(err)
	}
	learned := e.DraftRanks.Profile()
	if learned.Nodes() == 0 {
		t.Fatal("nothing learned from a speculative run")
	}
	if _, err := e.SaveDraftProfile(); err != nil {
		t.Fatal(err)
	}

	e2, err := Load(path, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer e2.Close()
	if err := e2.LoadDraft(draft); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(e2.DraftProfileNote, "stored") {
		t.Fatalf("same pair: note %q", e2.DraftProfileNote)
	}
	got := e2.DraftRanks.Profile()
	learned.Draft = ""
	if got != learned {
		t.Fatalf("the next engine starts from\n%+v\nnot what was saved\n%+v", got, learned)
	}
	// Another draft (three layers, not two) starts from nothing.
	if err := e2.LoadDraft(writeDraft(t, path, 3)); err != nil {
		t.Fatal(err)
	}
	if e2.DraftRanks.Profile().Nodes() != 0 || !strings.Contains(e2.DraftProfileNote, "none stored for this draft") {
		t.Fatalf("another draft: note %q, %v nodes", e2.DraftProfileNote, e2.DraftRanks.Profile().Nodes())
	}
}
