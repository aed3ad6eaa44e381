package flash

import (
	"math"
	"slices"

	"shade/speculate"
)

// features computes every node's pruning features from the target's
// hidden states after the prune layer.
func (f *strategy) features(s *speculate.Step) error {
	t := s.Tree
	n := t.Len()
	f.feats = slices.Grow(f.feats[:0], n)[:n]
	f.lensTop = slices.Grow(f.lensTop[:0], n+1)[:n+1]
	for p := int32(-1); p < int32(n); p++ {
		f.kids = t.Children(p, f.kids[:0])
		if len(f.kids) == 0 {
			continue
		}
		f.lensTok = f.lensTok[:0]
		for _, k := range f.kids {
			f.lensTok = append(f.lensTok, t.Tokens[k])
		}
		for _, s := range s.Drafter.Shadows(p) {
			if !slices.Contains(f.lensTok, s) && len(f.lensTok) < len(f.kids)+speculate.ShadowCount {
				f.lensTok = append(f.lensTok, s)
			}
		}
		f.lensOut = slices.Grow(f.lensOut[:0], len(f.lensTok))[:len(f.lensTok)]
		if err := s.Target.Lens(int(p)+1, f.lensTok, f.lensOut); err != nil {
			return err
		}
		top := f.lensOut[0]
		for _, z := range f.lensOut {
			top = max(top, z)
		}
		var sum float64
		for _, z := range f.lensOut {
			sum += math.Exp(float64(z - top))
		}
		f.lensTop[p+1] = 1 / sum
		for j, k := range f.kids {
			z := f.lensOut[j]
			other := float32(math.Inf(-1))
			for i, o := range f.lensOut {
				if i != j {
					other = max(other, o)
				}
			}
			share := math.Exp(float64(z-top)) / sum
			margin := 10.0
			if !math.IsInf(float64(other), -1) {
				margin = min(max(float64(z-other), -10), 10)
			}
			isTop := 0.0
			if z == top {
				isTop = 1
			}
			f := &f.feats[k]
			f[0] = share
			f[1] = math.Log(share + 1e-6)
			f[2] = margin
			f[3] = isTop
			f[4] = math.Log(max(s.Drafter.NodeProb(k), 1e-4))
			f[5] = float64(t.Depth(k))
		}
	}
	return nil
}

// choose decides which rows keep running: the pending token, the main
// path, and every node the predictor does not expect to be rejected, with
// the safeguards: a node is pruned only where the lens is confident at its
// parent, never more than MaxFrac of the tree, never below MinKeep rows.
// A pruned node takes its descendants with it (their rows attend to its
// KV); it stays a candidate of verification, which ends the step there if
// it is accepted.
func (f *strategy) choose(s *speculate.Step) []int {
	t := s.Tree
	pr := f.pruner
	n := t.Len()
	f.scores = slices.Grow(f.scores[:0], n)[:n]
	f.order = f.order[:0]
	for i := range n {
		f.scores[i] = pr.Score(f.feats[i][:])
		if !f.main[i] && f.scores[i] < pr.Threshold && f.lensTop[t.Parent[i]+1] >= pr.Confident {
			f.order = append(f.order, int32(i))
		}
	}
	f.keep = f.keep[:0]
	if len(f.order) == 0 {
		for r := range n + 1 {
			f.keep = append(f.keep, r)
		}
		return f.keep
	}
	slices.SortStableFunc(f.order, func(a, b int32) int {
		switch {
		case f.scores[a] < f.scores[b]:
			return -1
		case f.scores[a] > f.scores[b]:
			return 1
		}
		return 0
	})
	pruned := make([]bool, n)
	count := 0
	maxPrune := int(pr.MaxFrac * float64(n))
	f.set = slices.Grow(f.set[:0], n)[:n]
	for _, c := range f.order {
		if pruned[c] {
			continue
		}
		clear(f.set)
		f.set[c] = true
		add, ok := 0, true
		for i := range n {
			if p := t.Parent[i]; p >= 0 && f.set[p] {
				f.set[i] = true
			}
			if f.set[i] {
				if f.main[i] {
					ok = false
					break
				}
				if !pruned[i] {
					add++
				}
			}
		}
		if !ok || count+add > maxPrune || n+1-(count+add) < pr.MinKeep {
			continue
		}
		for i := range n {
			if f.set[i] {
				pruned[i] = true
			}
		}
		count += add
	}
	f.keep = append(f.keep, 0)
	for i := range n {
		if !pruned[i] {
			f.keep = append(f.keep, i+1)
		}
	}
	if count > 0 {
		f.pruned = pruned
		s.Stats.Pruned += count
	}
	return f.keep
}
