// Package engine owns a generation session end to end: loading a model and
// its tokenizer, prefill, the decode loop with sampling and streaming
// detokenization, stop conditions, statistics, cancellation, and the
// perplexity evaluation built on the same forward pass. It is where the
// model, tokenizer and sampler meet; the CLI, the server and the root
// package sit on top, and set an engine up through Open, the one place
// that knows the order of the set-up (draft, Lever's calibration, DRAM
// budget, elastic governor, row panels).
package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"shade/cost"
	"shade/elastic"
	"shade/gguf"
	"shade/grammar"
	"shade/model"
	"shade/panelcache"
	"shade/sample"
	"shade/speculate"
	"shade/tokenizer"
	"shade/weights"
)

// Engine is a loaded model with its tokenizer.
type Engine struct {
	Model *model.Model
	Tok   *tokenizer.Tokenizer
	Draft *model.Model // optional draft model for speculative decoding
	// DraftRanks is what drafting has learned of the draft's acceptance by
	// sibling rank; requests share it.
	DraftRanks *speculate.RankStats
	// SpecEstimates is what auto mode has learned of acceptance and step
	// costs with this target and draft; requests share it.
	SpecEstimates *speculate.Estimates

	// Stream streams the target's layers that do not fit the DRAM budget
	// (SetDRAMBudget); nil when every layer is resident.
	Stream *weights.Streamer
	// DRAMPlan is the plan of the last SetDRAMBudget; nil without one.
	DRAMPlan *weights.Plan
	// Panels, when not nil, says where Repack puts the row panels of the
	// target and the draft (nil: model.DefaultPanels).
	Panels *panelcache.Options

	estMu          sync.Mutex
	ngramEstimates *speculate.Estimates
	LoadTime       time.Duration
	// Path is the target's file (calibrations are stored beside it).
	Path string
	// DraftPath is the draft's file; DraftProfileNote says whether
	// DraftRanks started from a stored acceptance profile.
	DraftPath        string
	DraftProfileNote string
	flashMu          sync.Mutex
	flash            *FlashResources
	budget           int64
	budgetOpts       weights.Options
	// Governor is the elastic governor Open built (Options.Policy,
	// Switchable); nil without one. Requests run under it when their
	// Spec.Governor is set to it.
	Governor      *elastic.Governor
	profileMu     sync.Mutex
	profile       *cost.Model // Profile's, once resolved
	profileSource string
	elasticMu     sync.Mutex
	elasticStart  *elastic.Start
}

// Load opens a GGUF model file and nothing else (Open sets an engine up
// for requests). threads ≤ 0 uses every CPU.
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
	return &Engine{Model: m, Tok: tok, LoadTime: time.Since(t0), Path: path}, nil
}

// Repack builds now the row panels that the target's resident matrices
// and the draft's compute on (model.Repack), instead of during the first
// generation, and adds the time to LoadTime. Call it once the models are
// loaded and the DRAM budget set: layers streamed afterwards drop their
// copies. It returns the bytes repacked.
func (e *Engine) Repack() int64 {
	t0 := time.Now()
	if e.Panels != nil {
		e.Model.Panels = e.Panels
	}
	n := e.Model.Repack()
	if e.Draft != nil {
		if e.Panels != nil {
			e.Draft.Panels = e.Panels
		}
		n += e.Draft.Repack()
	}
	e.LoadTime += time.Since(t0)
	return n
}

// Close releases the models.
func (e *Engine) Close() error {
	if e.Stream != nil {
		e.Stream.Close()
		e.Stream = nil
	}
	if e.Draft != nil {
		e.Draft.DropPanels()
		e.Draft.File.Close() // its pool is the target's
	}
	return e.Model.Close()
}

// LoadDraft loads a draft model for speculative decoding. Its vocabulary
// must be the target's, token for token, with the same special ids: a
// mismatch is an error saying how they differ. The draft shares the
// target's worker pool (the two never run at once).
func (e *Engine) LoadDraft(path string) error {
	f, err := gguf.Open(path)
	if err != nil {
		return err
	}
	m, err := model.FromFile(f, e.Model.Pool)
	if err != nil {
		f.Close()
		return fmt.Errorf("draft %s: %w", path, err)
	}
	tok, err := tokenizer.FromGGUF(f)
	if err == nil {
		err = SameVocabulary(e.Tok, tok)
	}
	if err == nil && m.Config.Vocab != e.Model.Config.Vocab {
		err = fmt.Errorf("draft LM head has %d rows, target %d", m.Config.Vocab, e.Model.Config.Vocab)
	}
	if err != nil {
		f.Close()
		return fmt.Errorf("draft %s: %w", path, err)
	}
	if e.Draft != nil {
		e.Draft.DropPanels()
		e.Draft.File.Close()
	}
	if e.Panels != nil {
		m.Panels = e.Panels
	}
	e.elasticMu.Lock()
	e.elasticStart = nil // of the draft replaced
	e.elasticMu.Unlock()
	e.profileMu.Lock()
	e.profile = nil
	e.profileMu.Unlock()
	e.flashMu.Lock()
	e.flash = nil // priced with the draft replaced
	e.flashMu.Unlock()
	e.Draft = m
	e.DraftPath = path
	e.DraftRanks = new(speculate.RankStats)
	e.DraftProfileNote = e.loadDraftProfile()
	e.SpecEstimates = speculate.NewEstimates()
	if e.DRAMPlan != nil { // the draft's bytes now count against the budget
		if _, err := e.SetDRAMBudget(e.budget, e.budgetOpts); err != nil {
			return fmt.Errorf("draft %s: planning the DRAM budget again: %w", path, err)
		}
	}
	return nil
}

