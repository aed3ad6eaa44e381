package quant

import (
	"fmt"
	"runtime"
	"sync/atomic"

	"shade/par"
)

// Matrix is a row-major weight matrix in place in a (possibly mmap'd) buffer.
// Data holds Rows*RowBytes(Cols) bytes: each row is Cols values of Type,
// encoded as whole blocks.
type Matrix struct {
	Type       Type
	Rows, Cols int
	Data       []byte

	pk *packing // set by Repackable: the row panels MatMul computes on
}

// NewMatrix checks that t is computed on, that cols is a whole number of
// blocks and that data holds rows full rows, and returns the Matrix over data
// (extra bytes are left out).
func NewMatrix(t Type, rows, cols int, data []byte) (Matrix, error) {
	if !t.Supported() {
		return Matrix{}, fmt.Errorf("quant: matrix %dx%d of %v: %w", rows, cols, t, ErrUnsupported)
	}
	if rows < 0 || cols <= 0 || cols%t.BlockSize() != 0 {
		return Matrix{}, fmt.Errorf("quant: matrix %dx%d of %v: %d columns is not a positive whole number of blocks of %d",
			rows, cols, t, cols, t.BlockSize())
	}
	need := rows * (cols / t.BlockSize() * t.BlockBytes())
	if len(data) < need {
		return Matrix{}, fmt.Errorf("quant: matrix %dx%d of %v: needs %d bytes, buffer has %d", rows, cols, t, need, len(data))
	}
	return Matrix{Type: t, Rows: rows, Cols: cols, Data: data[:need]}, nil
}

// rowBytes is the encoded size of one row.
func (m Matrix) rowBytes() int { return m.Cols / m.Type.BlockSize() * m.Type.BlockBytes() }

// Row returns the encoded bytes of row r.
func (m Matrix) Row(r int) []byte {
	rb := m.rowBytes()
	return m.Data[r*rb : (r+1)*rb]
}

// DequantizeRow decodes row r into dst[:m.Cols] (an embedding lookup).
func (m Matrix) DequantizeRow(r int, dst []float32) {
	if m.pk != nil {
		if p := m.pk.panels.Load(); p != nil {
			m.dequantizePanelRow(p.b, r, dst[:m.Cols])
			return
		}
	}
	dequantize(m.Type, m.Row(r), dst[:m.Cols])
}

// activation describes how MatMul feeds a weight type to its dot kernel:
// the type activations are converted to first (ggml's vec_dot_type) and the
// kernel, which takes the activations either encoded (dotQ) or as float32
// values (dotF).
type activation struct {
	typ  Type
	dotQ func(w, a []byte) float32
	dotF func(w []byte, x []float32) float32
}

func activationFor(t Type) activation {
	switch t {
	case Q4_0:
		return activation{typ: Q8_0, dotQ: k.dotQ4_0Q8_0}
	case Q8_0:
		return activation{typ: Q8_0, dotQ: k.dotQ8_0Q8_0}
	case Q4_K:
		return activation{typ: Q8_K, dotQ: k.dotQ4_KQ8_K}
	case Q6_K:
		return activation{typ: Q8_K, dotQ: k.dotQ6_KQ8_K}
	case Q4_1:
		return activation{typ: Q8_1, dotQ: k.dotQ4_1Q8_1}
	case Q5_0:
		return activation{typ: Q8_0, dotQ: k.dotQ5_0Q8_0}
	case Q5_1:
		return activation{typ: Q8_1, dotQ: k.dotQ5_1Q8_1}
	case IQ4_NL:
		return activation{typ: Q8_0, dotQ: k.dotIQ4_NLQ8_0}
	case Q3_K:
		return activation{typ: Q8_K, dotQ: k.dotQ3_KQ8_K}
	case Q5_K:
		return activation{typ: Q8_K, dotQ: k.dotQ5_KQ8_K}
	case Q2_K:
		return activation{typ: Q8_K, dotQ: k.dotQ2_KQ8_K}
	case IQ4_XS:
		return activation{typ: Q8_K, dotQ: k.dotIQ4_XSQ8_K}
	case F16:
		return activation{typ: F16, dotF: k.dotF16}
	case BF16:
		return activation{typ: BF16, dotF: k.dotBF16}
	case F32:
		return activation{typ: F32, dotF: dotF32Go}
	}
	panic(fmt.Sprintf("quant: MatMul on %v: %v", t, ErrUnsupported))
}

