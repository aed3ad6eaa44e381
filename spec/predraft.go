package spec

import (
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"shade/par"
)

// preDraft is an experiment in Lever's hybrid execution on a CPU (off
// unless Config.PreDraft): while the target verifies a tree with layers
// streamed from storage, the cores partly wait for reads, so a second
// drafter drafts the next step's tree meanwhile, on a worker pool of its
// own, running its draft layers only while the verify pass is blocked on
// storage (Config.TargetIdle). It must guess where that tree starts: it assumes the
// target accepts the whole main path of the tree being verified (the
// draft's most probable chain) and then produces the draft's own next
// token. When verification ends exactly so, the next step starts from
// that tree with no drafting of its own (the pre-draft, if unfinished,
// runs out first); otherwise the guess is dropped and the step drafts as
// usual. Verification never depends on the guess,
// so the output is unchanged; greedy decoding only (a sampled bonus token
// would rarely match the draft's guess).
type preDraft struct {
	other *ModelDrafter   // the drafter not holding the tree being verified
	done  chan preOutcome // the pre-draft in flight, if any
	// The pre-draft's tree and what it assumed, once finished.
	tree  Tree
	main  []int32 // the main path it assumed accepted (nodes of the verified tree)
	ready bool    // tree is the next step's draft (set after a hit)
	ctx   []int32 // the context it assumed, up to the guessed token
	// guessed is the guessed token + 1 (0: no guess, the pre-draft failed
	// before it), set before guessReady is closed.
	guessed    atomic.Int32
	guessReady chan struct{}
	// ranOut is how long the last join waited for a confirmed pre-draft
	// to finish: drafting, though it happens after verification.
	ranOut time.Duration
	// Counters for Stats: pre-drafts launched, used, and confirmed but
	// empty (the guess was right, but the gain-cost tree found no node
	// worth a row, or the context had no room for one).
	launched, hits, empty int
}

type preOutcome struct {
	guess int32
	err   error
}

// enablePreDraft sets up pre-drafting: two drafters on private copies of
// the draft model's handle, so that each can be given a worker pool of its
// own: the one drafting the step's tree runs on the engine's pool (between
// target passes, as always), the pre-drafter on none (its goroutine alone,
// while the target's pass uses the pool). They swap roles, and pools, when
// a pre-drafted tree is taken.
func (d *Decoder) enablePreDraft() error {
	pool := d.draft.m.Pool
	main, err := d.draft.twin(pool)
	if err != nil {
		return fmt.Errorf("spec: pre-drafting: %w", err)
	}
	other, err := d.draft.twin(pool)
	if err != nil {
		return fmt.Errorf("spec: pre-drafting: %w", err)
	}
	// A state's attention scratch is sized for the pool it was made with:
	// a larger pre-draft pool would overrun it.
	if pp := d.cfg.PreDraftPool; pp == nil || pp.Threads() <= pool.Threads() {
		other.m.Pool = pp
	} else {
		other.m.Pool = nil
	}
	other.idle = d.cfg.TargetIdle
	d.draft = main
	d.pre = &preDraft{other: other}
	return nil
}

// launchPreDraft starts drafting, concurrently, the tree that follows the
// tree about to be verified if the target accepts its whole main path and
// then the draft's next token. cfg is the gain-cost configuration of the
// current step (its cost model is copied: the step's learning updates it
// while the pre-draft runs).
func (d *Decoder) launchPreDraft(cfg GainCost) {
	p := d.pre
	p.ready = false
	d.lv.mainPath(d)
	p.main = d.lv.mainNodes(d, p.main[:0])
	p.ctx = append(p.ctx[:0], d.ctx...)
	for _, n := range p.main {
		p.ctx = append(p.ctx, d.tree.Tokens[n])
	}
	c := *cfg.Cost
	cfg.Cost = &c
	// Its draft passes run while the verify pass waits for reads: that
	// much drafting is free, and its tree grows deeper than the step's own.
	cfg.FreeDraft = c.IOWait(len(d.batch.Tokens))
	// The tree must fit the context after the assumed tokens.
	cfg.MaxNodes = min(cfg.MaxNodes, d.target.Cache.Cap()-d.target.Len()-len(p.main)-2)
	p.tree.Reset()
	// The pre-drafter takes over the KV entries the drafter has computed
	// for the context and the main path (a copy), so that it need not run
	// them again on its single thread.
	if err := p.other.adopt(d.draft, d.ctx, p.main, &d.tree); err != nil {
		p.done = nil
		return
	}
	p.done = make(chan preOutcome, 1)
	p.launched++
	other, ctx, tree := p.other, p.ctx, &p.tree
	p.guessed.Store(0)
	guessReady := make(chan struct{})
	p.guessReady = guessReady
	go func() {
		guess, err := other.guessNext(ctx)
		if err == nil {
			p.guessed.Store(guess + 1)
		}
		close(guessReady)
		if err == nil && cfg.MaxNodes > 0 {
			err = other.DraftGainCost(append(ctx, guess), cfg, tree)
		}
		p.done <- preOutcome{guess, err}
	}()
}