// ErrVocabMismatch is wrapped by SameVocabulary's errors.
var ErrVocabMismatch = errors.New("vocabulary differs from the target's")

// SameVocabulary checks that a draft tokenizer is the target's: same size,
// same tokens, same BOS/EOS/EOT ids.
func SameVocabulary(target, draft *tokenizer.Tokenizer) error {
	if a, b := target.VocabSize(), draft.VocabSize(); a != b {
		return fmt.Errorf("%w: %d tokens in the draft, %d in the target", ErrVocabMismatch, b, a)
	}
	var diffs []string
	count := 0
	for id := range int32(target.VocabSize()) {
		if a, b := target.Piece(id), draft.Piece(id); a != b {
			if count++; count <= 3 {
				diffs = append(diffs, fmt.Sprintf("token %d is %q in the target, %q in the draft", id, a, b))
			}
		}
	}
	if count > 0 {
		more := ""
		if count > 3 {
			more = fmt.Sprintf(" (and %d more)", count-3)
		}
		return fmt.Errorf("%w: %s%s", ErrVocabMismatch, strings.Join(diffs, "; "), more)
	}
	specials := []struct {
		name string
		a, b int32
	}{{"BOS", target.BOS(), draft.BOS()}, {"EOS", target.EOS(), draft.EOS()}, {"EOT", target.EOT(), draft.EOT()}}
	for _, sp := range specials {
		if sp.a != sp.b {
			return fmt.Errorf("%w: %s is %d in the target, %d in the draft", ErrVocabMismatch, sp.name, sp.a, sp.b)
		}
	}
	return nil
}

// Request is one generation.
type Request struct {
	Prompt      string
	MaxTokens   int // ≤ 0: until end of generation or a full context
	Ctx         int // context size in tokens; ≤ 0: the model's, capped at DefaultCtx
	Sampling    sample.Params
	PrefillSize int // rows per prefill batch; ≤ 0: DefaultPrefill
	// IgnoreEOS keeps generating past end-of-generation tokens.
	IgnoreEOS bool
	// Spec configures speculative decoding (Mode Off: plain decoding).
	Spec speculate.Config
	// Continuation says the output continues the prompt's text (a
	// completion, not a chat reply): in vocabularies that add a space
	// prefix its first token keeps its leading space, so that prompt +
	// output reads as one text ("Once upon a" + " time"), as llama.cpp's
	// server returns it. A chat reply, a text of its own, loses it.
	Continuation bool
	// Stop ends generation as soon as the text contains one of these
	// strings (StopReason "stop"): the text ends before it, and the tokens
	// counted are those whose text begins before that end (see Piece).
	// Text that may be the start of a stop sequence is held back until it
	// is known not to be. At most MaxStops, each at most MaxStopLen bytes.
	Stop []string
	// Logprobs reports each generated token's log-probability (Piece's
	// Tokens, StepPieces); TopLogprobs (0…MaxTopLogprobs) adds that many
	// most likely alternatives.
	Logprobs    bool
	TopLogprobs int
	// Grammar, if set, constrains the output to its matches: the output
	// always ends complete (within MaxTokens and the context), and it
	// ends at an end-of-generation token once the grammar is complete
	// (IgnoreEOS does not apply).
	Grammar *grammar.Grammar
}

// Defaults for Request fields left zero.
const (
	DefaultCtx     = 4096
	DefaultPrefill = 256
)

// Stats describes a finished generation.
type Stats struct {
	PromptTokens int `json:"prompt_tokens"`
	// CachedTokens of the prompt's came from a prefix (NewSessionFrom)
	// instead of being run.
	CachedTokens   int              `json:"cached_tokens"`
	PromptDuration time.Duration    `json:"prompt_ns"`
	PromptTPS      float64          `json:"prompt_tokens_per_s"`
	GenTokens      int              `json:"generated_tokens"`
	GenDuration    time.Duration    `json:"generate_ns"`
	GenTPS         float64          `json:"generated_tokens_per_s"`
	LoadDuration   time.Duration    `json:"load_ns"`
	ResidentBytes  int64            `json:"resident_bytes"`
	StopReason     string           `json:"stop_reason"` // "eos", "stop" (a stop sequence), "length", "context", "canceled"
	Spec           *speculate.Stats `json:"spec,omitempty"`
	// Stream is what the weight streamer did during the generation (with
	// sessions interleaved, theirs too); nil when every layer is resident.
	Stream          *weights.Stats `json:"stream,omitempty"`
	Tokens          []int32        `json:"-"`
	PromptTokenIDs  []int32        `json:"-"`
	ContextCapacity int            `json:"context"`
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
// returned with it. With r.Spec set (and a draft loaded for the modes that
// need one), decoding is speculative: the output is the same as without it
// under greedy sampling, and identically distributed under sampling.
func (e *Engine) Generate(ctx context.Context, r Request, emit func(text string) error) (Stats, error) {
	ss, err := e.NewSession(r, nil)
	if err != nil {
		return Stats{LoadDuration: e.LoadTime}, err
	}
	defer ss.Close()
	for {
		done, err := ss.Step(ctx, emit)
		if err != nil || done {
			return ss.Stats(), err
		}
	}
}

// estimates returns the auto-mode estimates requests share: the draft's if
// one is loaded, else the target's own (n-gram drafting).
func (e *Engine) estimates() *speculate.Estimates {
	e.estMu.Lock()
	defer e.estMu.Unlock()
	if e.Draft != nil {
		if e.SpecEstimates == nil {
			e.SpecEstimates = speculate.NewEstimates()
		}
		return e.SpecEstimates
	}
	if e.ngramEstimates == nil {
		e.ngramEstimates = speculate.NewEstimates()
	}
	return e.ngramEstimates
}

func rate(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}
