// Package shade is the Go API of the shade runtime: open a GGUF model
// (Llama 2/3, Qwen 2/3) with an optional draft model for speculative
// decoding, a DRAM budget (layers over it streamed from the file) and an
// elastic policy (speculation that yields memory bandwidth to the
// foreground), generate text or chat replies under a context.Context with the
// text streamed through a callback or a channel, and download models into
// the local cache (Pull). The HTTP server is package shade/server and the
// command line is cmd/shade; the packages underneath (engine, spec, model,
// …) are for those who need the single steps.
package shade

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"shade/chat"
	"shade/elastic"
	"shade/engine"
	"shade/grammar"
	"shade/model"
	"shade/panelcache"
	"shade/sample"
	"shade/speculate"
	"shade/weights"
)

// Options configure Open. The zero value is valid.
type Options struct {
	Threads int    // worker threads (0: one per CPU)
	Draft   string // draft model file for speculative decoding (same vocabulary as the target)
	// Spec is the speculative mode: "auto", "chain", "tree", "ngram",
	// "lever" or "off". Default: "auto" with a draft, "off" without.
	Spec     string
	DraftMax int // most tokens drafted per step (default 8)
	Ctx      int // context size in tokens (default: the model's, at most 4096)
	// DRAMBudget keeps at most this much of the weights in DRAM: a
	// percentage of the target's weight bytes ("40%") or a size ("2GiB",
	// "512MiB", bytes). The draft, the target's embedding, head and norms
	// and as many target layers as fit stay resident; the other layers are
	// read from the model file for every token (O_DIRECT where the system
	// has it). Default: everything resident.
	DRAMBudget string
	// Policy is the elastic-speculation policy: "balanced" or "ui-first"
	// pace speculative decoding so that it yields memory bandwidth to
	// what runs in the foreground (the draft model's layer times are the
	// contention sensor, so it needs a Draft and a Spec that drafts with
	// it); "off" (the default) leaves it unpaced. Model.SetPolicy switches
	// it later.
	Policy string
	// Panels is where Q4_0, Q8_0 and Q4_K weights repacked into row panels live
	// (on CPUs with panel kernels): "cache" (default) maps them from a
	// panel cache file built on the first start, "memory" repacks them at
	// every start into anonymous memory, "off" computes in the file's
	// layout. See docs/panels.md.
	Panels string
	// PanelCacheDir is the panel cache's directory (default:
	// panelcache.DefaultDir, ~/.cache/shade/panels).
	PanelCacheDir string
}

// Model is a loaded model. Its methods may be called from several
// goroutines: generations take turns, one decoding step at a time, and a
// Background one waits while any Foreground one runs
// (GenerateOptions.Priority).
type Model struct {
	mu   sync.Mutex
	e    *engine.Engine
	tmpl *chat.Template
	spec speculate.Config
	ctx  int
	gov  atomic.Pointer[elastic.Governor] // the engine's, once there is one
	// foreground counts the Foreground generations in progress (waiting
	// for their turn included): Background ones yield to them.
	foreground atomic.Int32
	closed     bool // Close was called (guarded by mu)
}

var errClosed = errors.New("shade: the model is closed")

// Priority says how a generation shares the Model with others running at
// the same time.
type Priority int

const (
	// Foreground generations (the default) take turns with each other,
	// a decoding step each.
	Foreground Priority = iota
	// Background generations pause between steps while any Foreground
	// one runs, and resume where they were (their KV kept) when none
	// does: an app's prefetching or summarizing never delays what the
	// user waits for by more than one step.
	Background
)

// yieldToForeground waits while a Foreground generation is in progress.
func (m *Model) yieldToForeground(ctx context.Context) error {
	for m.foreground.Load() > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
	return nil
}

// Message is one turn of a chat: Role "system", "user" or "assistant".
type Message = chat.Message

