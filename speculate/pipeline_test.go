package speculate

import (
	"math/rand/v2"
	"slices"
	"testing"

	"shade/internal/testutil"
	"shade/sample"
)

// meddler is a strategy that does what a strategy may to a step: it drafts
// a tree, drops random nodes from verification and asks for the head rows
// of its choosing (all of them, none, or a random few).
type meddler struct {
	modelDraft
	rng      *rand.Rand
	observed int
}

func (m *meddler) Verify(s *Step) error {
	if err := s.Forward(s.Batch); err != nil {
		return err
	}
	if s.Tree.Len() > 0 && m.rng.IntN(2) == 0 {
		s.Pruned = make([]bool, s.Tree.Len())
		for i := range s.Pruned {
			s.Pruned[i] = m.rng.IntN(3) == 0
		}
	}
	return nil
}

func (m *meddler) Head(s *Step) []int {
	var rows []int
	for r := range len(s.Batch.Tokens) {
		if m.rng.IntN(2) == 0 {
			rows = append(rows, r)
		}
	}
	return rows
}

func (m *meddler) Observe(s *Step) {
	if len(s.Path) > s.Tree.Len() || s.StepTime < s.DraftTime {
		panic("step results out of shape")
	}
	m.observed++
}

// meddlerMaker gives flash mode's slot a meddler.
type meddlerMaker struct{ last *meddler }

func (mm *meddlerMaker) Make(cfg Config) (Strategy, error) {
	mm.last = &meddler{modelDraft: modelDraft{shape: Shape{Width: 3, Depth: 4, Max: 10}}, rng: rand.New(rand.NewPCG(1, 2))}
	return mm.last, nil
}

// TestPipelineLossless: whatever a strategy prunes and whichever head rows
// it asks for, greedy output is the target's own: accepting and committing
// are the decoder's.
func TestPipelineLossless(t *testing.T) {
	target := testutil.ConformanceModel(t, "stories260K.gguf")
	f16 := testutil.ConformanceModel(t, "stories260K-f16.gguf")
	greedy := sample.Params{Temp: 0}
	for pi, prompt := range prompts {
		want, _ := generate(t, target, nil, Config{}, greedy, prompt, 50)
		mm := &meddlerMaker{}
		got, st := generate(t, target, f16, Config{Mode: ModeFlash, Deps: Deps{Flash: mm}}, greedy, prompt, 50)
		if !slices.Equal(got, want) {
			t.Errorf("prompt %d: output differs from plain greedy\n got %v\nwant %v", pi, got, want)
		}
		if mm.last.observed != st.Steps || st.Drafted == 0 {
			t.Errorf("prompt %d: %d steps observed of %d, %d drafted", pi, mm.last.observed, st.Steps, st.Drafted)
		}
	}
	if _, err := NewDecoder(nil, nil, nil, Config{Mode: ModeFlash}); err == nil {
		t.Error("flash mode without a draft accepted")
	}
}
