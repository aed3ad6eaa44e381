package model

import (
	"fmt"
	"math"
	"shade/internal/libm"
	"sync/atomic"
	"time"

	"shade/gguf"
	"shade/kv"
	"shade/quant"
)

// Batch is a set of tokens run through the model together. Each row has a
// token, a position and a parent: the batch row it follows, or -1 when it
// follows the committed cache directly. A row attends to the committed
// cache, its ancestors in the batch and itself. Nil Pos means positions
// continue the cache (Len+i); nil Parent means a chain (row i follows i-1),
// which is how a prompt or a single decode step runs.
type Batch struct {
	Tokens []int32
	Pos    []int32
	Parent []int32
}

// Chain returns a batch of tokens that follow each other.
func Chain(tokens []int32) Batch { return Batch{Tokens: tokens} }

// State is one sequence being run through a model: its KV cache, the batch
// in flight and the buffers every pass reuses. The forward pass runs in
// three calls so that callers can act between layers:
//
//	s.Begin(batch)          // embed
//	s.RunLayers(0, n, hook) // hook(i) runs after layer i
//	s.Logits(rows, out)     // final norm + LM head on chosen rows only
//
// then s.Commit(rows) keeps the KV entries of a root path of the batch.
type State struct {
	m     *Model
	cfg   *Config
	Cache *kv.Cache

	// The batch in flight.
	n       int     // rows of the pass in flight
	first   int     // tree row of its first row (0 after Begin)
	total   int     // rows in the tree since Begin
	base    int     // cache length at Begin
	tokens  []int32 // (total) per tree row
	pos     []int32 // (total)
	parent  []int32 // (total)
	chain   bool    // a Begin'd chain: row i follows row i-1
	next    int     // next layer to run
	visOff  []int32 // (total) where each tree row's visibility list starts in visBuf
	depth   []int32 // (total)
	visRows int     // tree rows whose visibility lists are built

	// After Prune: the tree row of each active row, the active row of each
	// row of the pass (-1 when pruned), and which tree rows were pruned
	// (their KV stops at the layer they were pruned after). All empty when
	// the pass in flight was not pruned.
	rowOf  []int32 // (n)
	where  []int32 // (rows of the pass before pruning)
	pruned []bool  // (total)

	// Activations, row-major with n rows.
	x        []float32   // (n, dim) residual stream
	xb       []float32   // (n, dim) normed input
	q        []float32   // (n, qdim)
	k, v     []float32   // (n, kvdim)
	att      []float32   // (n, qdim)
	proj     []float32   // (n, dim)
	hb, hb2  []float32   // (n, ffn)
	ropeCos  []float32   // (n, ropeDim/2)
	ropeSin  []float32   // (n, ropeDim/2)
	scratchF [][]float32 // per attention worker: block·(2·headDim + 2 + attnChunk) + (2·group + 2)·attnChunk + headDim
	attnRose [][]uint64  // per attention worker: quant.SoftmaxArgs's rose bits, a word per query head of a KV head
	visBuf   []int32
	scratch  quant.Scratch
	// The operands of a layer's shared-input products (q, k, v; gate, up),
	// kept here so that passing them to quant.MatMulShared allocates nothing.
	sharedW  [3]quant.Matrix
	sharedY  [3][]float32
	headNorm []float32 // (rows asked for, dim): final-normed input of the LM head
	lensNorm []float32 // (dim) Lens's normed row
	lensRow  []float32 // (dim) one dequantized head row

	slotBuf, rowBuf []int
	attnLayer       int              // layer the attention workers run
	attnQB          int              // query rows per attention task
	attnBlocks      int              // query blocks of the pass
	attnNext        atomic.Int64     // next attention task to hand out
	attnFn          func(lo, hi int) // s.attendRange, bound once

	// The layer in flight and its per-row steps, bound once so that handing
	// them to the pool allocates nothing.
	layerL                                             int
	layerW                                             *Layer
	attnNormFn, qkvFn, ffnNormFn, swigluFn, residualFn func(lo, hi int)

	// LayerTimes[i] is how long layer i computed in the last pass, and
	// LayerWaits[i] how long the pass spent in the layer source getting
	// and releasing its weights (a streamed layer's read wait). They are
	// kept apart because the elastic sensor scores layer times against a
	// quiet machine's: a read wait in them would make disk jitter read as
	// memory contention.
	LayerTimes []time.Duration
	LayerWaits []time.Duration
	// clock is time.Now; tests replace it to account time exactly.
	clock func() time.Time
	// AttnTime adds up the time spent in attention over the cache (q·Kᵀ,
	// softmax, ·V) until the caller resets it: the part of a prompt pass
	// that grows with the square of its length.
	AttnTime time.Duration
}

