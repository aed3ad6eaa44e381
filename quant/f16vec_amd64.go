//go:build amd64 && !noasm && gc

package quant

import "golang.org/x/sys/cpu"

//go:noescape
func madF16AVX2(acc *float32, v *uint16, n int, s float32)

//go:noescape
func scaleF16AVX2(acc *float32, n int, s float32)

//go:noescape
func toF16AVX2(dst *uint16, src *float32, n int)

//go:noescape
func roundF16AVX2(x *float32, n int)

//go:noescape
func scoresF16AVX2(out *float32, ldo int, q *float32, nq int, k *uint16, stride, count, hd int, kbuf *float32)

//go:noescape
func scores4F16AVX2(out *float32, q *float32, k *uint16, stride, groups, nb int)

//go:noescape
func madsF16AVX2(acc *float32, v *uint16, stride int, w *float32, count, n int)

//go:noescape
func scoresG4F16AVX512(out *float32, ldo int, q *float32, hd int, k *uint16, stride, pairs int)

//go:noescape
func mads4F16AVX512(acc *float32, n int, v *uint16, stride int, w *float32, ws, count int)

//go:noescape
func mads3F16AVX512(acc *float32, n int, v *uint16, stride int, w *float32, ws, count int)

// haveAVX512F16 reports AVX-512 F (ZMM conversions between F16 and float32)
// besides AVX2, FMA and F16C.
var haveAVX512F16 = haveAVX2FMA && cpu.X86.HasAVX512F

var _ = haveAVX2FMA && func() bool {
	f16Runs = &f16RunKernels{scores: scoresF16_amd64, mads: madsF16_amd64, group: madsF16Group_amd64}
	return archHook(func(s *kernelSet) {
		s.madF16 = madF16_amd64
		s.scaleF16 = scaleF16_amd64
		s.toF16 = toF16_amd64
		s.roundF16 = roundF16_amd64
	})
}()

// The wrappers run whole groups of 8 in assembly and the rest in Go; the
// slices were length-checked by the exported functions.

func madF16_amd64(acc []float32, v []uint16, s float32) {
	n := len(acc) &^ 7
	if n > 0 {
		_ = v[n-1]
		madF16AVX2(&acc[0], &v[0], n, s)
	}
	madF16Go(acc[n:], v[n:len(acc)], s)
}

func scaleF16_amd64(acc []float32, s float32) {
	n := len(acc) &^ 7
	if n > 0 {
		scaleF16AVX2(&acc[0], n, s)
	}
	scaleF16Go(acc[n:], s)
}

func toF16_amd64(dst []uint16, src []float32) {
	n := len(src) &^ 7
	if n > 0 {
		_ = dst[n-1]
		toF16AVX2(&dst[0], &src[0], n)
	}
	toF16Go(dst[n:len(src)], src[n:])
}

func roundF16_amd64(x []float32) {
	n := len(x) &^ 7
	if n > 0 {
		roundF16AVX2(&x[0], n)
	}
	roundF16Go(x[n:])
}