// joinPreDraft waits for the pre-draft in flight and keeps its tree for the
// next step if verification accepted exactly the main path and then the
// guessed token. A pre-draft that failed (its context full, say) is just
// not used.
func (d *Decoder) joinPreDraft(path []int32, bonus int32) {
	p := d.pre
	if p == nil || p.done == nil {
		return
	}
	// Verification is over. If it accepted the whole main path, the
	// guess decides (waiting for it costs at most the one draft pass the
	// step's own draft would begin with). A confirmed pre-draft is the
	// next step's draft begun early: it runs out, no longer waiting for
	// the verify pass to leave the cores idle. Otherwise what it has not
	// finished would cost the step time for nothing, so it stops at its
	// next layer boundary (a tree cut short is still a tree: its last
	// nodes are not expanded).
	t0 := time.Now()
	mainAccepted := slices.Equal(path, p.main)
	if mainAccepted {
		p.other.unleashed.Store(true)
		<-p.guessReady
	}
	confirmed := mainAccepted && p.guessed.Load() == bonus+1
	if !confirmed {
		p.other.stop.Store(true)
	}
	out := <-p.done
	if confirmed {
		p.ranOut = time.Since(t0)
	}
	p.other.stop.Store(false)
	p.other.unleashed.Store(false)
	p.done = nil
	p.ready = confirmed && out.err == nil && !p.other.preempted && p.tree.Len() > 0
	if p.ready {
		p.hits++
	} else if confirmed && out.err == nil && !p.other.preempted {
		p.empty++
	}
}

// dropPreDraft waits out a pre-draft whose step ended in an error before
// joining it, and drops it.
func (d *Decoder) dropPreDraft() {
	if p := d.pre; p != nil && p.done != nil {
		p.other.stop.Store(true)
		<-p.done
		p.other.stop.Store(false)
		p.done, p.ready = nil, false
	}
}

// takePreDraft makes the pre-drafted tree the step's draft: its drafter
// becomes the decoder's, and the one that drafted the tree just verified
// becomes the next pre-drafter.
func (d *Decoder) takePreDraft() bool {
	p := d.pre
	if p == nil || !p.ready {
		return false
	}
	p.ready = false
	d.tree.Reset()
	for i := range p.tree.Len() {
		d.tree.Add(p.tree.Tokens[i], p.tree.Parent[i], p.tree.Q[i])
	}
	d.draft, p.other = p.other, d.draft
	d.draft.m.Pool, p.other.m.Pool = p.other.m.Pool, d.draft.m.Pool
	d.draft.idle, p.other.idle = p.other.idle, d.draft.idle
	return true
}

// mainNodes lists the draft's main path of the current tree, root first:
// the nodes mainPath marks.
func (lv *leverState) mainNodes(d *Decoder, out []int32) []int32 {
	t := &d.tree
	for cur := int32(-1); ; {
		next := int32(-1)
		for i, p := range t.Parent {
			if p == cur && i < len(lv.main) && lv.main[i] {
				next = int32(i)
				break
			}
		}
		if next < 0 {
			return out
		}
		out = append(out, next)
		cur = next
	}
}

// twin returns a drafter on the same draft model with a private copy of
// its handle (so that its worker pool can be changed alone), starting on
// pool, with a KV cache of the same size, the same sampling parameters
// and the same learned acceptance (shared).
func (d *ModelDrafter) twin(pool *par.Pool) (*ModelDrafter, error) {
	m := *d.m
	m.Pool = pool
	t, err := NewModelDrafter(&m, d.s.Cache.Cap(), d.params)
	if err != nil {
		return nil, err
	}
	t.ranks = d.ranks
	return t, nil
}

// adopt makes d's committed context that of src, the drafter holding the
// current draft tree t (drafted from ctx), followed by the nodes of path
// src has run, by copying src's KV entries: those src committed, its
// catch-up rows and the path's rows. The entries are what d would compute
// itself (same model, same positions, batch-invariant kernels).
func (d *ModelDrafter) adopt(src *ModelDrafter, ctx, path []int32, t *Tree) error {
	fed := len(src.seen) + int(src.rootRow) + 1
	if src.s.Rows() == 0 || fed != len(ctx) || !slices.Equal(src.seen, ctx[:len(src.seen)]) {
		return fmt.Errorf("spec: pre-draft: the drafter does not hold the context's entries")
	}
	common := 0
	for common < len(d.seen) && common < len(src.seen) && d.seen[common] == src.seen[common] {
		common++
	}
	if err := d.s.Truncate(common); err != nil {
		return err
	}
	d.seen = d.seen[:common]
	base := src.s.Cache.Len()
	slots := d.rows[:0]
	for s := common; s < base; s++ {
		slots = append(slots, s)
	}
	for r := 0; r <= int(src.rootRow); r++ {
		slots = append(slots, base+r)
	}
	d.seen = append(d.seen, ctx[common:]...)
	for _, n := range path {
		if int(n) >= len(src.fed) || !src.fed[n] {
			break
		}
		slots = append(slots, base+int(src.nodeRow[n]))
		d.seen = append(d.seen, t.Tokens[n])
	}
	d.rows = slots
	if err := d.s.Cache.AppendFrom(src.s.Cache, slots); err != nil {
		d.s.Truncate(common)
		d.seen = d.seen[:common]
		return err
	}
	return nil
}

// guessNext feeds the draft what it has not seen of ctx (the accepted text
// and, after it, the tokens assumed accepted) and returns its most likely
// next token. The fed tokens are committed: a later draft whose context
// differs rolls them back (Truncate) like any stale context.
func (d *ModelDrafter) guessNext(ctx []int32) (int32, error) {
	if ok, err := d.catchUp(ctx, 1); !ok {
		if err == nil {
			err = fmt.Errorf("spec: pre-draft preempted")
		}
		return 0, err
	}
	rows := d.rows[:0]
	for r := 0; r <= int(d.rootRow); r++ {
		rows = append(rows, r)
	}
	d.rows = rows
	if !finite(d.logits[:d.m.Config.Vocab]) {
		return 0, fmt.Errorf("spec: pre-draft: the draft's logits are not finite")
	}
	guess := topIDs(d.logits[:d.m.Config.Vocab], 1)[0]
	if err := d.s.Commit(rows); err != nil {
		return 0, err
	}
	d.seen = append(d.seen, ctx[len(d.seen):]...)
	return guess, nil
}