// NewState returns a state with a KV cache of ctx slots (the longest
// sequence plus the largest batch in flight).
func (m *Model) NewState(ctx int) (*State, error) {
	c := m.Config
	cache, err := kv.New(c.Layers, c.KVDim(), ctx)
	if err != nil {
		return nil, err
	}
	s := &State{m: m, cfg: c, Cache: cache, LayerTimes: make([]time.Duration, c.Layers),
		LayerWaits: make([]time.Duration, c.Layers), clock: time.Now}
	s.attnFn = s.attendRange
	s.attnNormFn, s.qkvFn, s.ffnNormFn, s.swigluFn, s.residualFn = s.attnNormRows, s.qkvRows, s.ffnNormRows, s.swiglu, s.residualRows
	s.scratchF = make([][]float32, max(1, m.Pool.Threads()))
	s.attnRose = make([][]uint64, len(s.scratchF))
	for w := range s.attnRose {
		s.attnRose[w] = make([]uint64, c.Heads/c.KVHeads)
	}
	for w := range s.scratchF {
		s.scratchF[w] = make([]float32, 3*c.HeadDim+2+2*attnChunk)
	}
	return s, nil
}

// Model returns the model the state runs.
func (s *State) Model() *Model { return s.m }

func grow(b []float32, n int) []float32 {
	if cap(b) < n {
		return make([]float32, n)
	}
	return b[:n]
}

func growInt(b []int32, n int) []int32 {
	if cap(b) < n {
		return make([]int32, n)
	}
	return b[:n]
}

// Begin validates a batch, embeds its tokens and prepares layer 0.
func (s *State) Begin(b Batch) error { return s.begin(b, false) }

// Extend adds rows to the tree in flight: the rows of earlier passes since
// Begin keep their KV entries, and the new rows may name them as parents
// (rows are numbered across passes: the first new row is Rows(tree) before
// the call). It is how a drafter grows a tree level by level, one batched
// pass per level, without recomputing the levels above. The previous pass
// must have run all layers. Hidden and Logits then refer to the new rows
// (numbered from 0); Commit takes rows numbered across the whole tree.
func (s *State) Extend(b Batch) error {
	if s.total == 0 || s.next != s.cfg.Layers {
		return fmt.Errorf("model: Extend needs a finished pass to extend (after Begin and every layer)")
	}
	return s.begin(b, true)
}