// Open loads a GGUF model file (and opt.Draft, if set) and sets it up as
// opt says: the DRAM budget, the elastic policy, the row panels.
func Open(path string, opt *Options) (*Model, error) {
	if opt == nil {
		opt = &Options{}
	}
	mode := speculate.ModeOff
	if opt.Draft != "" {
		mode = speculate.ModeAuto
	}
	if opt.Spec != "" {
		var err error
		if mode, err = speculate.ParseMode(opt.Spec); err != nil {
			return nil, fmt.Errorf("shade: %w", err)
		}
	}
	policy := elastic.Off
	if opt.Policy != "" {
		var err error
		if policy, err = elastic.ParsePolicy(opt.Policy); err != nil {
			return nil, fmt.Errorf("shade: %w", err)
		}
	}
	panels := model.DefaultPanels
	if opt.Panels != "" {
		var err error
		if panels.Mode, err = panelcache.ParseMode(opt.Panels); err != nil {
			return nil, fmt.Errorf("shade: %w", err)
		}
	}
	if opt.PanelCacheDir != "" {
		panels.Dir = opt.PanelCacheDir
	}
	e, err := engine.Open(context.Background(), path, engine.Options{Threads: opt.Threads, Draft: opt.Draft, Spec: mode, Ctx: opt.Ctx,
		DRAMBudget: opt.DRAMBudget, Stream: weights.DefaultOptions(), Policy: policy, Panels: &panels})
	if err != nil {
		return nil, err
	}
	tmpl, _ := chat.FromGGUF(&e.Model.File.Meta, e.Tok)
	m := &Model{e: e, tmpl: tmpl, spec: e.Governed(speculate.Config{Mode: mode, DraftMax: opt.DraftMax}), ctx: e.ContextSize(opt.Ctx)}
	if e.Governor != nil {
		m.gov.Store(e.Governor)
	}
	return m, nil
}

// SetPolicy switches the elastic policy ("balanced", "ui-first" or "off")
// of the generations that start from now on. A policy other than off
// needs a model opened with a draft model and speculation that drafts with
// it; the first one of a model opened without a policy measures the
// draft's layers now (quickly: do it before the foreground gets busy).
func (m *Model) SetPolicy(policy string) error {
	p, err := elastic.ParsePolicy(policy)
	if err != nil {
		return fmt.Errorf("shade: %w", err)
	}
	if g := m.gov.Load(); g != nil { // safe while generations run
		g.SetPolicy(p)
		return nil
	}
	if p == elastic.Off {
		return nil
	}
	m.mu.Lock() // the generation running, if any, keeps its config
	defer m.mu.Unlock()
	if g := m.gov.Load(); g != nil {
		g.SetPolicy(p)
		return nil
	}
	if m.e.Draft == nil || m.spec.Mode == speculate.ModeOff || m.spec.Mode == speculate.ModeNgram {
		return fmt.Errorf("shade: policy %v needs speculation with a draft model (Options.Draft): its layers are the contention sensor", p)
	}
	st, err := m.e.ElasticStart(context.Background())
	if err != nil {
		return err
	}
	g := st.Governor(p)
	m.e.Governor = g
	m.spec = m.e.Governed(m.spec)
	m.gov.Store(g)
	return nil
}

// Policy is the elastic policy in force: "balanced", "ui-first" or "off".
func (m *Model) Policy() string {
	if g := m.gov.Load(); g != nil {
		return g.Policy().String()
	}
	return elastic.Off.String()
}

// Streaming says how many of the target's layers are read from the model
// file for every token under Options.DRAMBudget, of how many (0 of all of
// them without a budget, or with one that holds every layer).
func (m *Model) Streaming() (streamed, layers int) {
	layers = m.e.Model.Config.Layers
	if p := m.e.DRAMPlan; p != nil {
		streamed = len(p.Streamed)
	}
	return streamed, layers
}

// Close releases the model's memory mappings and threads.
func (m *Model) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true // generations in progress end at their next step
	return m.e.Close()
}

// Engine is the underlying engine, for what this API does not cover.
func (m *Model) Engine() *engine.Engine { return m.e }

// GenerateOptions configure one generation. The zero value decodes
// greedily until the end of text or a full context.
type GenerateOptions struct {
	MaxTokens   int     // most tokens to generate (≤ 0: until end of text or a full context)
	Temperature float32 // 0: greedy
	TopK        int     // 0: off
	TopP        float32 // 0 or 1: off
	MinP        float32 // 0: off
	Seed        uint64  // sampling seed: the same seed gives the same text
	IgnoreEOS   bool    // generate past end-of-text tokens
	// Priority among the Model's generations running at the same time:
	// Foreground (default) or Background.
	Priority Priority
	// continuation: set by Generate (the text continues the prompt), not
	// by Chat (engine.Request.Continuation).
	continuation bool
	// Stop, Logprobs and the sampling fields below: see request.go.
	Stop             []string          // end the text before the first of these (StopReason "stop")
	RepeatPenalty    float32           // llama.cpp's, over the last 64 tokens (0 or 1: off)
	PresencePenalty  float32           // OpenAI's, in [-2, 2] (0: off)
	FrequencyPenalty float32           // OpenAI's, in [-2, 2] (0: off)
	LogitBias        map[int32]float32 // added to the tokens' logits, each in [-100, 100]
	Logprobs         bool              // fill Result.Logprobs
	TopLogprobs      int               // with Logprobs: this many alternatives per token (≤ 20)
	// Grammar, if set, constrains the text to its matches, whatever the
	// model's weights: grammar.FromJSONSchema (JSON valid for a schema),
	// grammar.JSONObject (any JSON object) or grammar.Parse (GBNF). The
	// text ends complete as long as MaxTokens leaves room for the
	// grammar's shortest output (Matcher.Remaining), and generation ends
	// when the grammar is complete and the model says so.
	Grammar *grammar.Grammar
	// Tools are functions the model may call (Chat only): the template
	// shows them, and the reply's calls in the model's format are parsed
	// into Result.ToolCalls. ToolChoice "required" or a named function
	// constrains the reply to calls whose arguments are valid for the
	// function's parameters schema, whatever the weights.
	Tools      []Tool
	ToolChoice ToolChoice
	// ParallelToolCalls lets a reply make several calls (without it,
	// the first is kept).
	ParallelToolCalls bool
}