// scoresF16_amd64 takes head sizes that are a multiple of 8 (all of
// ggml's are); others go back to the Go loop.
func scoresF16_amd64(out []float32, ldo int, q []float32, hd int, keys []uint16, stride, count int, kbuf []float32) bool {
	if hd%8 != 0 {
		return false
	}
	_ = kbuf[hd-1]
	if nq := len(q) / hd; haveAVX512F16 && k.name == "avx512" && hd%32 == 0 && hd <= 128 && nq%4 != 0 && count >= 2 {
		// The queries a multiple of four can take four at a time, the
		// rest below: every score is scoreF16Go's whichever kernel.
		n4 := nq &^ 3
		if n4 > 0 {
			scoresF16_amd64(out, ldo, q[:n4*hd], hd, keys, stride, count, kbuf)
		}
		if nq%4 == 3 {
			// Three (Llama 3.2 3B's group, the last of Qwen2.5's seven)
			// as four, the fourth zeros, its scores dropped: about the
			// time of two one at a time (BenchmarkScoresF16).
			scores3F16(out[n4*ldo:], ldo, q[n4*hd:], hd, keys, stride, count, kbuf)
			return true
		}
		if n4 > 0 {
			return scoresF16_amd64(out[n4*ldo:], ldo, q[n4*hd:], hd, keys, stride, count, kbuf)
		}
	}
	j0 := 0
	if nq := len(q) / hd; haveAVX512F16 && k.name == "avx512" && hd%32 == 0 && hd <= 128 && nq%4 == 0 && count >= 2 {
		// Pairs of rows, four queries at a time (a KV head's group):
		// each row converted once for the four.
		j0 = count &^ 1
		for i := 0; i < nq; i += 4 {
			scoresG4F16AVX512(&out[i*ldo], ldo, &q[i*hd], hd, &keys[0], 2*stride, j0/2)
		}
	} else if hd%32 == 0 && count >= 4 {
		// Whole groups of four rows, one query at a time; the rest of
		// the rows below.
		j0 = count &^ 3
		for i := range len(q) / hd {
			scores4F16AVX2(&out[i*ldo], &q[i*hd], &keys[0], 2*stride, j0/4, hd/32)
		}
	}
	if j0 < count {
		scoresF16AVX2(&out[j0], 4*ldo, &q[0], len(q)/hd, &keys[j0*stride], 2*stride, count-j0, hd, &kbuf[0])
	}
	return true
}

// scores3F16 is scoresF16_amd64 for three queries on scoresG4F16AVX512:
// the queries copied beside a fourth of zeros, the pairs of rows in runs
// of at most 64 into a frame, their scores copied out; an odd last row
// by scoresF16AVX2.
func scores3F16(out []float32, ldo int, q []float32, hd int, keys []uint16, stride, count int, kbuf []float32) {
	var q4 [4 * 128]float32
	var o4 [4 * 64]float32
	copy(q4[:], q[:3*hd])
	j0 := count &^ 1
	for r0 := 0; r0 < j0; r0 += 64 {
		rows := min(64, j0-r0)
		scoresG4F16AVX512(&o4[0], 64, &q4[0], hd, &keys[r0*stride], 2*stride, rows/2)
		for i := range 3 {
			copy(out[i*ldo+r0:i*ldo+r0+rows], o4[i*64:i*64+rows])
		}
	}
	if j0 < count {
		scoresF16AVX2(&out[j0], 4*ldo, &q[0], 3, &keys[j0*stride], 2*stride, count-j0, hd, &kbuf[0])
	}
}

// madsF16_amd64 takes lengths that are a multiple of 8, as madF16_amd64
// runs them wholly in assembly.
func madsF16_amd64(acc []float32, v []uint16, stride int, w []float32) bool {
	if len(acc) == 0 || len(acc)%8 != 0 {
		return false
	}
	madsF16AVX2(&acc[0], &v[0], 2*stride, &w[0], len(w), len(acc))
	return true
}

// madsF16Group_amd64 takes groups of three or more queries whose length
// is a multiple of 64 (Llama's and Qwen's heads, 64 or 128 values) on the
// avx512 kernel set: mads4F16AVX512 keeps four queries' sixteen ZMM
// rounding chains in flight together and converts each value row once for
// them, mads3F16AVX512 three (Llama 3.2 3B has three query heads a KV
// head, Qwen2.5 7B seven: four, then three); one or two queries past those
// go one at a time. Other shapes and sets take every query one at a time.
func madsF16Group_amd64(acc []float32, n int, v []uint16, stride int, w []float32, ws, count int) bool {
	if !haveAVX512F16 || k.name != "avx512" || n%64 != 0 || len(acc) < 3*n {
		return false
	}
	nq := len(acc) / n
	q := 0
	for ; q+4 <= nq; q += 4 {
		mads4F16AVX512(&acc[q*n], n, &v[0], 2*stride, &w[q*ws], 4*ws, count)
	}
	if q+3 <= nq {
		mads3F16AVX512(&acc[q*n], n, &v[0], 2*stride, &w[q*ws], 4*ws, count)
		q += 3
	}
	for ; q < nq; q++ {
		MadsF16(acc[q*n:(q+1)*n], v, stride, w[q*ws:q*ws+count])
	}
	return true
}
