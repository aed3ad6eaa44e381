package speculate

import (
	"math"
	"testing"

	"shade/cost"
	"shade/internal/testutil"
	"shade/sample"
)

// freshGainCost drafts gain-cost trees under a fixed cost model, with the
// drafter's acceptance statistics forgotten before every step: a node's
// estimated acceptance is then the prior, the draft's probability of it,
// so a drafter scoring draws by the token drawn admits likely draws and
// drops unlikely ones. Nothing here depends on measured time.
type freshGainCost struct {
	plain
	cm *cost.Model
}

func (g *freshGainCost) Draft(s *Step) (DraftKind, error) {
	s.Drafter.ranks, s.Drafter.lastRate = new(RankStats), 0
	return DraftModel, s.Drafter.DraftGainCost(s.Context, GainCost{Cost: g.cm, MaxNodes: 12}, s.Tree)
}

// prunesUnlikely drafts a small tree and drops from verification every
// node the draft gave less than half its probability: pruning that looks
// at the tokens drawn, as flash mode's predictor does.
type prunesUnlikely struct{ modelDraft }

func (p *prunesUnlikely) Verify(s *Step) error {
	if err := s.Forward(s.Batch); err != nil {
		return err
	}
	s.Pruned = make([]bool, s.Tree.Len())
	for i := range s.Pruned {
		s.Pruned[i] = s.Drafter.NodeProb(int32(i)) < 0.5
	}
	return nil
}

type strategyMaker struct{ s Strategy }

func (m strategyMaker) Make(Config) (Strategy, error) { return m.s, nil }

// TestDrawChoiceLossless: which sampled draws a tree keeps, and which of
// its nodes a strategy prunes, may not depend on the tokens drawn without
// biasing the output, however the choice is made. Under the close draft
// the first token was 432 in 2946 of 3000 samples (2576 expected) when the
// gain-cost tree admitted draws by their draft probability, and far too
// often too when pruned draws dropped out of verification.
func TestDrawChoiceLossless(t *testing.T) {
	if testing.Short() {
		t.Skip("thousands of samples: skipped with -short")
	}
	target := testutil.ConformanceModel(t, "stories260K.gguf")
	f16 := testutil.ConformanceModel(t, "stories260K-f16.gguf")
	L := target.Config.Layers
	p := sample.Params{Temp: 1.5, Seed: 44}
	prompt := prompts[0]
	want := testutil.FirstTokenDistribution(t, target, p, prompt)
	const n = 2000
	cases := []struct {
		name string
		s    Strategy
	}{
		{"gain-cost, fresh statistics", &freshGainCost{cm: testutil.ToyCost(L, 0, 0, 1e-3, 1e-3)}},
		{"pruned by draft probability", &prunesUnlikely{modelDraft{shape: Shape{Width: 3, Depth: 2, Max: 6}}}},
	}
	for _, tc := range cases {
		counts, st := firstTokenCounts(t, target, f16, Config{Mode: ModeFlash, Deps: Deps{Flash: strategyMaker{tc.s}}}, p, prompt, n)
		chi2, df := testutil.ChiSquare(counts, want, n)
		if limit := testutil.ChiSquareCritical(df); chi2 > limit {
			t.Errorf("%s: chi-square %.1f over %d degrees of freedom exceeds %.1f (p = 0.001)", tc.name, chi2, df, limit)
		} else {
			t.Logf("%s: chi-square %.1f, df %d, limit %.1f; %d drafted", tc.name, chi2, df, limit, st.Drafted)
		}
		if st.Drafted == 0 {
			t.Errorf("%s: nothing drafted", tc.name)
		}
	}
}

// TestAcceptDraw: the acceptance expected of a draw is accept averaged
// over the draw's distribution.
func TestAcceptDraw(t *testing.T) {
	var st RankStats
	for i := range st.drafted {
		st.drafted[i], st.accepted[i] = float64(10+i), float64(7-i/3)
	}
	for r := range st.probDrafted {
		for b := range st.probDrafted[r] {
			st.probDrafted[r][b], st.probAccepted[r][b] = float64(3+b+r), float64(b)/2
		}
	}
	qs := []float64{0.42, 0.3, 0.15, 0.08, 0.05}
	for rank := range 3 {
		var mass, sq [probBins]float64
		var want float64
		for _, q := range qs {
			mass[probBin(q)] += q
			sq[probBin(q)] += q * q
			want += q * st.accept(q, rank)
		}
		if got := st.acceptDraw(&mass, &sq, rank); math.Abs(got-want) > 1e-12 {
			t.Errorf("rank %d: %v, want %v", rank, got, want)
		}
	}
}
