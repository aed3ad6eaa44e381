package tokenizer

import (
	"fmt"
	"sort"
	"strings"
)

// TokenType is a token's type as stored in tokenizer.ggml.token_type.
type TokenType int32

// Token types (llama.cpp's llama_token_type).
const (
	TypeUndefined   TokenType = 0
	TypeNormal      TokenType = 1
	TypeUnknown     TokenType = 2
	TypeControl     TokenType = 3
	TypeUserDefined TokenType = 4
	TypeUnused      TokenType = 5
	TypeByte        TokenType = 6
)

// Vocab is everything a Tokenizer is built from: the tokenizer.ggml.* metadata
// of a GGUF file. Optional entries are pointers; nil means the key is absent
// and llama.cpp's default applies.
type Vocab struct {
	Model string // tokenizer.ggml.model: "llama" or "gpt2"
	Pre   string // tokenizer.ggml.pre ("" = absent)
	Name  string // general.name; only used for llama.cpp's per-model token attributes (Phi-3)

	Tokens []string    // tokenizer.ggml.tokens
	Scores []float32   // tokenizer.ggml.scores (nil = all zero)
	Types  []TokenType // tokenizer.ggml.token_type (nil = all normal)
	Merges []string    // tokenizer.ggml.merges, "left right" (gpt2 only; ignored for llama)

	// Special token ids as stored. An id outside the vocab is ignored, as in
	// llama.cpp (files use 0xFFFFFFFF for "none").
	BOS, EOS, EOT, EOM, UNK, PAD *uint32
	FIMPad, FIMRep, FIMSep       *uint32

	AddBOS, AddEOS *bool // tokenizer.ggml.add_bos_token / add_eos_token
	AddSpacePrefix *bool // tokenizer.ggml.add_space_prefix
}

