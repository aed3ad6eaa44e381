package model

import (
	"math"
	"time"

	"shade/quant"
)

// layer runs one transformer block over the batch in flight:
// x += Wo·attn(rope(Wq·norm(x)), rope(Wk·norm(x)), Wv·norm(x));
// x += Down·(silu(Gate·norm(x)) ⊙ Up·norm(x)).
func (s *State) layer(l int, w *Layer) {
	c := s.cfg
	n := s.n
	pool := s.m.Pool
	s.layerL, s.layerW = l, w

	s.perRow(n, s.attnNormFn)
	s.sharedW = [3]quant.Matrix{w.Wq, w.Wk, w.Wv}
	s.sharedY = [3][]float32{s.q, s.k, s.v}
	quant.MatMulShared(pool, s.sharedW[:], s.xb, n, s.sharedY[:], &s.scratch)
	s.perRow(n, s.qkvFn)

	t0 := time.Now()
	s.attention(l)
	s.AttnTime += time.Since(t0)
	quant.MatMul(pool, w.Wo, s.att, n, s.proj, &s.scratch)
	s.perRow(n, s.ffnNormFn) // x += proj, then the FFN norm
	s.sharedW = [3]quant.Matrix{w.Gate, w.Up}
	s.sharedY = [3][]float32{s.hb, s.hb2}
	quant.MatMulShared(pool, s.sharedW[:2], s.xb, n, s.sharedY[:2], &s.scratch)
	s.sharedW, s.sharedY = [3]quant.Matrix{}, [3][]float32{} // hold no layer's weights
	if n == 1 {
		s.swiglu(0, c.FFN)
	} else {
		pool.ForGrain(n*c.FFN, 1024, s.swigluFn)
	}
	quant.MatMul(pool, w.Down, s.hb, n, s.proj, &s.scratch)
	s.perRow(n, s.residualFn)
	s.layerW = nil
}

// perRow runs fn over the rows of the pass, spread over the pool when there
// is more than one: with a batch to verify, the per-row work between the
// matrix products (norms, rope, the activation) would otherwise leave the
// other cores idle for a fifth of the pass. Each row's arithmetic is the same
// however rows are split, so batch invariance holds.
func (s *State) perRow(n int, fn func(lo, hi int)) {
	if n == 1 {
		fn(0, 1)
		return
	}
	s.m.Pool.For(n, fn)
}

// attnNormRows writes rms-normed rows [lo, hi) of the residual stream to
// s.xb, with the layer's attention norm; ffnNormRows first adds the
// attention's output rows (s.proj) into the residual stream, then does the
// same with the FFN norm.
func (s *State) attnNormRows(lo, hi int) { s.normRows(lo, hi, s.layerW.AttnNorm) }
func (s *State) ffnNormRows(lo, hi int) {
	s.residualRows(lo, hi)
	s.normRows(lo, hi, s.layerW.FFNNorm)
}

// residualRows adds rows [lo, hi) of the last projection (s.proj) into the
// residual stream: spread over the pool with the other per-row work rather
// than left to one thread while the others wait.
func (s *State) residualRows(lo, hi int) {
	dim := s.cfg.Dim
	addTo(s.x[lo*dim:hi*dim], s.proj[lo*dim:hi*dim])
}

func (s *State) normRows(lo, hi int, weight []float32) {
	dim := s.cfg.Dim
	for i := lo; i < hi; i++ {
		rmsNorm(s.xb[i*dim:(i+1)*dim], s.x[i*dim:(i+1)*dim], weight, s.cfg.RMSEps)
	}
}

