//go:build amd64 && !noasm && gc

package quant

// Every amd64 set (each has AVX2, FMA and F16C) computes the legacy types
// with the AVX2 kernels of legacy_amd64.s. The VNNI sets keep them: the
// float order (legacy.go) chains every block's VFMADD231PS into the one
// accumulator, and that chain, not the multiplies a VNNI instruction would
// fuse, bounds them. Batches of four activation rows or more take the
// batched kernels (gemmQ8, through gemmLegacy).
var _ = archHook(func(s *kernelSet) {
	s.dotQ4_1Q8_1 = dotQ4_1Q8_1_amd64
	s.dotQ5_0Q8_0 = dotQ5_0Q8_0_amd64
	s.dotQ5_1Q8_1 = dotQ5_1Q8_1_amd64
	s.dotIQ4_NLQ8_0 = dotIQ4_NLQ8_0_amd64
	s.gemmQ8 = gemmLegacyAVX2
	s.gemmQ8Types = 1<<Q4_1 | 1<<Q5_0 | 1<<Q5_1 | 1<<IQ4_NL
})

// gemmLegacyAVX2 is gemmQ8 (dispatch.go) for Q4_1, Q5_0, Q5_1 and IQ4_NL.
func gemmLegacyAVX2(t Type, w []byte, rb, lo, hi int, a []byte, arb, n int, y []float32, ys int) {
	switch t {
	case Q4_1:
		gemmLegacy(dotQ4_1Q8_1AVX2, q41Row4AVX2, q4_1Bytes, q8_1Bytes, w, rb, lo, hi, a, arb, n, y, ys)
	case Q5_0:
		gemmLegacy(dotQ5_0Q8_0AVX2, q50Row4AVX2, q5_0Bytes, q8_0Bytes, w, rb, lo, hi, a, arb, n, y, ys)
	case Q5_1:
		gemmLegacy(dotQ5_1Q8_1AVX2, q51Row4AVX2, q5_1Bytes, q8_1Bytes, w, rb, lo, hi, a, arb, n, y, ys)
	case IQ4_NL:
		gemmLegacy(dotIQ4_NLQ8_0AVX2, iq4nlRow4AVX2, iq4nlBytes, q8_0Bytes, w, rb, lo, hi, a, arb, n, y, ys)
	default:
		panic("quant: gemmLegacyAVX2 on " + t.String())
	}
}

// legRow4Func is the signature of the batched legacy kernels: one weight
// row of nb > 0 blocks against the 4 activation rows at a, a+arb, a+2arb,
// a+3arb, output i at y[i*ys], each block decoded once for the four, every
// output with its own accumulators in its row dot's order.
type legRow4Func = func(w, a *byte, arb, nb int, y *float32, ys int)

// Tiling of gemmLegacy (as gemmK35's): legTileRows weight rows are swept
// against each group of at most legActs activation rows, so the tile's
// rows stay in cache from group to group.
var (
	legTileRows = 16
	legActs     = 16
)

// gemmLegacy computes y[i*ys+r] for rows [lo, hi) of w (rb bytes a row,
// blocks of bs bytes) and n activation rows of blocks of ab bytes, arb
// bytes apart: four activation rows at a time on f4, the rest (and n < 4
// entirely: decoding a block for one row costs more than it saves) on the
// row dot, but for three left over, which take f4 on a group's last four.
// Every output is the row dot's bits, whatever n or the split.
func gemmLegacy(dot func(w, a *byte, nb int) float32, f4 legRow4Func, bs, ab int, w []byte, rb, lo, hi int, a []byte, arb, n int, y []float32, ys int) {
	if lo >= hi || n <= 0 {
		return
	}
	nb := rb / bs
	if nb == 0 {
		for i := 0; i < n; i++ {
			clear(y[i*ys+lo : i*ys+hi])
		}
		return
	}
	// The assembly reads and writes unchecked: check the last of each.
	_ = w[(hi-1)*rb+nb*bs-1]
	_ = a[(n-1)*arb+nb*ab-1]
	_ = y[(n-1)*ys+hi-1]
	for r0 := lo; r0 < hi; r0 += legTileRows {
		r1 := min(r0+legTileRows, hi)
		for c0 := 0; c0 < n; c0 += legActs {
			c := min(legActs, n-c0)
			c4 := c &^ 3
			for r := r0; r < r1; r++ {
				for i := c0; i < c0+c4; i += 4 {
					f4(&w[r*rb], &a[i*arb], arb, nb, &y[i*ys+r], ys)
				}
				if c-c4 == 3 && c4 > 0 {
					// The last four rows on f4 cost less than three row
					// dots; the row computed again gets the same bits.
					i := c0 + c - 4
					f4(&w[r*rb], &a[i*arb], arb, nb, &y[i*ys+r], ys)
					continue
				}
				for i := c0 + c4; i < c0+c; i++ {
					y[i*ys+r] = dot(&w[r*rb], &a[i*arb], nb)
				}
			}
		}
	}
}

// The wrappers have the signatures and bits of the Go twins in legacy.go
// for any bytes in either argument: nb whole weight blocks from len(w),
// with a holding at least nb activation blocks (checked here, since the
// assembly reads unchecked).

func dotQ4_1Q8_1_amd64(w, a []byte) float32 {
	nb := len(w) / q4_1Bytes
	if nb == 0 {
		return 0
	}
	_ = a[nb*q8_1Bytes-1]
	return dotQ4_1Q8_1AVX2(&w[0], &a[0], nb)
}

func dotQ5_0Q8_0_amd64(w, a []byte) float32 {
	nb := len(w) / q5_0Bytes
	if nb == 0 {
		return 0
	}
	_ = a[nb*q8_0Bytes-1]
	return dotQ5_0Q8_0AVX2(&w[0], &a[0], nb)
}

func dotQ5_1Q8_1_amd64(w, a []byte) float32 {
	nb := len(w) / q5_1Bytes
	if nb == 0 {
		return 0
	}
	_ = a[nb*q8_1Bytes-1]
	return dotQ5_1Q8_1AVX2(&w[0], &a[0], nb)
}

func dotIQ4_NLQ8_0_amd64(w, a []byte) float32 {
	nb := len(w) / iq4nlBytes
	if nb == 0 {
		return 0
	}
	_ = a[nb*q8_0Bytes-1]
	return dotIQ4_NLQ8_0AVX2(&w[0], &a[0], nb)
}

// Implemented in legacy_amd64.s; nb > 0 blocks at w and a.

//go:noescape
func dotQ4_1Q8_1AVX2(w, a *byte, nb int) float32

//go:noescape
func dotQ5_0Q8_0AVX2(w, a *byte, nb int) float32

//go:noescape
func dotQ5_1Q8_1AVX2(w, a *byte, nb int) float32

//go:noescape
func dotIQ4_NLQ8_0AVX2(w, a *byte, nb int) float32

// Implemented in legacy_amd64.s: legRow4Func, AVX2, FMA and F16C.

//go:noescape
func q41Row4AVX2(w, a *byte, arb, nb int, y *float32, ys int)

//go:noescape
func q50Row4AVX2(w, a *byte, arb, nb int, y *float32, ys int)

//go:noescape
func q51Row4AVX2(w, a *byte, arb, nb int, y *float32, ys int)

//go:noescape
func iq4nlRow4AVX2(w, a *byte, arb, nb int, y *float32, ys int)
