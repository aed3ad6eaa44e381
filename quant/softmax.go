package quant

import "fmt"

// The online softmax of attention (ggml's flash-attention step, which
// shade's attention follows step for step so that it rounds as llama.cpp
// does) for the query heads that share a KV head, over a chunk of at most
// 64 cache slots. For one query, slot by slot, with m the running maximum
// and sum the running sum:
//
//	x := score * scale
//	if x > m { e := exp(m - x); m = x; sum = fma(sum, e, 1); w, f = 1, e }
//	else     { e := exp(x - m);        sum = sum + e;   w, f = e, 1 }
//
// w is the weight of the slot's value in the query's accumulator and f the
// factor the accumulator is scaled by first. SoftmaxArgs takes the part
// before the exponential, Exp32s the exponentials, SoftmaxSteps the rest;
// only the sums are a chain from slot to slot, so the kernels take the
// other parts many slots at a time. Every result is the loop's, bit for bit.

// SoftmaxArgs scales the scores of len(maxs) queries (query q's n scores
// at sc[q*stride:], scaled in place) and writes each slot's exponential
// argument at the same place in ex: m-x where the score x exceeds the
// running maximum m before it, else x-m. maxs holds the queries' maxima
// before the chunk and gets those after it; bit j of rose[q] is set where
// query q's maximum rose at slot j (rose has one word per query). n is at
// most 64.
func SoftmaxArgs(sc, ex []float32, stride, n int, scale float32, maxs []float32, rose []uint64) {
	checkSoftmax(len(sc), stride, n, len(maxs), len(rose))
	checkSoftmax(len(ex), stride, n, len(maxs), len(rose))
	clear(rose)
	if n > 0 {
		k.softmaxArgs(sc, ex, stride, n, scale, maxs, rose)
	}
}

// SoftmaxSteps finishes SoftmaxArgs's chunk once Exp32s has turned ex's
// arguments into exponentials e: it adds each slot into its query's sum in
// order (fma(sum, e, 1), one rounding, where the maximum rose, else sum + e), writes the
// weights w (1 where it rose, else e) and factors f (e where it rose, else
// 1) at ex's places, and sets raised[j] to 1 where some query's maximum
// rose at slot j (leaving the others as they are).
func SoftmaxSteps(ex, w, f, raised []float32, stride, n int, rose []uint64, sums []float32) {
	checkSoftmax(len(ex), stride, n, len(sums), len(rose))
	checkSoftmax(len(w), stride, n, len(sums), len(rose))
	checkSoftmax(len(f), stride, n, len(sums), len(rose))
	if len(raised) < n {
		panic(fmt.Sprintf("quant: SoftmaxSteps: %d slots, raised holds %d", n, len(raised)))
	}
	if n > 0 {
		k.softmaxSteps(ex, w, f, raised, stride, n, rose, sums)
	}
}

func checkSoftmax(size, stride, n, nq, words int) {
	if n < 0 || n > 64 || stride < n || nq < 1 || words != nq || size < (nq-1)*stride+n {
		panic(fmt.Sprintf("quant: softmax of %d queries (%d rose words): %d slots %d apart in %d values", nq, words, n, stride, size))
	}
}

// softmaxArgsGo is SoftmaxArgs from slot from on (the kernels leave it
// the slots past their last whole vector).
func softmaxArgsGo(sc, ex []float32, stride, from, n int, scale float32, maxs []float32, rose []uint64) {
	for q := range maxs {
		s, e := sc[q*stride:q*stride+n], ex[q*stride:q*stride+n]
		m := maxs[q]
		for j := from; j < n; j++ {
			x := s[j] * scale
			s[j] = x
			if x > m {
				e[j], m = m-x, x
				rose[q] |= 1 << j
			} else {
				e[j] = x - m
			}
		}
		maxs[q] = m
	}
}

// softmaxStepsGo is SoftmaxSteps: the marks, then the sums.
func softmaxStepsGo(ex, w, f, raised []float32, stride, n int, rose []uint64, sums []float32) {
	softmaxMarksGo(ex, w, f, raised, stride, 0, n, rose)
	for q := range sums {
		sums[q] = softmaxSumGo(ex[q*stride:q*stride+n], rose[q], sums[q])
	}
}

// softmaxMarksGo writes SoftmaxSteps's weights, factors and raised marks
// from slot from on (the kernels leave it the slots past their last whole
// vector).
func softmaxMarksGo(ex, w, f, raised []float32, stride, from, n int, rose []uint64) {
	for q, r := range rose {
		o := q * stride
		e, wq, fq := ex[o:o+n], w[o:o+n], f[o:o+n]
		for j := from; j < n; j++ {
			if r>>j&1 != 0 {
				wq[j], fq[j] = 1, e[j]
				raised[j] = 1
			} else {
				wq[j], fq[j] = e[j], 1
			}
		}
	}
}

// softmaxSumGo is one query's sum after the slots of e, from sum.
func softmaxSumGo(e []float32, rose uint64, sum float32) float32 {
	for j, x := range e {
		if rose>>j&1 != 0 {
			// One rounding, as ggml's S = S*ms + vs compiled with FMA
			// contraction (llama.cpp's x86 builds) rounds it.
			sum = fma32(sum, x, 1)
		} else {
			sum += x
		}
	}
	return sum
}
