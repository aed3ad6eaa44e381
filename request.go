package shade

import (
	"shade/engine"
	"shade/sample"
)

// TokenLogprob is a generated token with its natural log-probability under
// the model's own distribution (the softmax of its logits at temperature
// 1, before the sampler's penalties, bias and truncations), and the most
// likely alternatives at that position when GenerateOptions.TopLogprobs
// asks for them. Under speculative decoding they are the target model's,
// computed from the verify pass that chose the token.
type TokenLogprob struct {
	ID      int32
	Text    string // the token's bytes (part of a character, for some tokens)
	Offset  int    // byte offset of the token's text in Result.Text
	Logprob float32
	Top     []TopLogprob // most likely first
}

// TopLogprob is one alternative of a TokenLogprob.
type TopLogprob struct {
	ID      int32
	Text    string
	Logprob float32
}

// apply puts the options beyond the basic sampling into a request.
func (o GenerateOptions) apply(r *engine.Request) {
	if o.RepeatPenalty != 0 {
		r.Sampling.RepeatPenalty = o.RepeatPenalty
	}
	r.Sampling.PresencePenalty, r.Sampling.FrequencyPenalty = o.PresencePenalty, o.FrequencyPenalty
	r.Sampling.LogitBias = o.LogitBias
	r.Stop = o.Stop
	r.Logprobs, r.TopLogprobs = o.Logprobs, o.TopLogprobs
}

// logprobs appends the log-probabilities of toks when r asks for them.
func (m *Model) logprobs(out []TokenLogprob, r engine.Request, toks []engine.Token) []TokenLogprob {
	if !r.Logprobs {
		return out
	}
	for _, t := range toks {
		lp := TokenLogprob{ID: t.ID, Text: string(m.e.Tok.TokenBytes(t.ID)), Offset: t.Offset, Logprob: t.Logprob}
		lp.Top = make([]TopLogprob, len(t.Top))
		for i, alt := range t.Top {
			lp.Top[i] = topLogprob(m, alt)
		}
		out = append(out, lp)
	}
	return out
}

func topLogprob(m *Model, alt sample.TokenLogprob) TopLogprob {
	return TopLogprob{ID: alt.ID, Text: string(m.e.Tok.TokenBytes(alt.ID)), Logprob: alt.Logprob}
}