// Tile sizes of MatMul: rowTile rows of weights are swept against actTile
// activation rows at a time, so both stay in cache when n > 1. Chunks of
// rows given to threads are multiples of rowTile.
const (
	rowTile = gemmRows
	actTile = 8
)

// Scratch is reusable memory for MatMul: the converted activations and the
// loop state handed to the pool, kept so that a MatMul allocates nothing once
// the scratch has grown. The zero value is ready. A Scratch must not be used
// by two MatMul calls at once.
type Scratch struct {
	q []byte    // activations encoded as Q8_0 or Q8_K, n rows
	f []float32 // activations rounded to F16 or BF16, n rows
	g gemmActs  // the Q8_0 activations laid out for k.gemm

	job      matJob
	parts    [maxShared]matPart
	claims   [maxClaimShares]atomic.Uint64 // job's per-share block claims (matJob.claim)
	sharesFn func(lo, hi int)              // job.shares, bound once
	inputFn  func(lo, hi int)              // job.convert, bound once
}

// maxShared is how many matrices MatMulShared computes in one pass (the
// query, key and value projections are three).
const maxShared = 3

// matJob is the state of one MatMul, shared by its chunks: the activations,
// converted once, and the matrices they multiply (one, or MatMulShared's).
type matJob struct {
	act     activation
	cols    int
	x       []float32 // the n input rows
	xq      []byte    // converted activations (encoded types)
	xf      []float32 // converted activations (float types)
	arb     int       // bytes per encoded activation row
	n       int
	quant8  func(x []float32, dst []byte)
	g       *gemmActs // the Q8_0 activations laid out for k.gemm, when it computes Q4_0 or Q8_0
	parts   []matPart // the matrices
	nshares int       // how many shares each part's rows are cut into
	// With claims set, each share is cut into blocks that its owner takes
	// from the front and a thread that has finished its own takes from the
	// back (matJob.shares); claims[t] packs share t's next front block and
	// its end.
	claims []atomic.Uint64
	blocks [maxShared]int // rows of a block of each part (a multiple of claimBlockRows)
}

// maxClaimShares bounds the shares a product can balance by claiming
// blocks; a pool with more threads splits statically.
const maxClaimShares = 64

// claimBlockBytes is about how many bytes of weights each block holds when
// threads balance a product by claiming blocks. In decode the two threads'
// shares of one product ran 20% apart at random (Zen 4, 2 vCPUs: 4.5 ms of
// a 24 ms token spent waiting for the slower half), so a thread that
// finishes first takes the other's last blocks; the last block bounds how
// far apart they finish. Smaller blocks even the finish out more finely but
// restart the kernels' read streams more often: against the static split,
// decode on Zen 4 (alternated in one process) took 256 KiB blocks 4-10%
// slower than 512 KiB, and 1 MiB no faster. 0 turns claiming off.
var claimBlockBytes = 512 << 10

// claimBlockRows divides every block's rows (a multiple of rowTile). The
// one-row Q4_0 and Q8_0 panel kernels on amd64 read 8 panels of 16 rows far
// apart at once and take a remainder one panel at a time, which blocks of 14
// panels (an 8B's 512 KiB) left to that slower path for most of their rows:
// 0.92x the static split's decode; in multiples of 128 rows, 1.07x.
// A variable so that the tests can cut blocks of one row tile.
var claimBlockRows = 128

// matPart is one matrix of a matJob.
type matPart struct {
	m      Matrix
	rb     int // m.rowBytes()
	act    activation
	y      []float32
	panels []byte // m's row panels, when k.gemmPanel or k.gemmKPanel computes it
}

// MatMul computes y[i*m.Rows + r] = dot(m row r, x[i*m.Cols:(i+1)*m.Cols]) for
// i in [0,n). Like llama.cpp, it first converts the activations to the type
// the weight type's dot product pairs with: Q8_0 for Q4_0 and Q8_0, Q8_K for
// Q4_K and Q6_K, F16 for F16, BF16 for BF16, none for F32. The work is split
// over rows of m on p (nil runs on the caller). buf is reusable scratch
// (grown as needed, may be nil). MatMul panics if x or y is too short.
func MatMul(p *par.Pool, m Matrix, x []float32, n int, y []float32, buf *Scratch) {
	if n <= 0 || m.Rows == 0 {
		return
	}
	if buf == nil {
		buf = new(Scratch)
	}
	buf.parts[0] = matPart{m: m, y: y}
	matMul(p, buf.parts[:1], x, n, buf)
}

