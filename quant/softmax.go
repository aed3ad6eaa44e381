package quant

import "fmt"

// The online softmax of attention (ggml's flash-attention step, which
// shade's attention follows step for step so that it rounds as llama.cpp
// does) for the four query heads that share a KV head, over a chunk of at
// most 64 cache slots. For one query, slot by slot, with m the running
// maximum and sum the running sum:
//
//	x := score * scale
//	if x > m { e := exp(m - x); m = x; sum = sum*e + 1; w, f = 1, e }
//	else     { e := exp(x - m);        sum = sum + e;   w, f = e, 1 }
//
// w is the weight of the slot's value in the query's accumulator and f the
// factor the accumulator is scaled by first. SoftmaxArgs4 takes the part
// before the exponential, Exp32s the exponentials, SoftmaxSteps4 the rest;
// only the sums are a chain from slot to slot, so the kernels take the
// other parts many slots at a time. Every result is the loop's, bit for bit.

// SoftmaxArgs4 scales the scores of four queries (query q's n scores at
// sc[q*stride:], scaled in place) and writes each slot's exponential
// argument at the same place in ex: m-x where the score x exceeds the
// running maximum m before it, else x-m. maxs holds the four maxima before
// the chunk and gets those after it; bit j of rose[q] is set where query
// q's maximum rose at slot j. n is at most 64.
func SoftmaxArgs4(sc, ex []float32, stride, n int, scale float32, maxs *[4]float32, rose *[4]uint64) {
	checkSoftmax4(len(sc), stride, n)
	checkSoftmax4(len(ex), stride, n)
	*rose = [4]uint64{}
	if n > 0 {
		k.softmaxArgs4(sc, ex, stride, n, scale, maxs, rose)
	}
}

// SoftmaxSteps4 finishes SoftmaxArgs4's chunk once Exp32s has turned ex's
// arguments into exponentials e: it adds each slot into its query's sum in
// order (sum·e + 1 where the maximum rose, else sum + e), writes the
// weights w (1 where it rose, else e) and factors f (e where it rose, else
// 1) at ex's places, and sets raised[j] to 1 where some query's maximum
// rose at slot j (leaving the others as they are).
func SoftmaxSteps4(ex, w, f, raised []float32, stride, n int, rose *[4]uint64, sums *[4]float32) {
	checkSoftmax4(len(ex), stride, n)
	checkSoftmax4(len(w), stride, n)
	checkSoftmax4(len(f), stride, n)
	if len(raised) < n {
		panic(fmt.Sprintf("quant: SoftmaxSteps4: %d slots, raised holds %d", n, len(raised)))
	}
	if n > 0 {
		k.softmaxSteps4(ex, w, f, raised, stride, n, rose, sums)
	}
}

func checkSoftmax4(size, stride, n int) {
	if n < 0 || n > 64 || stride < n || size < 3*stride+n {
		panic(fmt.Sprintf("quant: softmax of four queries: %d slots %d apart in %d values", n, stride, size))
	}
}

// softmaxArgs4Go is SoftmaxArgs4 from slot from on (the kernels leave it
// the slots past their last whole vector).
func softmaxArgs4Go(sc, ex []float32, stride, from, n int, scale float32, maxs *[4]float32, rose *[4]uint64) {
	for q := range 4 {
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

// softmaxSteps4Go is SoftmaxSteps4: the marks, then the sums.
func softmaxSteps4Go(ex, w, f, raised []float32, stride, n int, rose *[4]uint64, sums *[4]float32) {
	softmaxMarks4Go(ex, w, f, raised, stride, 0, n, rose)
	softmaxSums4Go(ex, stride, n, rose, sums)
}

// softmaxMarks4Go writes SoftmaxSteps4's weights, factors and raised marks
// from slot from on (the kernels leave it the slots past their last whole
// vector).
func softmaxMarks4Go(ex, w, f, raised []float32, stride, from, n int, rose *[4]uint64) {
	for q := range 4 {
		o := q * stride
		e, wq, fq := ex[o:o+n], w[o:o+n], f[o:o+n]
		for j := from; j < n; j++ {
			if rose[q]>>j&1 != 0 {
				wq[j], fq[j] = 1, e[j]
				raised[j] = 1
			} else {
				wq[j], fq[j] = e[j], 1
			}
		}
	}
}

// softmaxSums4Go adds slots [0, n) into the four queries' sums, in order.
func softmaxSums4Go(ex []float32, stride, n int, rose *[4]uint64, sums *[4]float32) {
	for q := range 4 {
		e := ex[q*stride : q*stride+n]
		sum, r := sums[q], rose[q]
		for j, x := range e {
			if r>>j&1 != 0 {
				// Two roundings on every architecture: the conversion
				// keeps Go from fusing them into one FMA where it may.
				sum = float32(sum*x) + 1
			} else {
				sum += x
			}
		}
		sums[q] = sum
	}
}
