package engine

import (
	"context"
	"fmt"
	"math"
	"time"

	"shade/model"
	"shade/speculate"
)

// PerplexityResult is the outcome of a perplexity run.
type PerplexityResult struct {
	PPL      float64       `json:"ppl"`
	NLL      float64       `json:"mean_nll"`
	Chunks   int           `json:"chunks"`
	Ctx      int           `json:"ctx"`
	Tokens   int           `json:"tokens"`
	Scored   int           `json:"scored_tokens"`
	Duration time.Duration `json:"duration_ns"`
}

// logitsRowsPerPass bounds how many LM-head rows are computed at once, so a
// large vocabulary does not need ctx·vocab floats.
const logitsRowsPerPass = 32

// Perplexity scores text by llama.cpp's method: tokenize it once (with BOS
// when the vocabulary adds one), cut it into ⌊n/ctx⌋ chunks of ctx tokens,
// make each chunk's first token BOS, run each chunk as one batch, and average
// −log p(token[p+1]) over positions p = ctx/2 … ctx−2. progress, if non-nil,
// is called after each chunk with the running perplexity.
func (e *Engine) Perplexity(ctx context.Context, text string, nctx int, progress func(done, total int, ppl float64)) (PerplexityResult, error) {
	t0 := time.Now()
	res := PerplexityResult{Ctx: nctx}
	if nctx < 4 {
		return res, fmt.Errorf("engine: perplexity context %d too small (need ≥ 4)", nctx)
	}
	if err := e.checkContext(nctx, 0); err != nil {
		return res, err
	}
	tokens, err := e.Tok.Encode(text, true, false)
	if err != nil {
		return res, fmt.Errorf("engine: perplexity text: %w", err)
	}
	res.Tokens = len(tokens)
	chunks := len(tokens) / nctx
	if chunks == 0 {
		return res, fmt.Errorf("engine: text has %d tokens, need at least ctx = %d for one chunk", len(tokens), nctx)
	}
	s, err := e.Model.NewState(nctx)
	if err != nil {
		return res, err
	}
	vocab := e.Model.Config.Vocab
	logits := make([]float32, logitsRowsPerPass*vocab)
	chunk := make([]int32, nctx)
	first := nctx / 2
	var nll float64
	for c := range chunks {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		copy(chunk, tokens[c*nctx:(c+1)*nctx])
		if e.Tok.AddBOS() {
			chunk[0] = e.Tok.BOS()
		}
		if err := s.Truncate(0); err != nil {
			return res, err
		}
		if err := s.Forward(model.Chain(chunk)); err != nil {
			return res, err
		}
		rows := make([]int, 0, logitsRowsPerPass)
		for p := first; p <= nctx-2; p += logitsRowsPerPass {
			rows = rows[:0]
			for q := p; q < min(p+logitsRowsPerPass, nctx-1); q++ {
				rows = append(rows, q)
			}
			if err := s.Logits(rows, logits); err != nil {
				return res, err
			}
			for k, q := range rows {
				lp := logSoftmaxAt(logits[k*vocab:(k+1)*vocab], chunk[q+1])
				if math.IsNaN(lp) || math.IsInf(lp, 0) {
					return res, fmt.Errorf("engine: perplexity: %w at position %d of chunk %d: the model file's weights or hyperparameters are broken", speculate.ErrNonFinite, q, c)
				}
				nll -= lp
				res.Scored++
			}
		}
		res.Chunks = c + 1
		if progress != nil {
			progress(c+1, chunks, math.Exp(nll/float64(res.Scored)))
		}
	}
	s.Truncate(0)
	res.NLL = nll / float64(res.Scored)
	res.PPL = math.Exp(res.NLL)
	res.Duration = time.Since(t0)
	return res, nil
}

// logSoftmaxAt returns log softmax(row)[id], computed in float64.
func logSoftmaxAt(row []float32, id int32) float64 {
	maxL := row[0]
	for _, v := range row {
		maxL = max(maxL, v)
	}
	var sum float64
	for _, v := range row {
		sum += math.Exp(float64(v - maxL))
	}
	return float64(row[id]-maxL) - math.Log(sum)
}
