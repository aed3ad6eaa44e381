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
	n, dim := s.n, c.Dim
	pool := s.m.Pool
	s.layerL, s.layerW = l, w

	s.perRow(n, s.attnNormFn)
	quant.MatMul(pool, w.Wq, s.xb, n, s.q, &s.scratch)
	quant.MatMul(pool, w.Wk, s.xb, n, s.k, &s.scratch)
	quant.MatMul(pool, w.Wv, s.xb, n, s.v, &s.scratch)
	s.perRow(n, s.qkvFn)

	t0 := time.Now()
	s.attention(l)
	s.AttnTime += time.Since(t0)
	quant.MatMul(pool, w.Wo, s.att, n, s.proj, &s.scratch)
	addTo(s.x[:n*dim], s.proj[:n*dim])

	s.perRow(n, s.ffnNormFn)
	quant.MatMul(pool, w.Gate, s.xb, n, s.hb, &s.scratch)
	quant.MatMul(pool, w.Up, s.xb, n, s.hb2, &s.scratch)
	if n == 1 {
		s.swiglu(0, c.FFN)
	} else {
		pool.ForGrain(n*c.FFN, 1024, s.swigluFn)
	}
	quant.MatMul(pool, w.Down, s.hb, n, s.proj, &s.scratch)
	addTo(s.x[:n*dim], s.proj[:n*dim])
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

// attnNormRows and ffnNormRows write rms-normed rows [lo, hi) of the
// residual stream to s.xb, with the layer's attention or FFN norm.
func (s *State) attnNormRows(lo, hi int) { s.normRows(lo, hi, s.layerW.AttnNorm) }
func (s *State) ffnNormRows(lo, hi int)  { s.normRows(lo, hi, s.layerW.FFNNorm) }

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

// swiglu computes hb[i] = silu(hb[i]) · hb2[i] for i in [lo, hi).
func (s *State) swiglu(lo, hi int) { quant.SiLUMul(s.hb[lo:hi], s.hb2[lo:hi]) }

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
			*a = x0*cos[i] - x1*sin[i]
			*b = x0*sin[i] + x1*cos[i]
		}
	}
}

// attention computes softmax(q·Kᵀ/√d)·V for every (row, head) of the batch
// into s.att. Row i sees the committed cache and the batch rows visible to
// it. Work is spread over the pool by (row, head) pairs.
func (s *State) attention(l int) {
	s.attnLayer = l
	s.m.Pool.For(len(s.scratchF), s.attnFn)
}

// attendRange runs the (row, head) tasks of workers [lo, hi): worker w takes
// tasks w, w+workers, … so each worker owns one scratch buffer.
func (s *State) attendRange(lo, hi int) {
	heads := s.cfg.Heads
	tasks := s.n * heads
	workers := len(s.scratchF)
	for w := lo; w < hi; w++ {
		for t := w; t < tasks; t += workers {
			s.attendOne(s.attnLayer, t/heads, t%heads, s.scratchF[w])
		}
	}
}

// attendOne is ggml's CPU flash attention over an F16 cache, step for step,
// so that results round as llama.cpp's do: the query is rounded to F16, each
// score is an F16·F16 dot product, the softmax runs online, and the
// weighted sum of values accumulates in F16.
func (s *State) attendOne(l, row, h int, scratch []float32) {
	c := s.cfg
	hd := c.HeadDim
	kvh := h / (c.Heads / c.KVHeads)
	qh, acc := scratch[:hd], scratch[hd:2*hd]
	copy(qh, s.q[row*c.QDim()+h*hd:row*c.QDim()+(h+1)*hd])
	quant.RoundF16(qh)
	clear(acc)
	scale := float32(1 / math.Sqrt(float64(hd)))
	maxScore := float32(math.Inf(-1))
	var sum float32
	attend := func(slot int) {
		score := quant.DotF16(qh, s.Cache.K(l, slot)[kvh*hd:(kvh+1)*hd]) * scale
		ms, vs := float32(1), float32(1)
		if score > maxScore {
			ms = float32(math.Exp(float64(maxScore - score)))
			maxScore = score
			quant.ScaleF16(acc, ms)
		} else {
			vs = float32(math.Exp(float64(score - maxScore)))
		}
		quant.MadF16(acc, s.Cache.V(l, slot)[kvh*hd:(kvh+1)*hd], vs)
		sum = sum*ms + vs
	}
	for slot := 0; slot < s.base; slot++ {
		attend(slot)
	}
	if s.chain {
		for j := 0; j <= row; j++ {
			attend(s.base + j)
		}
	} else {
		for _, j := range s.visible(s.treeRow(row)) {
			attend(s.base + int(j))
		}
	}
	out := s.att[row*c.QDim()+h*hd : row*c.QDim()+(h+1)*hd]
	inv := 1 / sum
	for i := range out {
		out[i] = acc[i] * inv
	}
}

// rmsNorm writes x / rms(x) ⊙ weight to dst (dst may alias x).
func rmsNorm(dst, x, weight []float32, eps float32) {
	var ss float64
	for _, v := range x {
		ss += float64(v) * float64(v)
	}
	scale := float32(1 / math.Sqrt(ss/float64(len(x))+float64(eps)))
	for i, v := range x {
		dst[i] = v * scale * weight[i]
	}
}

func addTo(dst, src []float32) {
	for i := range dst {
		dst[i] += src[i]
	}
}
