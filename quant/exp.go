package quant

import "math"

// Exp32 is e^x in float32, as attention's softmax needs it: a degree-8
// Taylor series on |r| ≤ ln2/2 after x = n·ln2 + r, in float64, so within
// about an ulp of float32(math.Exp(x)) for a fraction of its cost, which
// matters with one exponential per (query, slot, head). NaN stays NaN (so a
// broken activation still shows in the logits), x ≤ -104 gives 0 and
// x > 89 +Inf. Every product is rounded on its own (the float64
// conversions forbid fused multiply-adds), so the result is the same on
// every architecture and equal to Exp32s' vector kernels, lane by lane.
func Exp32(x float32) float32 {
	switch {
	case !(x > -104): // NaN, or below half the smallest subnormal
		if x != x {
			return x
		}
		return 0
	case x > 89:
		return float32(math.Inf(1))
	}
	// n = round(x·log2 e): t > 0 here, so truncation is floor, and
	// cheaper than math.Floor.
	t := float64(float64(x)*math.Log2E) + 256.5
	n := float64(int64(t)) - 256
	r := float64(x) - float64(n*math.Ln2)
	q := float64(r * (1.0 / 40320))
	q = float64(r * (1.0/5040 + q))
	q = float64(r * (1.0/720 + q))
	q = float64(r * (1.0/120 + q))
	q = float64(r * (1.0/24 + q))
	q = float64(r * (1.0/6 + q))
	q = float64(r * (1.0/2 + q))
	q = float64(r * (1 + q))
	p := 1 + q
	return float32(p * math.Float64frombits(uint64(int64(n)+1023)<<52))
}

// Exp32s replaces every x[i] by Exp32(x[i]).
func Exp32s(x []float32) { k.exp32s(x) }

func exp32sGo(x []float32) {
	for i, v := range x {
		x[i] = Exp32(v)
	}
}
