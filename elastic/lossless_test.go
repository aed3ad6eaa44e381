package elastic

import (
	"slices"
	"testing"
	"time"

	"shade/internal/testutil"
	"shade/model"
	"shade/sample"
	"shade/speculate"
)

// injected drives a Governor with made-up draft-layer latencies: spells of
// contention (CS 0.6) and quiet (CS 0) by reading count, so preemption,
// filling and sleeps all happen on a fast test model.
type injected struct {
	*Governor
	reads int
	spell int
}

func (j *injected) DraftLayer(layer, rows int, took time.Duration) bool {
	j.reads++
	lat := time.Millisecond
	if (j.reads/j.spell)%2 == 1 {
		lat = 1600 * time.Microsecond
	}
	return j.Governor.DraftLayer(layer, 1, lat)
}

func (j *injected) VerifyLayer(layer, rows int, took time.Duration) time.Duration {
	// Layers of a fast test model take microseconds: report 2 ms so the
	// sleep schedule is exercised, and sleep only a little.
	return j.Governor.VerifyLayer(layer, rows, 2*time.Millisecond) / 20
}

func generate(t *testing.T, target, draft *model.Model, cfg speculate.Config, prompt []int32, n int) ([]int32, speculate.Stats) {
	t.Helper()
	st, err := target.NewState(256)
	if err != nil {
		t.Fatal(err)
	}
	sm, _ := sample.New(sample.Params{Temp: 0})
	var dr *speculate.ModelDrafter
	if draft != nil && cfg.Mode != speculate.ModeOff {
		if dr, err = speculate.NewModelDrafter(draft, 256, sample.Params{Temp: 0}); err != nil {
			t.Fatal(err)
		}
	}
	d, err := speculate.NewDecoder(st, sm, dr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return testutil.Decode(t, d, prompt, n), d.Stats()
}

// TestElasticLossless: greedy output under the elastic governor —
// preempted drafts, n-gram filling from the multi-source cache, sleeps —
// is the target's own.
func TestElasticLossless(t *testing.T) {
	target := testutil.ConformanceModel(t, "stories260K.gguf")
	prompts := [][]int32{{1, 403, 407, 261, 378}, {1, 297, 285, 400}}
	for pi, prompt := range prompts {
		want, _ := generate(t, target, nil, speculate.Config{Mode: speculate.ModeOff}, prompt, 64)
		for _, pol := range []Policy{Balanced, UIFirst, Off} {
			for _, spell := range []int{3, 40} {
				for _, mode := range []speculate.Mode{speculate.ModeChain, speculate.ModeTree, speculate.ModeAuto} {
					g := &injected{Governor: New(Config{Policy: pol, Baselines: flatBaselines(target.Config.Layers, 1e6), Hysteresis: 2}), spell: spell}
					got, st := generate(t, target, target, speculate.Config{Mode: mode, DraftMax: 6, Deps: speculate.Deps{Governor: g}}, prompt, 64)
					if !slices.Equal(got, want) {
						t.Fatalf("prompt %d, %v, spell %d, %v: output differs from plain greedy\n got %v\nwant %v", pi, pol, spell, mode, got, want)
					}
					gs, _ := st.Governor.(*Stats)
					if gs == nil || gs.Policy != pol.String() {
						t.Fatalf("governor stats missing or wrong: %+v", gs)
					}
					if pol != Off && mode == speculate.ModeChain && (st.Preempted == 0 || st.Filled == 0 || gs.Sleeps == 0) {
						t.Errorf("%v, spell %d: preempted %d, filled %d, sleeps %d: an actuator never acted", pol, spell, st.Preempted, st.Filled, gs.Sleeps)
					}
					if pol == Off && (st.Preempted != 0 || st.Filled != 0 || gs.Sleeps != 0) {
						t.Errorf("policy off acted: %+v", st)
					}
				}
			}
		}
	}
}