// qkvRows finishes rows [lo, hi) of the attention inputs: biases, per-head
// norms, rope, and the row's keys and values into the cache.
func (s *State) qkvRows(lo, hi int) {
	c, w, l := s.cfg, s.layerW, s.layerL
	qd, kvd := c.QDim(), c.KVDim()
	for i := lo; i < hi; i++ {
		q, k, v := s.q[i*qd:(i+1)*qd], s.k[i*kvd:(i+1)*kvd], s.v[i*kvd:(i+1)*kvd]
		if w.Bq != nil {
			addTo(q, w.Bq)
			addTo(k, w.Bk)
			addTo(v, w.Bv)
		}
		if w.QNorm != nil {
			for h := 0; h < c.Heads; h++ {
				hq := q[h*c.HeadDim : (h+1)*c.HeadDim]
				rmsNorm(hq, hq, w.QNorm, c.RMSEps)
			}
			for h := 0; h < c.KVHeads; h++ {
				hk := k[h*c.HeadDim : (h+1)*c.HeadDim]
				rmsNorm(hk, hk, w.KNorm, c.RMSEps)
			}
		}
		s.rope(i, q, c.Heads)
		s.rope(i, k, c.KVHeads)
		slot := s.base + s.treeRow(i)
		quant.ToF16(s.Cache.K(l, slot), k)
		quant.ToF16(s.Cache.V(l, slot), v)
	}
}

// swiglu computes hb[i] = silu(hb[i]) · hb2[i] for i in [lo, hi), indices
// into the batch's rows of FFN values: [lo, hi) may start or end mid-row
// (ForGrain cuts at multiples of 1024), and SiLUMul is told where in its row
// hb[lo] is, so that each value's formula, like llama.cpp's, depends on its
// index within its row alone, not on the batch size or thread count.
func (s *State) swiglu(lo, hi int) {
	ffn := s.cfg.FFN
	quant.SiLUMul(s.hb[lo:hi], s.hb2[lo:hi], ffn, lo%ffn)
}

// rope rotates each head of vec (one batch row) by that row's angles.
// llama rotates adjacent pairs; NeoX-style architectures rotate element i
// with element i + ropeDim/2.
func (s *State) rope(row int, vec []float32, heads int) {
	c := s.cfg
	half := c.RopeDim / 2
	cos, sin := s.ropeCos[row*half:(row+1)*half], s.ropeSin[row*half:(row+1)*half]
	for h := 0; h < heads; h++ {
		x := vec[h*c.HeadDim : h*c.HeadDim+c.RopeDim]
		for i := range half {
			var a, b *float32
			if c.RopeNeoX {
				a, b = &x[i], &x[i+half]
			} else {
				a, b = &x[2*i], &x[2*i+1]
			}
			x0, x1 := *a, *b
			*a = fma32(x0, cos[i], -float32(x1*sin[i]))
			*b = fma32(x0, sin[i], float32(x1*cos[i]))
		}
	}
}

// attnBlock is about how many queries share one pass over the keys and
// values: each K and V row loaded is used for that many queries (the query
// heads of one KV head, times a block of a chain's rows) while it is in L1,
// and the work splits into tasks that balance over the pool. Each query's
// own arithmetic does not depend on it.
const attnBlock = 16

// attention computes softmax(q·Kᵀ/√d)·V for every (row, head) of the batch
// into s.att. Row i sees the committed cache and the batch rows visible to
// it. The work is split into (KV head, block of query rows) tasks, handed
// out to the pool's workers largest first; a task computes every query
// head that reads its KV head.
func (s *State) attention(l int) {
	c := s.cfg
	group := c.Heads / c.KVHeads
	s.attnLayer = l
	s.attnQB = 1
	if s.chain {
		s.attnQB = min(max(1, attnBlock/group), s.n)
	}
	s.attnBlocks = (s.n + s.attnQB - 1) / s.attnQB
	s.attnNext.Store(0)
	need := s.attnQB*group*(2*c.HeadDim+2+attnChunk) + (3*group+1)*attnChunk + c.HeadDim
	for w := range s.scratchF {
		if len(s.scratchF[w]) < need {
			s.scratchF[w] = make([]float32, need)
		}
	}
	s.m.Pool.For(len(s.scratchF), s.attnFn)
}