// MatMulShared computes MatMul(p, ms[i], x, n, ys[i], buf) for every i, with
// the same bits, in one pass: x is converted once and each thread computes
// its share of every matrix, so that a layer's query, key and value
// projections (or its FFN gate and up) cost one conversion and one fork and
// join instead of three (or two). Matrices that do not share the
// activations' type, layout and length (a Q4_0 beside a Q8_0, say) are
// computed one after another. At most three matrices.
func MatMulShared(p *par.Pool, ms []Matrix, x []float32, n int, ys [][]float32, buf *Scratch) {
	if len(ms) != len(ys) || len(ms) > maxShared {
		panic(fmt.Sprintf("quant: MatMulShared of %d matrices into %d outputs (at most %d)", len(ms), len(ys), maxShared))
	}
	if n <= 0 {
		return
	}
	if buf == nil {
		buf = new(Scratch)
	}
	for i := 0; i < len(ms); {
		j := i + 1
		for j < len(ms) && sharesActivations(ms[j-1], ms[j]) {
			j++
		}
		parts := buf.parts[:0]
		for e := i; e < j; e++ {
			if ms[e].Rows > 0 {
				parts = append(parts, matPart{m: ms[e], y: ys[e]})
			}
		}
		if len(parts) > 0 {
			matMul(p, parts, x, n, buf)
		}
		i = j
	}
}

// sharesActivations reports whether one conversion of the activations and
// one pass can serve a and b: the same columns and activation type, and the
// same type where that decides the layout for k.gemm (Q4_0 and Q8_0 differ
// in its correction).
func sharesActivations(a, b Matrix) bool {
	if a.Cols != b.Cols {
		return false
	}
	at, bt := activationFor(a.Type).typ, activationFor(b.Type).typ
	if at != bt {
		return false
	}
	return at != Q8_0 || a.Type == b.Type
}

