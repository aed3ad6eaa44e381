package engine

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"shade/calib"
	"shade/elastic"
	"shade/sample"
	"shade/speculate"
	"shade/weights"
)

func TestOpenOptionErrors(t *testing.T) {
	path := copyModel(t, "stories260K.gguf")
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"lever without a draft", Options{Spec: speculate.ModeFlash}, "needs a draft"},
		{"chain without a draft", Options{Spec: speculate.ModeChain}, "needs a draft"},
		{"policy without a draft", Options{Policy: elastic.Balanced}, "contention sensor"},
		{"policy with nothing drafting", Options{Draft: path, Spec: speculate.ModeNgram, Policy: elastic.UIFirst}, "contention sensor"},
		{"policy with speculation off", Options{Draft: path, Spec: speculate.ModeOff, Policy: elastic.Balanced}, "contention sensor"},
		{"a budget that is no size", Options{DRAMBudget: "lots"}, "dram budget"},
		{"a budget over 100%", Options{DRAMBudget: "101%"}, "dram budget"},
		{"read-ahead out of range", Options{DRAMBudget: "50%", Stream: streamOpts(65)}, "read-ahead"},
		{"negative context", Options{Ctx: -1}, "negative"},
		{"a context the model was not trained for", Options{Ctx: 1 << 20}, "context too large"},
		{"a draft that is no model", Options{Draft: path + ".missing"}, "missing"},
	} {
		e, err := Open(context.Background(), path, tc.o)
		if err == nil {
			e.Close()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
}

// Open runs the set-up in its order: Lever's calibration before layers
// stream, the budget, the governor, the panels; and says what it did.
func TestOpenSetUp(t *testing.T) {
	path := copyModel(t, "stories260K.gguf")
	draft := filepath.Join(conformanceDir, "stories260K-f16.gguf")
	var notes []string
	e, err := Open(context.Background(), path, Options{Threads: 2, Draft: draft, Spec: speculate.ModeFlash, DRAMBudget: "0%",
		Policy: elastic.Balanced, Note: func(s string) { notes = append(notes, s) }})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	all := strings.Join(notes, "\n")
	for _, want := range []string{"flash: cost model from the " + ProfileMeasured, "streamed", "elastic balanced: baselines from the " + ProfileMeasured, "no contention calibration"} {
		if !strings.Contains(all, want) {
			t.Errorf("notes lack %q:\n%s", want, all)
		}
	}
	if i, j := strings.Index(all, "flash:"), strings.Index(all, "streamed"); i > j {
		t.Errorf("the budget was set before Lever's cost model was measured:\n%s", all)
	}
	if e.Stream == nil || e.DRAMPlan == nil || len(e.DRAMPlan.Streamed) != e.Model.Config.Layers {
		t.Fatalf("budget 0%%: plan %+v", e.DRAMPlan)
	}
	if e.Governor == nil || e.Governor.Policy() != elastic.Balanced || e.Draft == nil || e.DraftPath != draft {
		t.Fatalf("governor %v, draft %v", e.Governor, e.DraftPath)
	}
	cfg := e.Governed(speculate.Config{Mode: speculate.ModeFlash})
	if cfg.Deps.Governor == nil {
		t.Fatal("Governed left the governor out")
	}
	st, err := e.Generate(context.Background(), Request{Prompt: "Once upon a time", MaxTokens: 12, Sampling: sample.Params{Temp: 0}, Spec: cfg}, func(string) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	plain, err := Open(context.Background(), path, Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if plain.Governor != nil || plain.Stream != nil {
		t.Errorf("the zero options built a governor (%v) or a streamer", plain.Governor)
	}
	if cfg := plain.Governed(speculate.Config{}); cfg.Deps.Governor != nil {
		t.Error("Governed of an engine without a governor set one (a nil pointer in an interface)")
	}
	ref, err := plain.Generate(context.Background(), Request{Prompt: "Once upon a time", MaxTokens: 12, Sampling: sample.Params{Temp: 0}}, func(string) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(st.Tokens, ref.Tokens) {
		t.Errorf("set up for lever, streamed and governed: %v; plain: %v", st.Tokens, ref.Tokens)
	}
}

// Switchable builds a governor that starts off, when something drafts
// with the model; not otherwise.
func TestOpenSwitchable(t *testing.T) {
	path := copyModel(t, "stories260K.gguf")
	draft := filepath.Join(conformanceDir, "stories260K-f16.gguf")
	for _, tc := range []struct {
		draft    string
		mode     speculate.Mode
		governed bool
	}{{draft, speculate.ModeChain, true}, {draft, speculate.ModeAuto, true}, {draft, speculate.ModeNgram, false}, {"", speculate.ModeOff, false}} {
		e, err := Open(context.Background(), path, Options{Threads: 1, Draft: tc.draft, Spec: tc.mode, Switchable: true})
		if err != nil {
			t.Fatal(err)
		}
		if (e.Governor != nil) != tc.governed || (e.Governor != nil && e.Governor.Policy() != elastic.Off) {
			t.Errorf("draft %q, %v: governor %v, want one (off): %v", tc.draft, tc.mode, e.Governor, tc.governed)
		}
		if e.Governor != nil {
			st1, err := e.ElasticStart(context.Background())
			st2, _ := e.ElasticStart(context.Background())
			if err != nil || st1 != st2 || st1.Source != ProfileMeasured {
				t.Errorf("ElasticStart: %v, measured twice: %v, source %q", err, st1 != st2, st1.Source)
			}
		}
		e.Close()
	}
}

// The kinds the engine reads are declared in calib's table, so their keys
// are made the way the calibration that stored them made them.
func TestCalibKindsDeclared(t *testing.T) {
	for _, k := range []string{CalibCost, CalibPruner, CalibAcceptance, elastic.CalibKind} {
		if _, err := calib.Kind(k); err != nil {
			t.Error(err)
		}
	}
}

func streamOpts(readAhead int) weights.Options { return weights.Options{ReadAhead: readAhead} }