// attendRange runs tasks for workers [lo, hi) until none are left. Task t
// is KV head t%kvHeads of query block blocks-1-t/kvHeads: the blocks that
// see the most slots go first, so the last tasks to finish are short ones.
func (s *State) attendRange(lo, hi int) {
	kvHeads := s.cfg.KVHeads
	tasks := int64(s.attnBlocks * kvHeads)
	for w := lo; w < hi; w++ {
		for {
			t := int(s.attnNext.Add(1) - 1)
			if t >= int(tasks) {
				break
			}
			b := s.attnBlocks - 1 - t/kvHeads
			r0 := b * s.attnQB
			s.attendBlock(s.attnLayer, r0, min(r0+s.attnQB, s.n), t%kvHeads, s.scratchF[w], s.attnRose[w])
		}
	}
}

// attnChunk is how many consecutive slots a query's scores are computed
// for at once, before its softmax steps over them: the K and V rows of a
// chunk (attnChunk · headDim halves each) stay in L1 while the queries of
// a block go over them.
const attnChunk = 64

// attendBlock runs the query heads of KV head kvh (grouped-query attention:
// heads kvh·g … kvh·g+g-1) for query rows [r0, r1) of the pass (more than
// one row only for a chain): query i is row r0 + i/g, head kvh·g + i%g, so
// each key row is widened once for them all and each chunk's values are
// in cache for every head that reads them. It is ggml's CPU flash attention over an F16
// cache, step for step for each query, so that results round as
// llama.cpp's do: the query is rounded to F16, each score is an F16·F16
// dot product summed in the order of ggml_vec_dot_f16's AVX2 path, the
// softmax runs online over the slots in order, and the weighted sum of
// values accumulates in F16 (the exponentials are quant.Exp32's, glibc's
// expf bit for bit). The slots are taken in chunks: the scores of the whole block
// against a chunk come from one call that widens each key row once, and
// every query then goes over the chunk's values while they are in cache.
// Each query's steps are the same, in the same order, whatever block and
// chunk they fall in, which keeps every row's result independent of the
// batch around it. rose is the worker's buffer for quant.SoftmaxArgs's
// rose bits, a word per query head of the group.
func (s *State) attendBlock(l, r0, r1, kvh int, scratch []float32, rose []uint64) {
	c := s.cfg
	hd, qd, kvd := c.HeadDim, c.QDim(), c.KVDim()
	g := c.Heads / c.KVHeads
	nq := (r1 - r0) * g
	qs, scratch := scratch[:nq*hd], scratch[nq*hd:]
	accs, scratch := scratch[:nq*hd], scratch[nq*hd:]
	maxs, scratch := scratch[:nq], scratch[nq:]
	sums, scratch := scratch[:nq], scratch[nq:]
	scores, scratch := scratch[:nq*attnChunk], scratch[nq*attnChunk:]
	// Per query of a group (g of them, attnChunk apart): its value
	// updates' weights, the factors its accumulator is scaled by and its
	// steps' exponentials; per slot, whether some query's maximum rose
	// there.
	weights, scratch := scratch[:g*attnChunk], scratch[g*attnChunk:]
	factors, scratch := scratch[:g*attnChunk], scratch[g*attnChunk:]
	raised, scratch := scratch[:attnChunk], scratch[attnChunk:]
	exps, kbuf := scratch[:g*attnChunk], scratch[g*attnChunk:g*attnChunk+hd]
	for i := range nq {
		qh := qs[i*hd : (i+1)*hd]
		r, h := r0+i/g, kvh*g+i%g
		copy(qh, s.q[r*qd+h*hd:r*qd+(h+1)*hd])
		quant.RoundF16(qh)
		maxs[i], sums[i] = float32(math.Inf(-1)), 0
	}
	clear(accs)
	clear(raised)
	scale := float32(1 / math.Sqrt(float64(hd)))
	// steps takes the g queries from i (one row's heads) over n slots
	// whose scores are in sc (query i+k's attnChunk·k on): each query's
	// online softmax maximum and sum, the weight of each slot's value
	// update into weights, and at a slot where a query's maximum rises the
	// factor f its accumulator is scaled by before that slot's update (1
	// elsewhere, which would change no bit), marked in raised.
	steps := func(i, n int, sc []float32) {
		if groupSteps {
			// The group's queries together in quant's kernels: all but
			// the sums' chains go many slots at a time.
			quant.SoftmaxArgs(sc, exps, attnChunk, n, scale, maxs[i:i+g], rose)
			if n == attnChunk {
				quant.Exp32s(exps)
			} else {
				for k := range g {
					quant.Exp32s(exps[k*attnChunk : k*attnChunk+n])
				}
			}
			quant.SoftmaxSteps(exps, weights, factors, raised, attnChunk, n, rose, sums[i:i+g])
			return
		}
		// The exponentials first, all at once in a vector kernel: each
		// step's argument is its score against the maximum before it.
		for k := range g {
			expArgs(sc[k*attnChunk:k*attnChunk+n], exps[k*attnChunk:k*attnChunk+n], maxs[i+k], scale)
			quant.Exp32s(exps[k*attnChunk : k*attnChunk+n])
		}
		for k := range g {
			o := k * attnChunk
			m, sum := maxs[i+k], sums[i+k]
			for j, x := range sc[o : o+n] {
				var rose bool
				m, sum, weights[o+j], factors[o+j], rose = softmaxStep(x, exps[o+j], m, sum)
				if rose {
					raised[j] = 1
				}
			}
			maxs[i+k], sums[i+k] = m, sum
		}
	}
	// run takes the g queries from i (one row's heads) over n slots from
	// slot on, consecutive in the cache, whose scores are in sc: each
	// query's softmax steps, then the value updates of all g together
	// (quant.MadsF16Group) in runs between the slots where some query's
	// maximum rose, where those queries' accumulators are scaled. Each
	// query's accumulator sees its own steps in its own order, as if it
	// ran alone.
	run := func(i, slot, n int, sc []float32, vals []uint16) {
		steps(i, n, sc)
		off := slot*kvd + kvh*hd
		update := func(from, to int) {
			if to > from {
				quant.MadsF16Group(accs[i*hd:(i+g)*hd], hd, vals[off+from*kvd:], kvd, weights[from:], attnChunk, to-from)
			}
		}
		from := 0
		for j := range n {
			if raised[j] == 0 {
				continue
			}
			raised[j] = 0
			update(from, j)
			for k := range g {
				if f := factors[k*attnChunk+j]; f != 1 {
					quant.ScaleF16(accs[(i+k)*hd:(i+k+1)*hd], f)
				}
			}
			from = j
		}
		update(from, n)
	}
	// Slots [0, base) are seen by every query; then, in a chain, batch row
	// j (slot base+j) by queries j and later; in a tree (one query row),
	// the rows visible to it. Scores are computed for the whole block and
	// chunk at once (in a chain's last chunks, some for slots a query does
	// not see, which it then skips).
	last := s.base
	if s.chain {
		last = s.base + r1
	}
	keys, vals := s.Cache.Keys(l, max(last, 1)), s.Cache.Values(l, max(last, 1))
	for c0 := 0; c0 < last; c0 += attnChunk {
		c1 := min(c0+attnChunk, last)
		// Queries that see none of the chunk need no scores: in a chain
		// they are the first rows of the block.
		i0 := 0
		if s.chain {
			i0 = max(0, c0-s.base-r0) * g
		}
		quant.ScoresF16(scores[i0*attnChunk:], attnChunk, qs[i0*hd:], hd, keys[c0*kvd+kvh*hd:], kvd, c1-c0, kbuf)
		for i := i0; i < nq; i += g {
			// Row i/g sees slots below base+r0+i/g+1 (all of [0, base) in a tree).
			end := c1
			if s.chain {
				end = min(c1, s.base+r0+i/g+1)
			}
			run(i, c0, end-c0, scores[i*attnChunk:], vals)
		}
	}
	if !s.chain {
		keys, vals = s.Cache.Keys(l, s.base+s.total), s.Cache.Values(l, s.base+s.total)
		for _, j := range s.visible(s.treeRow(r0)) {
			slot := s.base + int(j)
			quant.ScoresF16(scores, attnChunk, qs, hd, keys[slot*kvd+kvh*hd:], kvd, 1, kbuf)
			for i := 0; i < nq; i += g {
				run(i, slot, 1, scores[i*attnChunk:], vals)
			}
		}
	}
	for i := range nq {
		r, h := r0+i/g, kvh*g+i%g
		out := s.att[r*qd+h*hd : r*qd+(h+1)*hd]
		acc := accs[i*hd : (i+1)*hd]
		inv := 1 / sums[i]
		for k := range out {
			out[k] = acc[k] * inv
		}
	}
}

