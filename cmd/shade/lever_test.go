package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"shade/calib"
	"shade/cost"
	"shade/engine"
	"shade/flash"
	"shade/speculate"
)

// copyShared copies a shared test model into a temporary directory, so
// that calibrations stored beside it stay out of the shared pack.
func copyShared(t *testing.T, rel string) string {
	t.Helper()
	data, err := os.ReadFile(sharedFile(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), filepath.Base(rel))
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCalibrateRoundTrip: calibrate stores a cost model and a predictor
// beside the model; run --spec lever then uses them (and says so).
func TestCalibrateRoundTrip(t *testing.T) {
	model := copyShared(t, "conformance/stories260K.gguf")
	draft := sharedFile(t, "conformance/stories260K-f16.gguf")
	code, out, errOut := shade(t, "calibrate", "-m", model, "--draft", draft, "--batches", "1,4,16", "--cost-layers", "2", "--reps", "1")
	if code != 0 {
		t.Fatalf("calibrate: exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "target layer") || !strings.Contains(out, "saved to") {
		t.Errorf("calibrate output %q", out)
	}
	var m cost.Model
	if ok, err := calib.Load(model, engine.CalibCost, &m); !ok || err != nil || m.Validate() != nil || len(m.Batches) != 3 || m.Draft(1) <= 0 {
		t.Fatalf("stored cost model: %v %v %+v", ok, err, m)
	}
	// 160 tokens a prompt: the trees follow the cost model just measured,
	// and one measured beside other heavy processes once made steps of 40
	// tokens, too few (11 nodes from 48 tokens a prompt) to train on.
	code, out, errOut = shade(t, "calibrate", "-m", model, "--draft", draft, "--pruner", "--pruner-tokens", "160")
	if code != 0 {
		t.Fatalf("calibrate --pruner: exit %d: %s", code, errOut)
	}
	for _, want := range []string{"precision", "recall", "held out", "saved to", "acceptance profile of the draft"} {
		if !strings.Contains(out, want) {
			t.Errorf("calibrate --pruner output lacks %q: %q", want, out)
		}
	}
	var p flash.Pruner
	if ok, err := calib.Load(model, engine.CalibPruner, &p); !ok || err != nil || p.Validate(m.Layers) != nil {
		t.Fatalf("stored predictor: %v %v %+v", ok, err, p)
	}
	code, _, errOut = shade(t, "run", "-m", model, "--draft", draft, "--spec", "lever", "-p", "Once upon a time", "-n", "24", "--temp", "0", "--stats")
	if code != 0 {
		t.Fatalf("run --spec lever: exit %d: %s", code, errOut)
	}
	var prof speculate.RankProfile
	if ok, err := calib.Load(model, engine.CalibAcceptance, &prof); !ok || err != nil || prof.Validate() != nil || prof.Nodes() == 0 || prof.Draft == "" {
		t.Fatalf("stored acceptance profile: %v %v %+v", ok, err, prof)
	}
	if !strings.Contains(errOut, "cost model from the "+engine.ProfileCalibrated) || !strings.Contains(errOut, "pruning predictor: stored") ||
		!strings.Contains(errOut, "acceptance profile: stored") || !strings.Contains(errOut, "lever: tree") {
		t.Errorf("run --spec lever stderr %q", errOut)
	}
}

func TestLeverFlagErrors(t *testing.T) {
	model := sharedFile(t, "conformance/stories260K.gguf")
	for _, args := range [][]string{
		{"run", "-m", model, "--spec", "lever", "-p", "x"}, // no draft
		{"run", "-m", model, "--draft", model, "--spec", "lever", "--max-nodes", "0", "-p", "x"},
		{"run", "-m", model, "--draft", model, "--spec", "lever", "--prune-layer", "-1", "-p", "x"},
		{"calibrate", "-m", model, "--pruner"}, // no draft
		{"calibrate", "-m", model, "--batches", "0,2"},
		{"bench", "flash", "-m", model},
		{"bench", "flash", "-m", model, "--draft", model, "--budgets", "50,120"},
	} {
		if code, _, _ := shade(t, args...); code == 0 {
			t.Errorf("%v: exit 0", args)
		}
	}
}

func TestBenchFlashSmall(t *testing.T) {
	model := copyShared(t, "conformance/stories260K.gguf")
	draft := sharedFile(t, "conformance/stories260K-f16.gguf")
	svg := filepath.Join(t.TempDir(), "flash.svg")
	code, out, errOut := shade(t, "bench", "flash", "-m", model, "--draft", draft, "--budgets", "0,100", "--ablation", "50", "-n", "8", "--svg", svg)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"flash-ar", "chain", "tree", "lever", "ablation at 50%", "no gain-cost", "no pruning", "no lazy head", "no batch draft"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "false") {
		t.Errorf("a mode's output differs from Flash-AR's:\n%s", out)
	}
	data, err := os.ReadFile(svg)
	if err != nil || !strings.HasPrefix(string(data), "<svg") || !strings.Contains(string(data), "polyline") {
		t.Errorf("plot: %v, %.80q", err, data)
	}
}