// New builds a Tokenizer from v, applying llama.cpp's defaults and checks
// (llama_vocab::impl::load).
func New(v Vocab) (*Tokenizer, error) {
	n := len(v.Tokens)
	if n == 0 {
		return nil, fmt.Errorf("tokenizer: empty vocabulary")
	}
	if n > 1<<31-1 {
		return nil, fmt.Errorf("tokenizer: vocabulary of %d tokens is too large", n)
	}
	if v.Scores != nil && len(v.Scores) != n {
		return nil, fmt.Errorf("tokenizer: %d scores for %d tokens", len(v.Scores), n)
	}
	if v.Types != nil && len(v.Types) != n {
		return nil, fmt.Errorf("tokenizer: %d token types for %d tokens", len(v.Types), n)
	}

	t := &Tokenizer{model: v.Model, pre: v.Pre}
	switch v.Model {
	case "llama":
		t.kind = kindSPM
		t.bos, t.eos, t.unk = 1, 2, 0
		t.addSpacePrefix, t.addBOS = true, true
	case "gpt2":
		t.kind = kindBPE
		t.bos, t.eos, t.unk = 11, 11, NoToken
		if t.pre == "" {
			t.pre = "default" // llama.cpp warns and falls back to this
		}
		p, ok := preTokenizers[t.pre]
		if !ok {
			return nil, fmt.Errorf("tokenizer: unknown pre-tokenizer %q (tokenizer.ggml.pre): %w", t.pre, ErrUnsupported)
		}
		t.split = p.split
		t.ignoreMg = p.ignoreMerges
		t.addBOS = p.addBOS
		t.cleanSpaces = p.cleanSpaces
	case "":
		return nil, fmt.Errorf("tokenizer: no tokenizer model (tokenizer.ggml.model)")
	default:
		return nil, fmt.Errorf("tokenizer: unknown tokenizer model %q (tokenizer.ggml.model; want \"llama\" or \"gpt2\"): %w", v.Model, ErrUnsupported)
	}
	t.eot, t.eom, t.pad = NoToken, NoToken, NoToken
	if v.AddSpacePrefix != nil {
		t.addSpacePrefix = *v.AddSpacePrefix
	}

	// Tokens, scores, attributes.
	t.tokens = make([]string, n)
	t.scores = make([]float32, n)
	t.attrs = make([]attr, n)
	t.toID = make(map[string]int32, n)
	for i, s := range v.Tokens {
		if s == "" {
			s = fmt.Sprintf("[EMPTY_%d]", i) // llama.cpp's stand-in
		}
		if j, dup := t.toID[s]; dup {
			return nil, fmt.Errorf("tokenizer: duplicate token %q: ids %d and %d", s, j, i)
		}
		t.toID[s] = int32(i)
		t.tokens[i] = s
		if v.Scores != nil {
			t.scores[i] = v.Scores[i]
		}
		t.attrs[i] = attrNormal
		if v.Types != nil {
			t.attrs[i] = typeAttr(v.Types[i])
		}
	}

	if t.kind == kindBPE { // SPM vocabs ignore merges, as llama.cpp does
		if err := t.initBPE(v.Merges); err != nil {
			return nil, err
		}
	}
	if err := t.initBytes(); err != nil {
		return nil, err
	}

	// Special ids: defaults outside the vocab are disabled; stored ids outside
	// the vocab are ignored.
	for _, d := range []*int32{&t.bos, &t.eos, &t.unk} {
		if !t.valid(*d) {
			*d = NoToken
		}
	}
	set := func(dst *int32, p *uint32) {
		if p != nil && uint64(*p) < uint64(n) {
			*dst = int32(*p)
		}
	}
	set(&t.bos, v.BOS)
	set(&t.eos, v.EOS)
	set(&t.eot, v.EOT)
	set(&t.eom, v.EOM)
	set(&t.unk, v.UNK)
	set(&t.pad, v.PAD)
	fimPad, fimRep, fimSep := NoToken, NoToken, NoToken
	set(&fimPad, v.FIMPad)
	set(&fimRep, v.FIMRep)
	set(&fimSep, v.FIMSep)

	if v.AddBOS != nil {
		t.addBOS = *v.AddBOS
	}
	if v.AddEOS != nil {
		t.addEOS = *v.AddEOS
	}
	if t.addBOS && t.bos == NoToken {
		return nil, fmt.Errorf("tokenizer: tokenizer.ggml.add_bos_token is true, but tokenizer.ggml.bos_token_id is not set")
	}
	if t.addEOS && t.eos == NoToken {
		return nil, fmt.Errorf("tokenizer: tokenizer.ggml.add_eos_token is true, but tokenizer.ggml.eos_token_id is not set")
	}

	t.detectSpecial(&fimPad, &fimRep, &fimSep)

	// Special tokens matched in text, longest first (llama.cpp sorts by length
	// only; equal lengths keep id order here).
	for i, a := range t.attrs {
		if a&(attrControl|attrUserDefined|attrUnknown) != 0 {
			t.special = append(t.special, int32(i))
		}
	}
	sort.SliceStable(t.special, func(a, b int) bool {
		return len(t.tokens[t.special[a]]) > len(t.tokens[t.special[b]])
	})
	t.perModelAttrs(v.Name)

	t.pieces = make([][]byte, n)
	t.maxCover = 4 // an unknown token stands for one character
	for i := range t.tokens {
		t.pieces[i] = t.piece(int32(i))
		t.maxCover = max(t.maxCover, len(t.tokens[i]))
	}
	for _, id := range t.special {
		if t.attrs[id]&(attrLStrip|attrRStrip) != 0 {
			t.swallows = true
		}
	}
	return t, nil
}

func typeAttr(tt TokenType) attr {
	switch tt {
	case TypeUnknown:
		return attrUnknown
	case TypeUnused:
		return attrUnused
	case TypeNormal:
		return attrNormal
	case TypeControl:
		return attrControl
	case TypeUserDefined:
		return attrUserDefined
	case TypeByte:
		return attrByte
	}
	return attrUndefined
}