func (s *State) begin(b Batch, extend bool) (err error) {
	defer gguf.CatchFault(&err) // a changed model file: an error, not a crash
	defer gguf.GuardFaults()()
	c := s.cfg
	n := len(b.Tokens)
	if n == 0 {
		return fmt.Errorf("model: empty batch")
	}
	if (b.Pos != nil && len(b.Pos) != n) || (b.Parent != nil && len(b.Parent) != n) {
		return fmt.Errorf("model: batch has %d tokens but %d positions and %d parents", n, len(b.Pos), len(b.Parent))
	}
	first := 0
	if extend {
		first = s.total
	} else {
		s.base = s.Cache.Len()
	}
	if s.base+first+n > s.Cache.Cap() {
		return fmt.Errorf("model: context full: %d cached + %d new tokens exceed the %d-token context", s.base+first, n, s.Cache.Cap())
	}
	if extend {
		for i, p := range b.Parent {
			if p >= 0 && int(p) < len(s.pruned) && s.pruned[p] {
				return fmt.Errorf("model: row %d has parent %d, which was pruned", first+i, p)
			}
		}
	} else {
		s.pruned = s.pruned[:0]
	}
	for i, t := range b.Tokens {
		if t < 0 || int(t) >= c.Vocab {
			return fmt.Errorf("model: token %d at row %d outside the vocabulary of %d", t, i, c.Vocab)
		}
	}
	total := first + n
	s.tokens = append(s.tokens[:first], b.Tokens...)
	s.pos = growKeep(s.pos, total)
	s.parent = growKeep(s.parent, total)
	chain := !extend
	for i := range n {
		g := first + i
		p := int32(g - 1)
		if b.Parent != nil {
			p = b.Parent[i]
			if p < -1 || p >= int32(g) {
				return fmt.Errorf("model: row %d has parent %d: parents must come earlier in the tree (or be -1)", g, p)
			}
		} else if extend {
			return fmt.Errorf("model: Extend needs explicit parents")
		}
		s.parent[g] = p
		if p != int32(g-1) {
			chain = false
		}
		switch {
		case b.Pos != nil:
			s.pos[g] = b.Pos[i]
		case p >= 0:
			s.pos[g] = s.pos[p] + 1
		default:
			s.pos[g] = int32(s.base)
		}
		if s.pos[g] < 0 {
			return fmt.Errorf("model: row %d has negative position %d", g, s.pos[g])
		}
	}
	s.n, s.first, s.total, s.next, s.chain = n, first, total, 0, chain
	s.rowOf, s.where = s.rowOf[:0], s.where[:0]
	if !extend {
		s.visRows = 0
	}
	if !chain {
		s.buildVisibility()
	}

	s.x = grow(s.x, n*c.Dim)
	s.xb = grow(s.xb, n*c.Dim)
	s.q = grow(s.q, n*c.QDim())
	s.k = grow(s.k, n*c.KVDim())
	s.v = grow(s.v, n*c.KVDim())
	s.att = grow(s.att, n*c.QDim())
	s.proj = grow(s.proj, n*c.Dim)
	s.hb = grow(s.hb, n*c.FFN)
	s.hb2 = grow(s.hb2, n*c.FFN)
	for i, t := range s.tokens[first:total] {
		s.m.Weights.Embed.DequantizeRow(int(t), s.x[i*c.Dim:(i+1)*c.Dim])
	}
	s.ropeTables()
	return nil
}

// growKeep is grow for int32 rows that keeps the existing contents.
func growKeep(b []int32, n int) []int32 {
	if cap(b) < n {
		nb := make([]int32, n, max(n, 2*cap(b)))
		copy(nb, b)
		return nb
	}
	return b[:n]
}

// buildVisibility lists, for each tree row not yet listed, the tree rows it
// attends to: its ancestors, root first, then itself. Lists are stored as
// offsets into visBuf so that growing it never invalidates them. A chain
// run by Begin needs no lists until a later Extend hangs a tree off it.
func (s *State) buildVisibility() {
	first := s.visRows
	if first == 0 {
		s.visBuf = s.visBuf[:0]
	}
	for len(s.visOff) < s.total {
		s.visOff = append(s.visOff, 0)
		s.depth = append(s.depth, 0)
	}
	for g := first; g < s.total; g++ {
		d := int32(0)
		if p := s.parent[g]; p >= 0 {
			d = s.depth[p] + 1
		}
		s.depth[g] = d
		start := len(s.visBuf)
		s.visOff[g] = int32(start)
		for range d + 1 {
			s.visBuf = append(s.visBuf, 0)
		}
		for j, k := int32(g), d; j >= 0; j, k = s.parent[j], k-1 {
			s.visBuf[start+int(k)] = j
		}
	}
	s.visRows = s.total
}

// visible returns the tree rows that tree row g attends to (trees only).
func (s *State) visible(g int) []int32 {
	off := int(s.visOff[g])
	return s.visBuf[off : off+int(s.depth[g])+1]
}

