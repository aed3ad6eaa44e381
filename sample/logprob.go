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
	// Select the n best by logit (the log-softmax keeps the order), kept
	// sorted in top[start:] with their logits; convert them at the end.
	start := len(top)
	better := func(a, b TokenLogprob) int {
		if a.Logprob != b.Logprob {
			if a.Logprob > b.Logprob {
				return -1
			}
			return 1
		}
		return int(a.ID - b.ID)
	}
	worst := negInf
	for i, l := range logits {
		if l-l != 0 {
			l = negInf
		}
		full := len(top)-start == n
		if full && l <= worst { // a tie loses: its id is larger
			continue
		}
		if full {
			top = top[:len(top)-1]
		}
		c := TokenLogprob{ID: int32(i), Logprob: l}
		j, _ := slices.BinarySearchFunc(top[start:], c, better)
		top = slices.Insert(top, start+j, c)
		if len(top)-start == n {
			worst = top[len(top)-1].Logprob
		}
	}
	for k := start; k < len(top); k++ {
		top[k].Logprob = lp(top[k].Logprob)
	}
	return p, top
}