// Tool is a function a chat model may call; ToolCall is a call it made
// (or made in an earlier Message); ToolChoice says whether it must.
type (
	Tool         = chat.Tool
	Function     = chat.Function
	ToolCall     = chat.ToolCall
	FunctionCall = chat.FunctionCall
	ToolChoice   = chat.ToolChoice
)

// Result describes a finished generation.
type Result struct {
	Text            string     // everything generated (with Tools: but the calls)
	ToolCalls       []ToolCall // the calls a Chat reply made (with Tools)
	PromptTokens    int        // tokens in the prompt (after the chat template)
	Tokens          int        // tokens generated
	StopReason      string     // "eos", "stop", "length", "context" or "canceled"
	TokensPerSecond float64    // decode speed
	AcceptanceRate  float64    // speculative decoding: accepted ÷ drafted tokens (0 without)
	// Logprobs has one entry per generated token when GenerateOptions asks
	// for them (see TokenLogprob).
	Logprobs []TokenLogprob
	// CachedTokens of the prompt's came from the conversation's KV
	// (Conversation) instead of being prefilled again.
	CachedTokens int
}

// Generate continues prompt (special tokens such as <|im_start|> in it are
// parsed; BOS is added where the vocabulary wants it), calling onText, if
// not nil, with each piece of text as soon as it is complete. A canceled
// ctx or an onText error stops generation within one step; the Result so
// far is returned with the error.
func (m *Model) Generate(ctx context.Context, prompt string, o GenerateOptions, onText func(string) error) (Result, error) {
	ids, err := m.e.Tok.Encode(prompt, true, true)
	if err != nil {
		return Result{}, fmt.Errorf("shade: prompt: %w", err)
	}
	o.continuation = true // the text continues the prompt: " time" after "Once upon a"
	return m.run(ctx, ids, o, onText)
}

// Chat renders messages with the model's chat template (its own, or a
// built-in llama-2, llama-3 or ChatML one) and generates the assistant's
// reply, streamed to onText like Generate. Only the template's markup
// becomes special tokens: message content is tokenized as text.
func (m *Model) Chat(ctx context.Context, msgs []Message, o GenerateOptions, onText func(string) error) (Result, error) {
	co := chat.Options{AddGenerationPrompt: true}
	if o.ToolChoice.Mode != "none" {
		co.Tools = o.Tools
	}
	ids, err := m.tmpl.EncodeWith(m.e.Tok, msgs, co)
	if err != nil {
		return Result{}, err
	}
	if len(co.Tools) == 0 {
		if o.ToolChoice.Forced() {
			return Result{}, fmt.Errorf("shade: ToolChoice %s needs Tools", o.ToolChoice.Mode)
		}
		return m.run(ctx, ids, o, onText)
	}
	return m.chatTools(ctx, ids, o, onText)
}