// ropeTables computes cos and sin of every row's rotation angles as ggml's
// rope cache does: theta_i = pos·base^(-2i/d), the power accumulated in
// float32, divided by freqFactor[i], then scaled by the frequency scale,
// and cos/sin rounded as glibc's cosf/sinf round them (float32 of math.Cos
// differs from them on about 1% of RoPE's angles).
func (s *State) ropeTables() {
	c := s.cfg
	half := c.RopeDim / 2
	s.ropeCos = grow(s.ropeCos, s.n*half)
	s.ropeSin = grow(s.ropeSin, s.n*half)
	thetaScale := float32(math.Pow(float64(c.RopeBase), float64(float32(-2)/float32(c.RopeDim))))
	ff := s.m.Weights.RopeFreqs
	for r := range s.n {
		theta := float32(s.pos[s.first+r])
		for i := range half {
			t := theta
			if ff != nil {
				t /= ff[i]
			}
			t *= c.RopeScale
			s.ropeSin[r*half+i], s.ropeCos[r*half+i] = libm.Sincosf(t)
			theta *= thetaScale
		}
	}
}

// Rows is the number of rows of the pass in flight.
func (s *State) Rows() int { return s.n }

// NextLayer is the index of the next layer RunLayers would run.
func (s *State) NextLayer() int { return s.next }

// Hidden returns the residual stream of batch row i after the layers run so
// far (the embedding before any), or nil if the row was pruned. Rows keep
// their numbering across Prune. It is valid until the next Begin.
func (s *State) Hidden(i int) []float32 {
	a := s.active(i)
	if a < 0 {
		return nil
	}
	d := s.cfg.Dim
	return s.x[a*d : (a+1)*d : (a+1)*d]
}

// active maps a row of the pass to its place among the active rows, -1
// when it was pruned or is out of range.
func (s *State) active(i int) int {
	if len(s.where) == 0 {
		if i < 0 || i >= s.n {
			return -1
		}
		return i
	}
	if i < 0 || i >= len(s.where) {
		return -1
	}
	return int(s.where[i])
}

// treeRow is the tree row of active row i.
func (s *State) treeRow(i int) int {
	if len(s.rowOf) == 0 {
		return s.first + i
	}
	return int(s.rowOf[i])
}

// Prune drops rows from the pass in flight: only the rows in keep (rows of
// the pass, numbered as before any pruning, ascending) run the layers not
// yet run. Each kept row keeps its tree row, position, KV slot and what it
// attends to, so its results are bit-identical to an unpruned pass (the
// kernels are batch-invariant); a kept row's parent in the pass must be
// kept too. Pruned rows can no longer be read (Hidden, Logits), committed
// or extended. Prune may be called between any two layers, more than once.
// It is how verification stops spending target layers on draft branches a
// predictor expects to be rejected.
func (s *State) Prune(keep []int) error {
	if s.n == 0 {
		return fmt.Errorf("model: Prune without a pass in flight")
	}
	if len(keep) == 0 {
		return fmt.Errorf("model: Prune must keep at least one row")
	}
	rows := s.total - s.first // rows of the pass before any pruning
	if len(s.where) == 0 {
		s.where = growInt(s.where, rows)
		s.rowOf = growInt(s.rowOf, s.n)
		for i := range rows {
			s.where[i] = int32(i)
			s.rowOf[i] = int32(s.first + i)
		}
	}
	for k, r := range keep {
		if r < 0 || r >= rows || s.where[r] < 0 {
			return fmt.Errorf("model: Prune keeps row %d: not an active row of the pass", r)
		}
		if k > 0 && r <= keep[k-1] {
			return fmt.Errorf("model: Prune rows %v are not ascending", keep)
		}
	}
	keptRow := make(map[int]bool, len(keep))
	for _, r := range keep {
		keptRow[r] = true
	}
	for _, r := range keep {
		if p := int(s.parent[s.first+r]) - s.first; p >= 0 && !keptRow[p] {
			return fmt.Errorf("model: Prune keeps row %d but not its parent row %d", r, p)
		}
	}
	for len(s.pruned) < s.total {
		s.pruned = append(s.pruned, false)
	}
	c := s.cfg
	half := c.RopeDim / 2
	// Compact in place: kept rows only move towards the front.
	for k, r := range keep {
		a := int(s.where[r])
		if a != k {
			copy(s.x[k*c.Dim:(k+1)*c.Dim], s.x[a*c.Dim:(a+1)*c.Dim])
			copy(s.ropeCos[k*half:(k+1)*half], s.ropeCos[a*half:(a+1)*half])
			copy(s.ropeSin[k*half:(k+1)*half], s.ropeSin[a*half:(a+1)*half])
		}
		s.rowOf[k] = s.rowOf[a]
	}
	s.rowOf = s.rowOf[:len(keep)]
	for i := range rows {
		if s.where[i] >= 0 && !keptRow[i] {
			s.pruned[s.first+i] = true
		}
		s.where[i] = -1
	}
	for k, r := range keep {
		s.where[r] = int32(k)
	}
	if s.chain {
		// Kept rows of a chain are a prefix, but attention then reads
		// visibility lists like any tree.
		s.chain = false
		s.visRows = 0
		s.buildVisibility()
	}
	s.n = len(keep)
	return nil
}

