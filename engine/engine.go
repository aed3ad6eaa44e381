// Package engine owns a generation session end to end: loading a model and
// its tokenizer, prefill, the decode loop with sampling and streaming
// detokenization, stop conditions, statistics, cancellation, and the
// perplexity evaluation built on the same forward pass. It is where the
// model, tokenizer and sampler meet; the CLI and the server sit on top.
package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"shade/model"
	"shade/sample"
	"shade/tokenizer"
)

// Engine is a loaded model with its tokenizer.
type Engine struct {
	Model    *model.Model
	Tok      *tokenizer.Tokenizer
	LoadTime time.Duration
}

// Load opens a GGUF model file. threads ≤ 0 uses every CPU.
func Load(path string, threads int) (*Engine, error) {
	t0 := time.Now()
	m, err := model.Open(path, threads)
	if err != nil {
		return nil, err
	}
	tok, err := tokenizer.FromGGUF(m.File)
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if tok.VocabSize() != m.Config.Vocab {
		m.Close()
		return nil, fmt.Errorf("%s: tokenizer has %d tokens but token_embd.weight has %d rows", path, tok.VocabSize(), m.Config.Vocab)
	}
	return &Engine{Model: m, Tok: tok, LoadTime: time.Since(t0)}, nil
}

// Close releases the model.
func (e *Engine) Close() error { return e.Model.Close() }

// Request is one generation.
type Request struct {
	Prompt      string
	MaxTokens   int // ≤ 0: until end of generation or a full context
	Ctx         int // context size in tokens; ≤ 0: the model's, capped at DefaultCtx
	Sampling    sample.Params
	PrefillSize int // rows per prefill batch; ≤ 0: DefaultPrefill
	// IgnoreEOS keeps generating past end-of-generation tokens.
	IgnoreEOS bool
}

// Defaults for Request fields left zero.
const (
	DefaultCtx     = 4096
	DefaultPrefill = 256
)

// Stats describes a finished generation.
type Stats struct {
	PromptTokens    int           `json:"prompt_tokens"`
	PromptDuration  time.Duration `json:"prompt_ns"`
	PromptTPS       float64       `json:"prompt_tokens_per_s"`
	GenTokens       int           `json:"generated_tokens"`
	GenDuration     time.Duration `json:"generate_ns"`
	GenTPS          float64       `json:"generated_tokens_per_s"`
	LoadDuration    time.Duration `json:"load_ns"`
	ResidentBytes   int64         `json:"resident_bytes"`
	StopReason      string        `json:"stop_reason"` // "eos", "length", "context", "canceled"
	Tokens          []int32       `json:"-"`
	PromptTokenIDs  []int32       `json:"-"`
	ContextCapacity int           `json:"context"`
}

// ErrPromptTooLong is wrapped when a prompt does not fit the context.
var ErrPromptTooLong = errors.New("prompt too long")

// ContextSize resolves a requested context size against the model.
func (e *Engine) ContextSize(req int) int {
	if req > 0 {
		return req
	}
	return min(e.Model.Config.ContextLen, DefaultCtx)
}

// Generate runs a request, calling emit with each piece of text as soon as
// it is complete (a character split across tokens is emitted whole). An
// emit error or a canceled ctx stops generation; the stats so far are
// returned with it.
func (e *Engine) Generate(ctx context.Context, r Request, emit func(text string) error) (Stats, error) {
	st := Stats{LoadDuration: e.LoadTime}
	sampler, err := sample.New(r.Sampling)
	if err != nil {
		return st, err
	}
	prompt, err := e.Tok.Encode(r.Prompt, true, true)
	if err != nil {
		return st, fmt.Errorf("engine: prompt: %w", err)
	}
	if len(prompt) == 0 {
		return st, fmt.Errorf("engine: empty prompt (the tokenizer adds no BOS for this model)")
	}
	n := e.ContextSize(r.Ctx)
	st.ContextCapacity = n
	if len(prompt) >= n {
		return st, fmt.Errorf("engine: %w: %d tokens, context is %d (raise --ctx)", ErrPromptTooLong, len(prompt), n)
	}
	s, err := e.Model.NewState(n)
	if err != nil {
		return st, err
	}
	st.PromptTokens = len(prompt)
	st.PromptTokenIDs = prompt
	for _, t := range prompt {
		sampler.Accept(t)
	}

	vocab := e.Model.Config.Vocab
	logits := make([]float32, vocab)
	t0 := time.Now()
	if err := e.prefill(ctx, s, prompt, r.PrefillSize, logits); err != nil {
		return st, err
	}
	st.PromptDuration = time.Since(t0)
	st.PromptTPS = rate(len(prompt), st.PromptDuration)

	dec := tokenizer.NewDecoder(e.Tok)
	t1 := time.Now()
	st.StopReason = "length"
	tok := []int32{0}
	for r.MaxTokens <= 0 || st.GenTokens < r.MaxTokens {
		if err := ctx.Err(); err != nil {
			st.StopReason = "canceled"
			break
		}
		next := sampler.Sample(logits)
		if !r.IgnoreEOS && e.Tok.IsEOG(next) {
			st.StopReason = "eos"
			break
		}
		sampler.Accept(next)
		st.Tokens = append(st.Tokens, next)
		st.GenTokens++
		if text := dec.Add(next); text != "" {
			if err := emit(text); err != nil {
				return e.finish(st, t1), err
			}
		}
		if s.Len() >= n {
			st.StopReason = "context"
			break
		}
		if r.MaxTokens > 0 && st.GenTokens >= r.MaxTokens {
			break
		}
		tok[0] = next
		if err := e.step(s, tok, logits); err != nil {
			return e.finish(st, t1), err
		}
	}
	if text := dec.Flush(); text != "" {
		if err := emit(text); err != nil {
			return e.finish(st, t1), err
		}
	}
	st = e.finish(st, t1)
	if st.StopReason == "canceled" {
		return st, ctx.Err()
	}
	return st, nil
}

func (e *Engine) finish(st Stats, t1 time.Time) Stats {
	st.GenDuration = time.Since(t1)
	st.GenTPS = rate(st.GenTokens, st.GenDuration)
	st.ResidentBytes = ResidentBytes()
	return st
}

// prefill runs the prompt in batches and leaves the last row's logits.
func (e *Engine) prefill(ctx context.Context, s *model.State, prompt []int32, size int, logits []float32) error {
	if size <= 0 {
		size = DefaultPrefill
	}
	for i := 0; i < len(prompt); i += size {
		if err := ctx.Err(); err != nil {
			return err
		}
		chunk := prompt[i:min(i+size, len(prompt))]
		if err := s.Forward(model.Chain(chunk)); err != nil {
			return err
		}
		if i+size >= len(prompt) {
			if err := s.Logits([]int{len(chunk) - 1}, logits); err != nil {
				return err
			}
		}
		if err := s.CommitAll(); err != nil {
			return err
		}
	}
	return nil
}

// step feeds one token and leaves its logits.
func (e *Engine) step(s *model.State, tok []int32, logits []float32) error {
	if err := s.Forward(model.Chain(tok)); err != nil {
		return err
	}
	if err := s.Logits([]int{0}, logits); err != nil {
		return err
	}
	return s.CommitAll()
}

func rate(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}
