package sample

import (
	"math"
	"slices"
)

// TokenLogprob is a token with its log-probability.
type TokenLogprob struct {
	ID      int32
	Logprob float32
}

// Logprobs returns the natural log-probability of token tok under the
// softmax of logits at temperature 1 (the model's own distribution, before
// any processor of the chain), and appends the n most likely tokens, most
// likely first (lower id first on ties), to top. The logits are meant to
// be finite (the decoder refuses other rows); a NaN or infinite one gets
// -Inf, and a row with no finite logit gives -Inf everywhere.
func Logprobs(logits []float32, tok int32, n int, top []TokenLogprob) (float32, []TokenLogprob) {
	negInf := float32(math.Inf(-1))
	maxL := negInf
	for _, l := range logits {
		if l-l == 0 && l > maxL {
			maxL = l
		}
	}
	var sum float64
	for _, l := range logits {
		if l-l == 0 {
			sum += math.Exp(float64(l - maxL))
		}
	}
	lse := float64(maxL) + math.Log(sum)
	lp := func(l float32) float32 {
		if l-l != 0 || maxL == negInf {
			return negInf
		}
		return float32(float64(l) - lse)
	}
	p := negInf
	if tok >= 0 && int(tok) < len(logits) {
		p = lp(logits[tok])
	}
	n = min(n, len(logits))
	if n <= 0 {
		return p, top
	}
	better := func(a, b TokenLogprob) int {
		if a.Logprob != b.Logprob {
			if a.Logprob > b.Logprob {
				return -1
			}
			return 1
		}
		return int(a.ID - b.ID)
	}
	// Partial selection of the n best, kept sorted in top[start:].
	start := len(top)
	for i, l := range logits {
		c := TokenLogprob{ID: int32(i), Logprob: lp(l)}
		if len(top)-start == n {
			if better(c, top[len(top)-1]) >= 0 {
				continue
			}
			top = top[:len(top)-1]
		}
		j, _ := slices.BinarySearchFunc(top[start:], c, better)
		top = slices.Insert(top, start+j, c)
	}
	return p, top
}