// Pruned reports whether row i of the pass in flight was pruned.
func (s *State) Pruned(i int) bool {
	return len(s.where) > 0 && i >= 0 && i < len(s.where) && s.where[i] < 0
}

// RunLayers runs layers [from, to) over the batch, in order, calling hook
// (if non-nil) after each one; a hook error stops the pass and is returned.
// Layers must run in order from 0 without gaps.
func (s *State) RunLayers(from, to int, hook func(layer int) error) (err error) {
	defer gguf.CatchFault(&err) // a changed model file: an error, not a crash
	defer gguf.GuardFaults()()
	if s.n == 0 {
		return fmt.Errorf("model: RunLayers without Begin")
	}
	if from != s.next || to < from || to > s.cfg.Layers {
		return fmt.Errorf("model: RunLayers(%d, %d) out of order: next layer is %d of %d", from, to, s.next, s.cfg.Layers)
	}
	release, _ := s.m.Weights.Layers.(LayerReleaser)
	for l := from; l < to; l++ {
		t0 := s.clock()
		lw, err := s.m.Weights.Layers.Layer(l)
		if err != nil {
			return fmt.Errorf("model: layer %d: %w", l, err)
		}
		t1 := s.clock()
		s.layer(l, lw)
		t2 := s.clock()
		if release != nil {
			release.ReleaseLayer(l)
		}
		s.next = l + 1
		s.LayerTimes[l] = t2.Sub(t1)
		s.LayerWaits[l] = t1.Sub(t0) + s.clock().Sub(t2)
		if hook != nil {
			if err := hook(l); err != nil {
				return err
			}
		}
	}
	return nil
}

// Abandon drops the pass in flight, wherever it stopped. After a Begin the
// state is as before it (nothing to commit); after an Extend the tree keeps
// the rows of its earlier, finished passes, which can still be committed,
// but no Hidden or Logits rows until the next pass. It is how a drafter
// stops mid-pass when it is preempted.
func (s *State) Abandon() {
	s.rowOf, s.where = s.rowOf[:0], s.where[:0]
	if s.first == 0 {
		s.n, s.total, s.next = 0, 0, 0
		s.pruned = s.pruned[:0]
		return
	}
	s.pruned = s.pruned[:min(len(s.pruned), s.first)]
	s.n, s.total, s.next = 0, s.first, s.cfg.Layers
	s.tokens, s.pos, s.parent = s.tokens[:s.first], s.pos[:s.first], s.parent[:s.first]
	s.visRows = min(s.visRows, s.first)
}

// Forward runs every layer over a batch and commits nothing.
func (s *State) Forward(b Batch) error {
	if err := s.Begin(b); err != nil {
		return err
	}
	return s.RunLayers(0, s.cfg.Layers, nil)
}

// Logits applies the final norm and the LM head to the given batch rows,
// writing len(rows)·Vocab values to out (row-major). All layers must have run.
func (s *State) Logits(rows []int, out []float32) (err error) {
	defer gguf.CatchFault(&err) // a changed model file: an error, not a crash
	defer gguf.GuardFaults()()
	c := s.cfg
	if s.next != c.Layers {
		return fmt.Errorf("model: Logits after %d of %d layers", s.next, c.Layers)
	}
	if len(out) < len(rows)*c.Vocab {
		return fmt.Errorf("model: logits buffer of %d floats, need %d", len(out), len(rows)*c.Vocab)
	}
	s.headNorm = grow(s.headNorm, len(rows)*c.Dim)
	for k, r := range rows {
		h := s.Hidden(r)
		if h == nil {
			if s.Pruned(r) {
				return fmt.Errorf("model: logits row %d was pruned", r)
			}
			return fmt.Errorf("model: logits row %d outside the batch of %d", r, s.total-s.first)
		}
		rmsNorm(s.headNorm[k*c.Dim:(k+1)*c.Dim], h, s.m.Weights.OutNorm, c.RMSEps)
	}
	quant.MatMul(s.m.Pool, s.m.Weights.Output, s.headNorm, len(rows), out[:len(rows)*c.Vocab], &s.scratch)
	return nil
}

