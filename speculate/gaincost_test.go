package speculate

import (
	"math"
	"slices"
	"testing"

	"shade/cost"
	"shade/internal/testutil"
	"shade/sample"
)

func TestGainCostTreeSize(t *testing.T) {
	target := testutil.ConformanceModel(t, "stories260K.gguf")
	f16 := testutil.ConformanceModel(t, "stories260K-f16.gguf")
	L := target.Config.Layers
	cases := []struct {
		name       string
		cm         *cost.Model
		cap        int
		unbatched  bool
		minN, maxN int // bounds on the mean tree size
	}{
		// Verify rows are dear and reads free: only near-certain nodes pay.
		{"compute-bound", testutil.ToyCost(L, 0, 0, 1e-3, 1e-3), 64, false, 0, 6},
		// Every layer streamed at 50 ms: rows are nearly free, trees grow.
		{"io-bound", testutil.ToyCost(L, L, 50e-3, 1e-5, 1e-4), 64, false, 12, 64},
		{"io-bound, capped", testutil.ToyCost(L, L, 50e-3, 1e-5, 1e-4), 10, false, 5, 10},
		{"io-bound, unbatched", testutil.ToyCost(L, L, 50e-3, 1e-5, 1e-4), 64, true, 8, 64},
	}
	p := sample.Params{Temp: 0}
	for _, tc := range cases {
		dr, err := NewModelDrafter(f16, 256, p)
		if err != nil {
			t.Fatal(err)
		}
		ctx := slices.Clone(prompts[0])
		var sizes, passes []int
		for range 5 {
			var tr Tree
			if err := dr.DraftGainCost(ctx, GainCost{Cost: tc.cm, MaxNodes: tc.cap, Unbatched: tc.unbatched}, &tr); err != nil {
				t.Fatal(err)
			}
			if tr.Len() > tc.cap {
				t.Errorf("%s: tree of %d nodes over the cap %d", tc.name, tr.Len(), tc.cap)
			}
			for i, par := range tr.Parent {
				if par >= int32(i) {
					t.Fatalf("%s: node %d has parent %d (parents must come first)", tc.name, i, par)
				}
			}
			// Siblings come in rank order: the draft's probabilities fall.
			for par := int32(-1); par < int32(tr.Len()); par++ {
				kids := tr.Children(par, nil)
				for j := 1; j < len(kids); j++ {
					if dr.NodeProb(kids[j]) > dr.NodeProb(kids[j-1]) {
						t.Errorf("%s: siblings out of rank order", tc.name)
					}
				}
			}
			sizes = append(sizes, tr.Len())
			passes = append(passes, dr.DraftPasses())
			if err := dr.Accepted(ctx, &tr, nil); err != nil {
				t.Fatal(err)
			}
			ctx = append(ctx, 300)
		}
		mean := 0
		for _, s := range sizes {
			mean += s
		}
		mean /= len(sizes)
		if mean < tc.minN || mean > tc.maxN {
			t.Errorf("%s: mean tree size %d (sizes %v), want in [%d, %d]", tc.name, mean, sizes, tc.minN, tc.maxN)
		}
		t.Logf("%s: sizes %v, draft passes %v", tc.name, sizes, passes)
	}
}

// TestDepthFactorCarriesDown: depths no tree has reached yet take the
// correction of the deepest depth that has evidence, not a neutral 1 that
// would stop trees where they are.
func TestDepthFactorCarriesDown(t *testing.T) {
	var st RankStats
	if f := st.depthFactor(5); f != 1 {
		t.Fatalf("no evidence: factor %v, want 1", f)
	}
	// Depths 1–6 drafted: the per-node estimates said 0.5 at depth 6, and
	// twice as many were accepted as estimated.
	for d := 1; d <= 6; d++ {
		st.depthPred[d] = 10 * math.Pow(0.8, float64(d))
		st.depthAcc[d] = 2 * st.depthPred[d]
	}
	want := (st.depthAcc[6] + 2) / (st.depthPred[6] + 2)
	for _, d := range []int{6, 7, 12, maxDepthStats + 5} {
		if f := st.depthFactor(d); math.Abs(f-want) > 1e-12 {
			t.Errorf("depth %d: factor %v, want depth 6's %v", d, f, want)
		}
	}
	// Evidence of its own wins once a depth has it.
	st.depthPred[9], st.depthAcc[9] = 4, 4
	if f := st.depthFactor(9); f != 1 {
		t.Errorf("depth 9 with evidence: factor %v, want 1", f)
	}
	if f := st.depthFactor(8); math.Abs(f-want) > 1e-12 {
		t.Errorf("depth 8 between: factor %v, want depth 6's %v", f, want)
	}
}
