package spec

import (
	"slices"
	"testing"

	"shade/internal/testutil"
	"shade/sample"
)

// TestPreDrafterAdoptsContext: a pre-drafter that takes over the KV
// entries of the drafter holding a tree (context, catch-up rows and the
// main path's rows) computes the same logits for the next token as a
// drafter that ran the whole context itself, bit for bit.
func TestPreDrafterAdoptsContext(t *testing.T) {
	target := testutil.ConformanceModel(t, "stories260K.gguf")
	f16 := testutil.ConformanceModel(t, "stories260K-f16.gguf")
	L := target.Config.Layers
	greedy := sample.Params{Temp: 0}
	cm := toyCost(L, L, 20e-3, 1e-5, 1e-4)
	for pi, prompt := range prompts {
		src, err := NewModelDrafter(f16, 256, greedy)
		if err != nil {
			t.Fatal(err)
		}
		pre, err := src.twin(nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx := slices.Clone(prompt)
		for step := range 3 {
			var tr Tree
			if err := src.DraftGainCost(ctx, GainCost{Cost: cm, MaxNodes: 24}, &tr); err != nil {
				t.Fatal(err)
			}
			if tr.Len() == 0 {
				t.Fatalf("prompt %d step %d: empty tree", pi, step)
			}
			// The main path: first children all the way down.
			var main []int32
			for cur := int32(-1); ; {
				kids := tr.Children(cur, nil)
				if len(kids) == 0 {
					break
				}
				main = append(main, kids[0])
				cur = kids[0]
			}
			if err := pre.adopt(src, ctx, main, &tr); err != nil {
				t.Fatal(err)
			}
			ran := 0 // main-path nodes the drafter ran (their entries are copied)
			for ran < len(main) && src.fed[main[ran]] {
				ran++
			}
			if got, want := pre.s.Len(), len(ctx)+ran; got != want {
				t.Fatalf("prompt %d step %d: %d entries after adopting, want %d", pi, step, got, want)
			}
			assumed := slices.Clone(ctx)
			for _, n := range main {
				assumed = append(assumed, tr.Tokens[n])
			}
			guess, err := pre.guessNext(assumed)
			if err != nil {
				t.Fatal(err)
			}
			if want := len(main) - ran; pre.catchup != max(want, 1) {
				t.Fatalf("prompt %d step %d: guessing fed %d tokens, want %d", pi, step, pre.catchup, max(want, 1))
			}
			fresh, err := NewModelDrafter(f16, 256, greedy)
			if err != nil {
				t.Fatal(err)
			}
			if ok, err := fresh.catchUp(assumed, 1); !ok || err != nil {
				t.Fatalf("fresh catch-up: %v", err)
			}
			vocab := f16.Config.Vocab
			if !slices.Equal(pre.logits[:vocab], fresh.logits[:vocab]) {
				t.Fatalf("prompt %d step %d: the adopting pre-drafter's logits differ from a fresh drafter's", pi, step)
			}
			if want := topIDs(fresh.logits[:vocab], 1)[0]; guess != want {
				t.Fatalf("prompt %d step %d: guess %d, want %d", pi, step, guess, want)
			}
			// The target accepts half of the main path and says 7.
			path := main[:len(main)/2]
			if err := src.Accepted(ctx, &tr, path); err != nil {
				t.Fatal(err)
			}
			for _, n := range path {
				ctx = append(ctx, tr.Tokens[n])
			}
			ctx = append(ctx, 7)
		}
	}
}
