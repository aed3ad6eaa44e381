//go:build amd64 && !noasm && gc

package quant

// The AVX2 Q3_K and Q5_K kernels (k35_amd64.s) go into every amd64 set,
// as dot products and as gemmK: the set's gemmK keeps Q4_K and Q6_K and
// hands these two types to gemmK35AVX2.
var _ = archHook(hookK35)

func hookK35(s *kernelSet) {
	switch s.name {
	case "avx2", "avxvnni", "avx512":
	default:
		return
	}
	s.dotQ3_KQ8_K = dotQ3_KQ8_K_amd64
	s.dotQ5_KQ8_K = dotQ5_KQ8_K_amd64
	prev := s.gemmK
	s.gemmK = func(t Type, w []byte, rb, lo, hi int, a []byte, arb, n int, y []float32, ys int) {
		if t == Q3_K || t == Q5_K {
			gemmK35AVX2(t, w, rb, lo, hi, a, arb, n, y, ys)
			return
		}
		prev(t, w, rb, lo, hi, a, arb, n, y, ys)
	}
	s.gemmKTypes |= 1<<Q3_K | 1<<Q5_K
}

// k35RowFunc is the signature of q3kRowAVX2 and q5kRowAVX2: one weight row
// of nb > 0 super-blocks against c > 0 activation rows arb bytes apart,
// output i at y[i*ys].
type k35RowFunc = func(w, a *byte, arb, nb int, y *float32, ys, c int)

// k35Kernel returns t's row kernel and block size.
func k35Kernel(t Type) (k35RowFunc, int) {
	if t == Q3_K {
		return q3kRowAVX2, q3_KBytes
	}
	return q5kRowAVX2, q5_KBytes
}

// dotQ3_KQ8_K_amd64 is dotQ3_KQ8_KGo, bit for bit, for any bytes.
func dotQ3_KQ8_K_amd64(w, a []byte) float32 { return dotK35(Q3_K, w, a) }

// dotQ5_KQ8_K_amd64 is dotQ5_KQ8_KGo, bit for bit, for any bytes.
func dotQ5_KQ8_K_amd64(w, a []byte) float32 { return dotK35(Q5_K, w, a) }

func dotK35(t Type, w, a []byte) float32 {
	f, bs := k35Kernel(t)
	nb := len(w) / bs
	if nb == 0 {
		return 0
	}
	_ = a[nb*q8_KBytes-1] // the assembly reads nb whole activation blocks
	var y float32
	f(&w[0], &a[0], 0, nb, &y, 0, 1)
	return y
}

// Tiling of gemmK35AVX2: k35TileRows weight rows are swept against each
// group of at most k35Acts activation rows, each row's super-blocks
// unpacked once per group.
var (
	k35TileRows = 16
	k35Acts     = 16
)

// gemmK35AVX2 is gemmKGo for Q3_K and Q5_K weights on the row kernels:
// every output is the per-row twin's bits whatever n or the split.
func gemmK35AVX2(t Type, w []byte, rb, lo, hi int, a []byte, arb, n int, y []float32, ys int) {
	if lo >= hi || n <= 0 {
		return
	}
	f, bs := k35Kernel(t)
	nb := rb / bs
	if nb == 0 {
		for i := 0; i < n; i++ {
			clear(y[i*ys+lo : i*ys+hi])
		}
		return
	}
	// The assembly reads and writes unchecked: check the last of each.
	_ = w[(hi-1)*rb+nb*bs-1]
	_ = a[(n-1)*arb+nb*q8_KBytes-1]
	_ = y[(n-1)*ys+hi-1]
	for r0 := lo; r0 < hi; r0 += k35TileRows {
		r1 := min(r0+k35TileRows, hi)
		for c0 := 0; c0 < n; c0 += k35Acts {
			c := min(k35Acts, n-c0)
			for r := r0; r < r1; r++ {
				f(&w[r*rb], &a[c0*arb], arb, nb, &y[c0*ys+r], ys, c)
			}
		}
	}
}

//go:noescape
func q3kRowAVX2(w, a *byte, arb, nb int, y *float32, ys, c int)

//go:noescape
func q5kRowAVX2(w, a *byte, arb, nb int, y *float32, ys, c int)