// Commit appends the KV entries of the given batch rows to the cache. The
// rows must form a path from the root of the batch: the first row's parent
// is -1 and each next row's parent is the row before it. All layers must
// have run.
func (s *State) Commit(rows []int) error {
	if s.next != s.cfg.Layers {
		return fmt.Errorf("model: Commit after %d of %d layers", s.next, s.cfg.Layers)
	}
	s.slotBuf = s.slotBuf[:0]
	prev := int32(-1)
	for _, r := range rows {
		if r < 0 || r >= s.total || s.parent[r] != prev {
			return fmt.Errorf("model: commit rows %v are not a path from the batch root", rows)
		}
		if r < len(s.pruned) && s.pruned[r] {
			return fmt.Errorf("model: commit row %d was pruned (its KV is incomplete)", r)
		}
		prev = int32(r)
		s.slotBuf = append(s.slotBuf, s.base+r)
	}
	if err := s.Cache.Commit(s.slotBuf); err != nil {
		return err
	}
	s.n, s.total, s.next = 0, 0, 0 // the batch's scratch slots may now be overwritten
	s.rowOf, s.where, s.pruned = s.rowOf[:0], s.where[:0], s.pruned[:0]
	return nil
}

// CommitAll commits every row of a chain batch.
func (s *State) CommitAll() error {
	if !s.chain {
		return fmt.Errorf("model: CommitAll on a tree batch")
	}
	s.rowBuf = s.rowBuf[:0]
	for i := range s.n {
		s.rowBuf = append(s.rowBuf, i)
	}
	return s.Commit(s.rowBuf)
}

// Len is the number of committed tokens.
func (s *State) Len() int { return s.Cache.Len() }

// Truncate rolls the sequence back to n committed tokens.
func (s *State) Truncate(n int) error {
	s.n, s.total, s.next = 0, 0, 0
	s.rowOf, s.where, s.pruned = s.rowOf[:0], s.where[:0], s.pruned[:0]
	return s.Cache.Truncate(n)
}

// Lens applies the final norm and the LM head rows of the given tokens to
// batch row `row`'s residual stream after the layers run so far: out[k] is
// the logit tokens[k] would get if the remaining layers were skipped (the
// "logit lens"). It reads len(tokens) rows of the head, not all of it, so
// it is cheap enough to score draft tokens mid-pass.
func (s *State) Lens(row int, tokens []int32, out []float32) (err error) {
	defer gguf.CatchFault(&err) // a changed model file: an error, not a crash
	defer gguf.GuardFaults()()
	c := s.cfg
	h := s.Hidden(row)
	if h == nil {
		return fmt.Errorf("model: lens of row %d: not an active row of the pass", row)
	}
	if len(out) < len(tokens) {
		return fmt.Errorf("model: lens buffer of %d floats for %d tokens", len(out), len(tokens))
	}
	s.lensNorm = grow(s.lensNorm, c.Dim)
	s.lensRow = grow(s.lensRow, c.Dim)
	rmsNorm(s.lensNorm, h, s.m.Weights.OutNorm, c.RMSEps)
	for k, t := range tokens {
		if t < 0 || int(t) >= c.Vocab {
			return fmt.Errorf("model: lens token %d outside the vocabulary of %d", t, c.Vocab)
		}
		s.m.Weights.Output.DequantizeRow(int(t), s.lensRow)
		var dot float32
		for i, v := range s.lensRow {
			dot += v * s.lensNorm[i]
		}
		out[k] = dot
	}
	return nil
}