// chatTools runs a chat with tools: the reply is parsed into content
// (streamed to onText) and calls; a forced choice is a grammar.
func (m *Model) chatTools(ctx context.Context, ids []int32, o GenerateOptions, onText func(string) error) (Result, error) {
	g, err := chat.ToolGrammar(m.tmpl.ToolFormat(), o.Tools, o.ToolChoice, o.ParallelToolCalls)
	if err != nil {
		return Result{}, fmt.Errorf("shade: %w", err)
	}
	if g != nil {
		if o.Grammar != nil {
			return Result{}, fmt.Errorf("shade: ToolChoice %s constrains the reply to calls: it cannot be combined with Grammar", o.ToolChoice.Mode)
		}
		o.Grammar = g
	}
	n := 0
	p := chat.NewToolParser(m.tmpl.ToolFormat(), func() string { n++; return fmt.Sprintf("call_%d", n) })
	var content strings.Builder
	take := func(ds []chat.Delta) error {
		for _, d := range ds {
			if d.Call || d.Content == "" {
				continue
			}
			content.WriteString(d.Content)
			if onText != nil {
				if err := onText(d.Content); err != nil {
					return err
				}
			}
		}
		return nil
	}
	res, err := m.run(ctx, ids, o, func(piece string) error { return take(p.Add(piece)) })
	if ferr := take(p.Flush()); err == nil {
		err = ferr
	}
	res.Text, res.ToolCalls = content.String(), p.Calls()
	if !o.ParallelToolCalls && len(res.ToolCalls) > 1 {
		res.ToolCalls = res.ToolCalls[:1]
	}
	return res, err
}

// Stream is Generate with the text delivered on a channel, closed at the
// end; wait then returns the Result and error. Cancel ctx to stop early
// (a reader that stops reading must cancel, or generation waits for it).
func (m *Model) Stream(ctx context.Context, prompt string, o GenerateOptions) (text <-chan string, wait func() (Result, error)) {
	ch := make(chan string, 16)
	var res Result
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(ch)
		res, err = m.Generate(ctx, prompt, o, func(s string) error {
			select {
			case ch <- s:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}()
	return ch, func() (Result, error) { <-done; return res, err }
}

// TemplateName says which chat template Chat uses: "gguf" (the model's
// own) or a built-in's name.
func (m *Model) TemplateName() string { return m.tmpl.Name() }

func (m *Model) run(ctx context.Context, ids []int32, o GenerateOptions, onText func(string) error) (Result, error) {
	r, _, err := m.runFrom(ctx, ids, o, onText, nil, false)
	return r, err
}

// runFrom is run starting from the KV of from (nil: none); with keep it
// returns the session's KV for the next turn (see Conversation).
func (m *Model) runFrom(ctx context.Context, ids []int32, o GenerateOptions, onText func(string) error, from *engine.Prefix, keep bool) (Result, *engine.Prefix, error) {
	p := sample.Params{Temp: o.Temperature, TopK: o.TopK, TopP: o.TopP, MinP: o.MinP, RepeatPenalty: 1, RepeatLastN: 64, Seed: o.Seed}
	if o.Priority != Foreground && o.Priority != Background {
		return Result{}, nil, fmt.Errorf("shade: unknown priority %d", o.Priority)
	}
	if o.Priority == Foreground {
		m.foreground.Add(1)
		defer m.foreground.Add(-1)
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return Result{}, nil, errClosed
	}
	req := engine.Request{MaxTokens: o.MaxTokens, Ctx: m.ctx, Sampling: p, IgnoreEOS: o.IgnoreEOS, Spec: m.spec, Grammar: o.Grammar, Continuation: o.continuation}
	o.apply(&req)
	newSession := m.e.NewSession
	if keep {
		newSession = func(r engine.Request, ids []int32) (*engine.Session, error) { return m.e.NewSessionFrom(r, ids, from) }
	}
	s, err := newSession(req, ids)
	m.mu.Unlock()
	if err != nil {
		return Result{}, nil, err
	}
	defer s.Close()
	var text []byte
	var lps []TokenLogprob
	emit := func(piece engine.Piece) error {
		text = append(text, piece.Text...)
		lps = m.logprobs(lps, req, piece.Tokens)
		if onText != nil && piece.Text != "" {
			return onText(piece.Text)
		}
		return nil
	}
	// Generations take turns step by step (sessions of one engine never
	// step at once); a background one also waits while any foreground one
	// is running, as the server's scheduler preempts background requests.
	for !s.Done() && err == nil {
		if o.Priority == Background {
			if err = m.yieldToForeground(ctx); err != nil {
				break
			}
		}
		m.mu.Lock()
		if m.closed {
			err = errClosed
		} else {
			_, err = s.StepPieces(ctx, emit)
		}
		m.mu.Unlock()
	}
	st := s.Stats()
	r := Result{Text: string(text), PromptTokens: st.PromptTokens, Tokens: st.GenTokens, StopReason: st.StopReason, TokensPerSecond: st.GenTPS, Logprobs: lps}
	if st.Spec != nil {
		r.AcceptanceRate = st.Spec.AcceptanceRate()
	}
	r.CachedTokens = st.CachedTokens
	s.Close()
	return r, s.TakePrefix(), err
}
