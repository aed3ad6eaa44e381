package speculate

// widener is the pipeline's widen stage under a Governor: it fills the
// tree with n-gram continuations up to the verify rows the governor asks
// for, from a multi-source n-gram cache that learns from what the target
// rejected.
type widener struct {
	ngcache *NgramCache
	nodes   []int32
}

func newWidener(cfg Config) *widener {
	return &widener{ngcache: NewNgramCache(cfg.NgramMin, cfg.NgramMax)}
}

// widen books a preempted draft and grows the tree to the rows the
// governor wants.
func (w *widener) widen(d *Decoder, kind DraftKind) {
	if d.draft != nil && kind == DraftModel && d.draft.Preempted() {
		d.stats.Preempted++
	}
	room := d.target.Cache.Cap() - d.target.Len() - 1
	if want := min(d.gov.VerifyRows(d.tree.Len()), room+1, 64); want > d.tree.Len()+1 {
		w.fill(d, want-1)
	}
}

// rejected teaches the cache what the target turned down this step.
func (w *widener) rejected(d *Decoder, path []int32, drafted int) {
	w.ngcache.Rejected(d.ctx, &d.tree, path, drafted)
	w.ngcache.Tick()
}

// fill grows the tree to size nodes with n-gram continuations: along the
// draft's main path (the pending token, its first child, that node's first
// child, …), deepest first, it looks up what followed the text up to that
// node and hangs it there as a chain, merging into children that already
// propose the same tokens. Filled nodes come after the drafted ones, so
// they are the last siblings verification tries; being deterministic
// proposals, they keep verification exact under sampling too.
func (w *widener) fill(d *Decoder, size int) {
	t := &d.tree
	main := w.nodes[:0]
	main = append(main, -1)
	for node := int32(-1); ; {
		next := int32(-1)
		for i, p := range t.Parent {
			if p == node {
				next = int32(i)
				break
			}
		}
		if next < 0 {
			break
		}
		main = append(main, next)
		node = next
	}
	w.nodes = main
	var prefix []int32
	for k := len(main) - 1; k >= 0 && t.Len() < size; k-- {
		prefix = prefix[:0]
		for _, n := range main[1 : k+1] {
			prefix = append(prefix, t.Tokens[n])
		}
		cont := w.ngcache.Continue(d.ctx, prefix, size-t.Len()+1)
		at := main[k]
		for _, tok := range cont {
			if t.Len() >= size {
				break
			}
			child := int32(-1)
			for i, p := range t.Parent {
				if p == at && t.Tokens[i] == tok {
					child = int32(i)
					break
				}
			}
			if child < 0 {
				child = t.Add(tok, at, nil)
			}
			at = child
		}
	}
}
