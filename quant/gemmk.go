package quant

// Batched Q4_K and Q6_K products (kernelSet.gemmK). Their results are
// defined by the per-row Go twins: output (row r, activation row i) is
// dotQ4_KQ8_KGo or dotQ6_KQ8_KGo of weight row r and activation row i, bit
// for bit, with the same exact integer sums per super-block (Q6_K: the same
// eight int32 lanes) and the same float32 operations in the same order,
// each rounded once (Q6_K's fused multiply-adds are one rounding). The kernels
// differ only in how much work they share: a super-block of weights is
// unpacked once and applied to several activation rows, or several rows are
// read at once for one activation row. So a row's outputs do not depend on
// the batch it is computed in (speculative decoding stays lossless), and the
// generic kernel set, which has no gemmK, gives the same bits.

// gemmKGo is the Go twin of gemmK: outputs of weight rows [lo, hi) of w
// (type t, Q4_K or Q6_K, row stride rb bytes) for the n Q8_K activation rows
// of a (row stride arb bytes), stored at y[i*ys+r].
func gemmKGo(t Type, w []byte, rb, lo, hi int, a []byte, arb, n int, y []float32, ys int) {
	dot := dotQ4_KQ8_KGo
	if t == Q6_K {
		dot = dotQ6_KQ8_KGo
	}
	for i := 0; i < n; i++ {
		ai := a[i*arb:]
		for r := lo; r < hi; r++ {
			y[i*ys+r] = dot(w[r*rb:(r+1)*rb], ai)
		}
	}
}

// gemmKShape is the assembly gemmK wrappers' common prologue: it returns
// the type's kernel index (0 for Q4_K, 1 for Q6_K) and the whole weight
// blocks per row, nb, after checking that every byte the assembly will read
// unchecked is in bounds (rows [lo, hi) of nb blocks, n activation rows of
// nb blocks, n output rows). nb is 0 when there is nothing for the assembly
// to do: an empty range, or rows shorter than a block, whose outputs it
// clears.
func gemmKShape(t Type, w []byte, rb, lo, hi int, a []byte, arb, n int, y []float32, ys int) (ti, nb int) {
	if lo >= hi || n <= 0 {
		return 0, 0
	}
	bs := q4_KBytes
	if t == Q6_K {
		ti, bs = 1, q6_KBytes
	} else if t != Q4_K {
		panic("quant: gemmK on " + t.String())
	}
	if nb = rb / bs; nb == 0 {
		for i := 0; i < n; i++ {
			clear(y[i*ys+lo : i*ys+hi])
		}
		return ti, 0
	}
	_ = w[(hi-1)*rb+nb*bs-1]
	_ = a[(n-1)*arb+nb*q8_KBytes-1]
	_ = y[(n-1)*ys+hi-1]
	return ti, nb
}
