package speculate

import (
	"slices"
	"testing"
	"time"

	"shade/internal/testutil"
	"shade/model"
	"shade/sample"
)

// scriptGovernor preempts drafts at fixed layer counts and asks for a fixed
// verify batch; it records what the decoder told it.
type scriptGovernor struct {
	preemptAfter int // preempt once this many draft layers ran in a step (0: never)
	rows         int // VerifyRows answer
	sleep        time.Duration

	draftLayers, verifyLayers, steps, tokens int
	inStep                                   int
}

func (g *scriptGovernor) DraftLayer(layer, rows int, took time.Duration) bool {
	g.draftLayers++
	g.inStep++
	return g.preemptAfter > 0 && g.inStep >= g.preemptAfter
}

func (g *scriptGovernor) VerifyRows(drafted int) int { return g.rows }

func (g *scriptGovernor) VerifyLayer(layer, rows int, took time.Duration) time.Duration {
	g.verifyLayers++
	return g.sleep
}

func (g *scriptGovernor) StepDone(tokens int, took time.Duration) time.Duration {
	g.steps++
	g.tokens += tokens
	g.inStep = 0
	return 0
}

// TestGovernedLossless: preempted drafts, n-gram filling and sleeps change
// how the output is found, never what it is.
func TestGovernedLossless(t *testing.T) {
	target := testutil.ConformanceModel(t, "stories260K.gguf")
	layers := target.Config.Layers
	drafts := map[string]*model.Model{"self": target, "random": randomDraft(t)}
	// preemptAfter counts draft layers: the draft's catch-up pass, then one
	// pass per level; it is scaled to each draft's depth below.
	govs := []scriptGovernor{
		{preemptAfter: 1, rows: 8},               // preempted while catching up: filling only
		{preemptAfter: 2, rows: 16},              // preempted in the first expansion
		{preemptAfter: 4, rows: 12},              // a few levels, then preempted
		{rows: 24},                               // never preempted, always filled
		{preemptAfter: 2, rows: 0},               // preempted, no filling
		{rows: 8, sleep: 100 * time.Microsecond}, // micro-sleeps
	}
	greedy := sample.Params{Temp: 0}
	for pi, prompt := range prompts[:2] {
		want, _ := generate(t, target, nil, Config{Mode: ModeOff}, greedy, prompt, 48)
		for name, draft := range drafts {
			for gi := range govs {
				for _, mode := range []Mode{ModeChain, ModeTree, ModeAuto} {
					g := govs[gi]
					if g.preemptAfter > 1 {
						g.preemptAfter = (g.preemptAfter-1)*draft.Config.Layers + 1
					}
					cfg := Config{Mode: mode, DraftMax: 6, Deps: Deps{Governor: &g}}
					got, st := generate(t, target, draft, cfg, greedy, prompt, 48)
					if !slices.Equal(got, want) {
						t.Errorf("prompt %d, draft %s, governor %d, %v: output differs from plain greedy\n got %v\nwant %v", pi, name, gi, mode, got, want)
					}
					if g.steps != st.Steps || g.tokens != st.Generated {
						t.Errorf("governor %d: told of %d steps, %d tokens; stats say %d, %d", gi, g.steps, g.tokens, st.Steps, st.Generated)
					}
					if g.verifyLayers%layers != 0 || g.verifyLayers < st.Steps*layers {
						t.Errorf("governor %d: %d verify-layer calls for %d steps of %d layers", gi, g.verifyLayers, st.Steps, layers)
					}
					if mode == ModeChain && g.preemptAfter > 0 && st.Preempted == 0 {
						t.Errorf("governor %d, %v: no draft preempted", gi, mode)
					}
					if g.rows > 1 && mode == ModeChain && g.preemptAfter == 1 && st.Filled == 0 {
						t.Errorf("governor %d: nothing filled", gi)
					}
					if g.sleep > 0 && st.Sleep < time.Duration(g.verifyLayers)*g.sleep/2 {
						t.Errorf("governor %d: slept %v over %d layers", gi, st.Sleep, g.verifyLayers)
					}
				}
			}
		}
	}
	// Plain decoding still reports every target layer and step.
	g := scriptGovernor{}
	generate(t, target, nil, Config{Mode: ModeOff, Deps: Deps{Governor: &g}}, greedy, prompts[0], 10)
	if g.steps == 0 || g.verifyLayers < g.steps*layers {
		t.Errorf("plain decoding: %d steps, %d verify-layer calls", g.steps, g.verifyLayers)
	}
}

func TestNgramContinue(t *testing.T) {
	g := NewNgram(2, 3)
	ctx := []int32{5, 6, 7, 8, 9, 5, 6}
	tests := []struct {
		extra []int32
		k     int
		want  []int32
	}{
		{nil, 3, []int32{7, 8, 9}},           // "5 6" seen before: 7 8 9 followed
		{[]int32{7}, 2, []int32{8, 9}},       // "5 6 7" → 8 9
		{[]int32{7, 8, 9}, 4, []int32{5, 6}}, // "8 9" → 5 6 (the end of ctx)
		{[]int32{1}, 3, nil},                 // "6 1" never seen
		{nil, 0, nil},
	}
	for _, tc := range tests {
		if got := g.Continue(ctx, tc.extra, tc.k); !slices.Equal(got, tc.want) {
			t.Errorf("Continue(%v, %v, %d) = %v, want %v", ctx, tc.extra, tc.k, got, tc.want)
		}
	}
}