// groupSteps lets attendBlock take the softmax steps of a KV head's query
// heads together (quant.SoftmaxArgs, SoftmaxSteps); the tests turn it off to hold them
// against the steps of one head at a time.
var groupSteps = true

// expArgs scales a query's scores (in place) and writes each slot's
// exponential argument against the running maximum before it, m at first:
// m-x where the score x exceeds it, else x-m.
func expArgs(sc, ex []float32, m, scale float32) {
	ex = ex[:len(sc)]
	for j, x := range sc {
		x *= scale
		sc[j] = x
		ex[j], m = expArg(x, m)
	}
}

// expArg is a slot's exponential argument against the running maximum m
// before it, and the maximum after it.
func expArg(x, m float32) (arg, nm float32) {
	if x > m {
		return m - x, x
	}
	return x - m, m
}

// softmaxStep is one slot of the online softmax, ggml's flash-attention
// step: from the slot's score x, e its exponential against the maximum m
// before it (exp(m-x) where x exceeds m, else exp(x-m)) and the sum so
// far, the new maximum and sum, the weight of the slot's value update, the
// factor the accumulator is scaled by before it, and whether the maximum
// rose. Where it holds, sum·1 is sum: the add alone gives the same bits a
// step's latency sooner.
func softmaxStep(x, e, m, sum float32) (nm, nsum, w, f float32, rose bool) {
	if x > m {
		// One rounding, as quant.SoftmaxSteps and ggml's S*ms + vs under
		// llama.cpp's FMA contraction.
		return x, float32(math.FMA(float64(sum), float64(e), 1)), 1, e, true
	}
	return m, sum + e, e, 1, false
}

// rmsNorm writes x / rms(x) ⊙ weight to dst (dst may alias x), rounding
// as ggml's rms_norm and mul do: each square rounded to float32 and summed
// in float64 in order, the mean rounded to float32, 1/sqrtf(mean+eps) in
// float32, x·scale rounded before the weight multiplies it. Exact squares
// or a double square root would be more accurate by a hair, and would make
// a row land on the other side of a rounding from llama.cpp's now and then.
func rmsNorm(dst, x, weight []float32, eps float32) {
	var sum float64
	for _, v := range x {
		sum += float64(float32(v * v))
	}
	mean := float32(sum / float64(len(x)))
	scale := 1 / float32(math.Sqrt(float64(mean+eps)))
	for i, v := range x {
		dst[i] = float32(v*scale) * weight[i]
	}
}

// fma32 is x·y+z rounded once, as llama.cpp's FMA-contracted C rounds it.
func fma32(x, y, z float32) float32 {
	return float32(math.FMA(float64(x), float64(y), float64(z)))
}

func addTo(dst, src []float32) {
	for i := range dst {
		dst[i] += src[i]
	}
}