// matMul computes the products of parts' matrices (one, or a group that
// sharesActivations) with the n rows of x.
func matMul(p *par.Pool, parts []matPart, x []float32, n int, buf *Scratch) {
	m := parts[0].m
	grains := 0 // the most row tiles of any part
	for i := range parts {
		pt := &parts[i]
		grains = max(grains, (pt.m.Rows+rowTile-1)/rowTile)
		if len(x) < n*pt.m.Cols || len(pt.y) < n*pt.m.Rows {
			panic(fmt.Sprintf("quant: MatMul %dx%d %v by %d rows: x has %d values (want %d), y has %d (want %d)",
				pt.m.Rows, pt.m.Cols, pt.m.Type, n, len(x), n*pt.m.Cols, len(pt.y), n*pt.m.Rows))
		}
		pt.rb, pt.act = pt.m.rowBytes(), activationFor(pt.m.Type)
	}
	if buf.sharesFn == nil {
		buf.sharesFn = buf.job.shares
		buf.inputFn = buf.job.convert
	}
	j := &buf.job
	*j = matJob{act: activationFor(m.Type), cols: m.Cols, x: x[:n*m.Cols], n: n, parts: parts}

	switch j.act.typ {
	case Q8_0, Q8_K, Q8_1:
		j.arb = m.Cols / j.act.typ.BlockSize() * j.act.typ.BlockBytes()
		j.quant8 = k.quantizeQ8_0
		if j.act.typ == Q8_K {
			j.quant8 = k.quantizeQ8_K
		}
		if j.act.typ == Q8_1 {
			j.quant8 = k.quantizeQ8_1
		}
		buf.q = grow(buf.q, n*j.arb)
		j.xq = buf.q
		for i := range parts {
			if parts[i].m.Type == Q4_K {
				parts[i].panels = parts[i].m.panelsFor(p)
			}
		}
		if k.gemm != nil && (m.Type == Q4_0 || m.Type == Q8_0) {
			nb := m.Cols / qk8_0
			g := &buf.g
			g.n, g.nb = n, nb
			g.q = grow(g.q, n*nb*qk8_0)
			g.side = grow(g.side, 2*n*nb)
			j.g = g
			for i := range parts {
				parts[i].panels = parts[i].m.panelsFor(p)
			}
		}
		p.For(n, buf.inputFn)
	case F16, BF16:
		buf.f = grow(buf.f, n*m.Cols)
		j.xf = buf.f
		p.For(n, buf.inputFn)
	case F32:
		j.xf = j.x
	}
	// Each thread takes its share of every matrix, the rows ForGrain by
	// rowTile would give it for that matrix alone (so one matrix is split
	// as ForGrain splits it), rather than a run of the matrices laid end to
	// end: that left the Q4_K decode 7-11% slower (Zen 5). The shares are
	// cut into blocks that a thread done with its own takes from the others
	// (matJob.shares).
	j.nshares = min(p.Threads(), grains)
	if j.nshares > 1 && j.nshares <= maxClaimShares && claimBlockBytes > 0 {
		j.claims = buf.claims[:j.nshares]
		j.startClaims()
	}
	p.For(j.nshares, buf.sharesFn)
	for i := range parts {
		runtime.KeepAlive(parts[i].m.pk) // panels may be memory the collector frees with m.pk
		parts[i] = matPart{}             // drop references to the caller's buffers
	}
	*j = matJob{}
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// convert converts activation rows [lo, hi).
func (j *matJob) convert(lo, hi int) {
	c := j.cols
	for i := lo; i < hi; i++ {
		x := j.x[i*c : (i+1)*c]
		switch j.act.typ {
		case Q8_0, Q8_K, Q8_1:
			j.quant8(x, j.xq[i*j.arb:(i+1)*j.arb])
			if j.g != nil {
				j.g.put(j.parts[0].m.Type, i, j.xq[i*j.arb:(i+1)*j.arb])
			}
		case F16:
			out := j.xf[i*c : (i+1)*c]
			for e, v := range x {
				out[e] = F16ToF32(F32ToF16(v))
			}
		case BF16:
			out := j.xf[i*c : (i+1)*c]
			for e, v := range x {
				out[e] = BF16ToF32(F32ToBF16(v))
			}
		}
	}
}

// shares computes shares [lo, hi) of every matrix of the job: share t of a
// matrix is its rows in chunk t of j.nshares as ForGrain by rowTile cuts them.
// With claims, each share is cut into blocks, its owner takes them front to
// back (one read stream, as without blocks) and then takes blocks from the
// back of the share with the most left, until none is. Each output row is
// computed once, by one kernel call whatever the cut, so the bits do not
// depend on who computes it.
func (j *matJob) shares(lo, hi int) {
	if j.claims == nil {
		for t := lo; t < hi; t++ {
			for i := range j.parts {
				pt := &j.parts[i]
				if r0, r1 := par.Chunk(t, j.nshares, pt.m.Rows, rowTile); r0 < r1 {
					j.partRows(pt, r0, r1)
				}
			}
		}
		return
	}
	for t := lo; t < hi; t++ {
		for {
			b, ok := j.claim(t, false)
			if !ok {
				break
			}
			j.block(t, b)
		}
	}
	for {
		t, most := -1, 0
		for s := range j.claims {
			v := j.claims[s].Load()
			if left := int(v&0xffffffff) - int(v>>32); left > most {
				t, most = s, left
			}
		}
		if t < 0 {
			return
		}
		if b, ok := j.claim(t, true); ok {
			j.block(t, b)
		}
	}
}

// startClaims cuts every share into blocks of about claimBlockBytes, a
// multiple of claimBlockRows rows (a share's last block takes what is left),
// and sets each share's claims to all of its blocks.
func (j *matJob) startClaims() {
	for i := range j.parts {
		rows := claimBlockBytes / j.parts[i].rb
		j.blocks[i] = max(claimBlockRows, (rows+claimBlockRows/2)/claimBlockRows*claimBlockRows)
	}
	for t := range j.claims {
		n := 0
		for i := range j.parts {
			_, _, blocks := j.partBlocks(t, i)
			n += blocks
		}
		j.claims[t].Store(uint64(n))
	}
}

// partBlocks returns part i's rows [r0, r1) in share t and how many blocks
// they are cut into.
func (j *matJob) partBlocks(t, i int) (r0, r1, blocks int) {
	r0, r1 = par.Chunk(t, j.nshares, j.parts[i].m.Rows, rowTile)
	if r0 >= r1 {
		return r0, r1, 0
	}
	return r0, r1, (r1 - r0 + j.blocks[i] - 1) / j.blocks[i]
}

// claim takes share t's first block not yet taken, or with back its last.
func (j *matJob) claim(t int, back bool) (int, bool) {
	c := &j.claims[t]
	for {
		v := c.Load()
		front, end := v>>32, v&0xffffffff
		if front >= end {
			return 0, false
		}
		if back {
			if c.CompareAndSwap(v, front<<32|(end-1)) {
				return int(end - 1), true
			}
		} else if c.CompareAndSwap(v, (front+1)<<32|end) {
			return int(front), true
		}
	}
}

// block computes block b of share t: the parts' blocks of the share, in
// order, are numbered from 0.
func (j *matJob) block(t, b int) {
	for i := range j.parts {
		r0, r1, n := j.partBlocks(t, i)
		if b < n {
			lo := r0 + b*j.blocks[i]
			j.partRows(&j.parts[i], lo, min(lo+j.blocks[i], r1))
			return
		}
		b -= n
	}
}

// partRows computes the outputs of rows [lo, hi) of pt's matrix for every
// activation row, tile by tile.
func (j *matJob) partRows(pt *matPart, lo, hi int) {
	R, c := pt.m.Rows, pt.m.Cols
	if j.act.typ == Q8_K && pt.panels != nil {
		// Q4_K on panels: chunks are whole panels (ForGrain by rowTile, a
		// multiple of q4kPanelRows; Repackable asks rows to be one too).
		k.gemmKPanel(pt.panels, c/qkK, lo, hi, j.xq, j.arb, j.n, pt.y, R)
		return
	}
	if j.act.typ == Q8_K && k.hasGemmK(pt.m.Type) {
		// Every output, whatever n, is the per-row Go twin's; types
		// without batched kernels take the per-row loop below.
		k.gemmK(pt.m.Type, pt.m.Data, pt.rb, lo, hi, j.xq, j.arb, j.n, pt.y, R)
		return
	}
	if k.hasGemmQ8(pt.m.Type) {
		// Q4_1, Q5_0, Q5_1, IQ4_NL on a batched kernel: every output, whatever
		// n, is the per-row Go twin's.
		k.gemmQ8(pt.m.Type, pt.m.Data, pt.rb, lo, hi, j.xq, j.arb, j.n, pt.y, R)
		return
	}
	if pt.panels != nil {
		// Chunks are whole panels: rows and chunks are multiples of
		// panelRows (Repackable, ForGrain by rowTile).
		k.gemmPanel(pt.m.Type, pt.panels, pt.rb, lo, hi, j.g, j.n, pt.y, R)
		return
	}
	if j.g != nil {
		// Every output of a Q4_0 or Q8_0 product, whatever n, comes from
		// k.gemm, whose results do not depend on the tiling (gemm.go).
		for r0 := lo; r0 < hi; r0 += gemmRows {
			k.gemm(pt.m.Type, pt.m.Data, pt.rb, r0, min(gemmRows, hi-r0), j.g, 0, j.n, pt.y[r0:], R)
		}
		return
	}
	for r0 := lo; r0 < hi; r0 += rowTile {
		r1 := min(r0+rowTile, hi)
		for i0 := 0; i0 < j.n; i0 += actTile {
			i1 := min(i0+actTile, j.n)
			for r := r0; r < r1; r++ {
				w := pt.m.Data[r*pt.rb : (r+1)*pt.rb]
				if pt.act.dotQ != nil {
					for i := i0; i < i1; i++ {
						pt.y[i*R+r] = pt.act.dotQ(w, j.xq[i*j.arb:(i+1)*j.arb])
					}
				} else {
					for i := i0; i < i1; i++ {
						pt.y[i*R+r] = pt.act.dotF(w, j.xf[i*c:(i+1)*c])
					}
				}
			}
		}
	}
}
