package calibrate

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"shade/calib"
	"shade/cost"
	"shade/elastic"
	"shade/engine"
	"shade/flash"
	"shade/quant"
	"shade/speculate"
)

const conformanceDir = "../../shared/testdata/conformance"

// open opens a copy of the stories model (calibrations are stored beside
// it) with its F16 twin as the draft, or without a draft.
func open(t *testing.T, withDraft bool, o engine.Options) *engine.Engine {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(conformanceDir, "stories260K.gguf"))
	if err != nil {
		t.Skipf("the shared conformance pack is needed: %v", err)
	}
	path := filepath.Join(t.TempDir(), "stories260K.gguf")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if withDraft {
		o.Draft = filepath.Join(conformanceDir, "stories260K-f16.gguf")
	}
	o.Threads = 1
	e, err := engine.Open(context.Background(), path, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// reopen opens e's model and draft again in a new engine.
func reopen(t *testing.T, e *engine.Engine, o engine.Options) *engine.Engine {
	t.Helper()
	o.Draft, o.Threads = e.DraftPath, 1
	e2, err := engine.Open(context.Background(), e.Path, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e2.Close() })
	return e2
}

func TestCost(t *testing.T) {
	e := open(t, true, engine.Options{NoRepack: true})
	r, err := Cost(e, cost.Options{Batches: []int{1, 4}, Layers: 2, Reps: 1})
	if err != nil {
		t.Fatal(err)
	}
	var m cost.Model
	if ok, err := calib.Load(e.Path, calib.Cost, &m); !ok || err != nil || m.Validate() != nil || m.Draft(1) <= 0 || r.Path != calib.Path(e.Path, calib.Cost) {
		t.Fatalf("stored: %v %v %+v at %s", ok, err, m, r.Path)
	}
	// One draft pass is its layers and its head: the profile's draft
	// layers add up to less than the pass, and every layer is timed.
	if len(m.DraftLayers) != e.Draft.Config.Layers || m.DraftModel == "" {
		t.Fatalf("draft layers %v of draft %q", m.DraftLayers, m.DraftModel)
	}
	for i := range m.Batches {
		var sum float64
		for _, l := range m.DraftLayers {
			sum += l[i]
		}
		if !(sum > 0 && sum <= m.DraftPass[i]) {
			t.Errorf("batch %d: draft layers sum to %v s, the pass is %v s", m.Batches[i], sum, m.DraftPass[i])
		}
	}
	// The engine uses what was stored, for this draft only.
	if p, why, err := reopen(t, e, engine.Options{}).StoredProfile(); p == nil || err != nil {
		t.Fatalf("stored profile not used: %q %v", why, err)
	}
	// Measured by another build's kernels: not used, and the reason says so.
	data, err := os.ReadFile(r.Path)
	if err != nil {
		t.Fatal(err)
	}
	rev := quant.KernelRevision()
	if err := os.WriteFile(r.Path, []byte(strings.ReplaceAll(string(data), rev, "0123456789abcdef")), 0o644); err != nil {
		t.Fatal(err)
	}
	if p, why, err := reopen(t, e, engine.Options{}).StoredProfile(); p != nil || err != nil || !strings.Contains(why, "another build's kernels") {
		t.Fatalf("another build's profile: %v, %q, %v", p != nil, why, err)
	}
	if err := os.WriteFile(r.Path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	streamed := open(t, false, engine.Options{DRAMBudget: "0%"})
	if _, err := Cost(streamed, cost.Options{Batches: []int{1}, Layers: 1, Reps: 1}); err == nil || !strings.Contains(err.Error(), "streamed") {
		t.Errorf("a cost model timed over streamed layers: %v", err)
	}
}

// Without the relay experiment the gains are the defaults, and say so;
// what is stored is what a governor of the pair then starts from.
func TestContention(t *testing.T) {
	e := open(t, true, engine.Options{})
	r, err := Contention(context.Background(), e, ContentionOptions{Passes: 2, CPU: -1})
	if err != nil {
		t.Fatal(err)
	}
	if r.Relay != nil || r.Calibration.Gains != elastic.DefaultGains || !strings.Contains(r.Calibration.GainsFrom, "skipped") {
		t.Errorf("calibration %+v, relay %+v", r.Calibration, r.Relay)
	}
	if r.ProfilePath != calib.Path(e.Path, calib.Cost) || len(r.Profile.DraftLayers) != e.Draft.Config.Layers {
		t.Fatalf("without a stored device profile, Contention measures and stores one: %q, %+v", r.ProfilePath, r.Profile)
	}
	// A second engine of the pair starts its governors from what was
	// stored: the profile's draft layers, the calibration's gains.
	again := reopen(t, e, engine.Options{})
	st, err := again.ElasticStart(context.Background())
	if err != nil || st.Source != engine.ProfileCalibrated || len(st.Baselines.NS) != e.Draft.Config.Layers || st.Gains != elastic.DefaultGains {
		t.Fatalf("start from the stored profile and calibration: %v, %+v", err, st)
	}
	want, _ := elastic.BaselinesFrom(r.Profile)
	if fmt.Sprint(st.Baselines) != fmt.Sprint(want) {
		t.Errorf("baselines %v, want the stored profile's %v", st.Baselines, want)
	}
	// With the profile stored, a second calibration measures nothing again.
	r2, err := Contention(context.Background(), again, ContentionOptions{Passes: 2, CPU: -1})
	if err != nil || r2.ProfilePath != "" {
		t.Fatalf("second calibration: %v, profile re-measured into %q", err, r2.ProfilePath)
	}
	if _, err := Contention(context.Background(), open(t, false, engine.Options{}), ContentionOptions{}); err == nil {
		t.Error("contention calibrated without a draft")
	}
	if _, err := Contention(context.Background(), e, ContentionOptions{Passes: -1, CPU: -1}); err == nil {
		t.Error("negative passes accepted")
	}
}

func TestPruner(t *testing.T) {
	e := open(t, true, engine.Options{Spec: speculate.ModeFlash})
	r, err := Pruner(context.Background(), e, PrunerOptions{Tokens: 48})
	if err != nil {
		t.Fatal(err)
	}
	var p flash.Pruner
	if ok, err := calib.Load(e.Path, calib.Pruner, &p); !ok || err != nil || p.Validate(r.Layers) != nil || r.Nodes == 0 {
		t.Fatalf("stored predictor: %v %v %+v (%d nodes)", ok, err, p, r.Nodes)
	}
	var prof speculate.RankProfile
	if ok, err := calib.Load(e.Path, calib.Acceptance, &prof); !ok || err != nil || prof.Nodes() == 0 || r.ProfilePath == "" {
		t.Fatalf("stored acceptance profile: %v %v %+v", ok, err, prof)
	}
	for _, o := range []PrunerOptions{{Layer: -1}, {Layer: 99}, {Recall: 1.5}} {
		if _, err := Pruner(context.Background(), e, o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
	if _, err := Pruner(context.Background(), open(t, false, engine.Options{}), PrunerOptions{}); err == nil {
		t.Error("a pruner trained without a draft")
	}
}
