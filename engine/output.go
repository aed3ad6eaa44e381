package engine

import (
	"fmt"
	"strings"

	"shade/sample"
)

// MaxTopLogprobs is the most alternatives Request.TopLogprobs may ask for
// (OpenAI's limit).
const MaxTopLogprobs = 20

// Bounds of Request.Stop: holding text back costs up to the square of a
// stop sequence's length per token, so it is kept small.
const (
	MaxStops   = 16
	MaxStopLen = 512 // bytes
)

// Token is one generated token as the output reports it.
type Token struct {
	ID int32
	// Offset is the byte offset in the generation's text where the
	// token's text begins.
	Offset int
	// Logprob and Top are set when the Request asks for Logprobs: the
	// natural log-probability of the token and of the TopLogprobs most
	// likely tokens, under the target model's own softmax of the row the
	// token was chosen from (temperature 1, before the logit bias, the
	// penalties and the truncations of the sampler), speculative or not.
	Logprob float32
	Top     []sample.TokenLogprob
}

// Piece is a piece of output text with the tokens that it completes (a
// token whose text is held back, or split by a multi-byte character, comes
// with the piece that releases its first byte; tokens that render as
// nothing come with the next piece).
type Piece struct {
	Text   string
	Tokens []Token
}

// output turns the tokens of a generation into pieces: it holds back text
// that may be the start of a stop sequence until it is known not to be,
// and ends the text before the first stop sequence found, dropping the
// tokens that only reach into the sequence or beyond. It defines the
// token count of a stopped generation: the tokens whose text begins
// before the returned text ends (and the tokens rendering as nothing
// between them), so that it is the same for the same text, however many
// tokens a speculative step produced past the stop.
type output struct {
	stops    []string
	held     string  // text not yet released
	base     int     // offset of held in the whole output
	pending  []Token // tokens not yet released, in order
	released int     // tokens released so far
}

// add takes the next token's text (tok nil: text with no token, such as
// the detokenizer's flush) and returns what may be released now, and
// whether a stop sequence was found.
func (o *output) add(text string, tok *Token) (Piece, bool) {
	if tok != nil {
		tok.Offset = o.base + len(o.held)
		o.pending = append(o.pending, *tok)
	}
	o.held += text
	if cut := o.firstStop(); cut >= 0 {
		p := o.release(cut)
		o.pending = o.pending[:0]
		o.held = ""
		return p, true
	}
	hold := 0
	for _, st := range o.stops {
		for n := min(len(st)-1, len(o.held)); n > hold; n-- {
			if strings.HasSuffix(o.held, st[:n]) {
				hold = n
				break
			}
		}
	}
	return o.release(len(o.held) - hold), false
}

// firstStop is the offset in held of the earliest stop sequence, or -1.
func (o *output) firstStop() int {
	cut := -1
	for _, st := range o.stops {
		if i := strings.Index(o.held, st); i >= 0 && (cut < 0 || i < cut) {
			cut = i
		}
	}
	return cut
}

// release releases held[:n] and the pending tokens whose text begins in
// it (with the ones rendering as nothing before them).
func (o *output) release(n int) Piece {
	end := o.base + n
	k := 0
	for i, t := range o.pending {
		if t.Offset < end {
			k = i + 1
		}
	}
	p := Piece{Text: o.held[:n], Tokens: append([]Token(nil), o.pending[:k]...)}
	o.pending = append(o.pending[:0], o.pending[k:]...)
	o.held = o.held[n:]
	o.base = end
	o.released += k
	return p
}

// flush releases everything held at the end of a generation that did not
// stop on a stop sequence.
func (o *output) flush() Piece {
	p := o.release(len(o.held))
	p.Tokens = append(p.Tokens, o.pending...)
	o.released += len(o.pending)
	o.pending = o.pending[:0]
	return p
}

// checkOutput validates a request's stop sequences and log-probability
// settings.
func checkOutput(r *Request) error {
	if len(r.Stop) > MaxStops {
		return fmt.Errorf("engine: %d stop sequences, at most %d", len(r.Stop), MaxStops)
	}
	for _, s := range r.Stop {
		if s == "" {
			return fmt.Errorf("engine: an empty stop sequence")
		}
		if len(s) > MaxStopLen {
			return fmt.Errorf("engine: a stop sequence of %d bytes, at most %d", len(s), MaxStopLen)
		}
	}
	if r.TopLogprobs < 0 || r.TopLogprobs > MaxTopLogprobs {
		return fmt.Errorf("engine: top logprobs %d out of range [0, %d]", r.TopLogprobs, MaxTopLogprobs)
	}
	if r.TopLogprobs > 0 && !r.Logprobs {
		return fmt.Errorf("engine: top logprobs %d without logprobs", r.TopLogprobs)
	}
	return nil
}

// onToken records the log-probabilities of a token the decoder produced;
// the decoder calls it for each produced token, in order.
func (s *Session) onToken(logits []float32, tok int32) {
	lp, top := sample.Logprobs(logits, tok, s.r.TopLogprobs, nil)
	s.lps = append(s.lps, Token{ID: tok, Logprob: lp, Top: top})
}