// Texts llama.cpp uses to find special tokens the file does not name, in the
// order of its lists (the first present text wins here; llama.cpp takes
// whichever its hash map yields first).
var (
	eotTexts = []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
		"<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]", "<｜end▁of▁sentence｜>", "<end_of_utterance>"}
	eomTexts    = []string{"<|eom_id|>"}
	fimPadTexts = []string{"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"}
	fimRepTexts = []string{"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"}
	fimSepTexts = []string{"<|file_sep|>"}
	eogTexts    = []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>",
		"<|calls|>", "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]",
		"[EOS]", "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
		"<｜end▁of▁sentence｜>", "[e~["}
	// FIM prefix/suffix/middle markers: llama.cpp marks the one it finds as a control token.
	fimPreTexts = []string{"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>", "▁<PRE>", "<|code_prefix|>", "<|prefix|>"}
	fimSufTexts = []string{"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>", "▁<SUF>", "<|code_suffix|>", "<|suffix|>"}
	fimMidTexts = []string{"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>", "▁<MID>", "<|code_middle|>", "<|middle|>"}
)

// detectSpecial finds EOT/EOM/FIM tokens by text, marks them as control
// tokens, and builds the end-of-generation set, as llama.cpp's vocab loader.
func (t *Tokenizer) detectSpecial(fimPad, fimRep, fimSep *int32) {
	mark := func(id int32) { t.attrs[id] |= attrControl }
	find := func(dst *int32, texts []string) {
		if *dst != NoToken {
			return
		}
		for _, s := range texts {
			if id, ok := t.toID[s]; ok {
				*dst = id
				mark(id)
				return
			}
		}
	}
	find(&t.eot, eotTexts)
	find(&t.eom, eomTexts)
	fimPre, fimSuf, fimMid := NoToken, NoToken, NoToken
	find(&fimPre, fimPreTexts)
	find(&fimSuf, fimSufTexts)
	find(&fimMid, fimMidTexts)
	find(fimPad, fimPadTexts)
	find(fimRep, fimRepTexts)
	find(fimSep, fimSepTexts)

	t.eog = make(map[int32]bool)
	for _, id := range []int32{*fimPad, *fimRep, *fimSep} {
		if id != NoToken {
			t.eog[id] = true
		}
	}
	for _, s := range eogTexts {
		if id, ok := t.toID[s]; ok {
			t.eog[id] = true
			mark(id)
		}
	}
	// gpt-oss: these are always rendered.
	for _, s := range []string{"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"} {
		if id, ok := t.toID[s]; ok {
			t.attrs[id] = attrUserDefined
		}
	}
	for _, id := range []int32{t.eos, t.eot, t.eom} {
		if id != NoToken {
			t.eog[id] = true
		}
	}
	// o200k_harmony and solar-open: "<|end|>" is not end of generation there.
	has := func(s string) (int32, bool) {
		id, ok := t.toID[s]
		return id, ok && t.eog[id]
	}
	_, ret := has("<|return|>")
	_, call := has("<|call|>")
	_, calls := has("<|calls|>")
	_, flush := has("<|flush|>")
	if end, ok := has("<|end|>"); ok && (ret && (call || calls) || (call || calls) && flush) {
		delete(t.eog, end)
		t.attrs[end] = attrUserDefined
	}
	// gemma4 and paddleocr: "</s>" is not end of generation when "<|tool_response>" is.
	if _, tr := has("<|tool_response>"); tr {
		if s, ok := has("</s>"); ok {
			delete(t.eog, s)
			t.attrs[s] = attrNormal
		}
	}
}

// perModelAttrs applies llama.cpp's per-model token attributes (keyed on
// general.name): for Phi-3, special tokens swallow the whitespace after them.
func (t *Tokenizer) perModelAttrs(name string) {
	name = strings.ToLower(name)
	if !strings.Contains(name, "phi-3") && !strings.Contains(name, "phi3") {
		return
	}
	for _, id := range t.special {
		t.attrs[id] |= attrRStrip
	}
	if id, ok := t.toID["</s>"]; ok {
		t.attrs[id] |= attrRStrip
	}
	for _, s := range []string{"<unk>", "<s>", "<|endoftext|>"} {
		if id, ok := t.toID[s]; ok {
			t.attrs[id] &^= attrRStrip
		}
	}
}
