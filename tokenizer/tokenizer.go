// Package tokenizer owns text ⇄ token-id conversion for GGUF models, reproducing
// llama.cpp's tokenizers byte for byte: SentencePiece-style BPE ("llama" vocabs,
// llm_tokenizer_spm) and GPT-2 byte-level BPE ("gpt2" vocabs, llm_tokenizer_bpe)
// with the gpt-2, llama-3 and qwen2 pre-tokenizers, special-token parsing,
// BOS/EOS insertion, end-of-generation detection, and (streaming) decoding.
//
// It is not a general tokenizer library: it reads only what llama.cpp reads
// from the tokenizer.ggml.* metadata and has no notion of chat templates,
// normalizers (NFKC, lowercasing) or the WPM/UGM/RWKV vocab types.
//
// Build a Tokenizer with FromGGUF, or fill a Vocab and call New. A Tokenizer
// is immutable and safe for concurrent use; a Decoder is not.
//
// Pre-tokenizers (tokenizer.ggml.pre, gpt2 vocabs only) are accepted by the
// names llama.cpp maps to the GPT-2 regex ("gpt-2", "phi-2", "mpt", "olmo", …),
// the Llama-3 regex ("llama-bpe", "llama3", "llama-v3", "dbrx", "smaug-bpe", …),
// the Qwen2 regex ("qwen2", "deepseek-r1-qwen", "stablelm2", …) and
// "default" (also used when the key is absent, as in llama.cpp); any other
// name is an error. The hand-written splitters agree with llama.cpp's matchers
// and with std::regex on its collapsed text (see testdata/regex_oracle.cpp).
//
// Character classes come from Go's unicode tables (Unicode 15.0) with
// llama.cpp's 15.1 letter additions patched in. Where llama.cpp's output
// depends on hash-map iteration order (which of several end-of-turn texts
// becomes EOT, the order of equally long special tokens) this package picks a
// fixed order: llama.cpp's list order, then token id.
package tokenizer

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// ErrInvalidUTF8 is wrapped by *InvalidUTF8Error.
var ErrInvalidUTF8 = errors.New("tokenizer: invalid UTF-8")

// ErrUnsupported is wrapped by errors for tokenizer models and pre-tokenizers
// this package does not implement.
var ErrUnsupported = errors.New("tokenizer: unsupported")

// InvalidUTF8Error reports that the text given to Encode is not valid UTF-8.
// llama.cpp would silently replace such bytes (with U+FFFD for BPE vocabs, by
// byte tokens for SPM vocabs); this package refuses them instead.
type InvalidUTF8Error struct {
	Offset int  // byte offset of the first invalid byte
	Byte   byte // the byte at Offset
}

func (e *InvalidUTF8Error) Error() string {
	return fmt.Sprintf("tokenizer: invalid UTF-8 at byte offset %d (byte 0x%02x)", e.Offset, e.Byte)
}

func (e *InvalidUTF8Error) Unwrap() error { return ErrInvalidUTF8 }

// NoToken is the id reported for a special token the vocab does not have.
const NoToken int32 = -1

// kind is the tokenizer algorithm.
type kind uint8

const (
	kindSPM kind = iota // tokenizer.ggml.model = "llama"
	kindBPE             // tokenizer.ggml.model = "gpt2"
)

// Token attributes, as llama.cpp's llama_token_attr (a bit set; llama.cpp ORs
// CONTROL into tokens whose text marks them as end-of-turn markers).
type attr uint16

const (
	attrUndefined   attr = 0
	attrUnknown     attr = 1 << 0
	attrUnused      attr = 1 << 1
	attrNormal      attr = 1 << 2
	attrControl     attr = 1 << 3
	attrUserDefined attr = 1 << 4
	attrByte        attr = 1 << 5
	attrLStrip      attr = 1 << 7
	attrRStrip      attr = 1 << 8
)

// Tokenizer converts between text and token ids for one vocab.
type Tokenizer struct {
	kind  kind
	model string // tokenizer.ggml.model
	pre   string // tokenizer.ggml.pre (for BPE; "default" when absent)
	split preSplitter

	tokens []string         // (n_vocab) raw vocab text, "▁"/"Ġ" escapes included
	scores []float32        // (n_vocab) SPM merge scores
	attrs  []attr           // (n_vocab)
	toID   map[string]int32 // text → id, over all tokens

	// Byte-level BPE.
	rawToID  map[string]int32  // decoded bytes of a token's text → id (tokens fully in the byte alphabet)
	byteTok  [256]int32        // SPM: <0xXX> (or the bare byte) token; BPE: the token of one byte
	merges   map[uint64]uint64 // (left id, right id) → rank<<32 | uint32(result id)
	ignoreMg bool              // llama-3: a pre-token that is itself a token skips merging

	bos, eos, eot, eom, unk, pad int32
	addBOS, addEOS               bool
	addSpacePrefix               bool // SPM: prefix " " to text that starts a fragment
	cleanSpaces                  bool // detokenize: llama.cpp's clean_up_tokenization_spaces
	eog                          map[int32]bool

	special []int32  // control/user-defined/unknown tokens, longest text first
	pieces  [][]byte // (n_vocab) token_to_piece(id, special=true)

	// For MinTokens: the most bytes of text one token can stand for (its
	// stored text is never shorter than the text it matches), and whether
	// some special token swallows the whitespace around it.
	maxCover int
	swallows bool
}

// MinTokens is a lower bound on the number of tokens Encode makes of text
// (BOS and EOS aside), found in one pass without tokenizing: a caller with
// a token limit can refuse a huge text before paying for its
// tokenization. Every token stands for at most a vocabulary entry's length
// of text; only whitespace can be swallowed by special tokens with the
// lstrip/rstrip attribute, so with those it counts the other bytes.
func (t *Tokenizer) MinTokens(text string) int {
	n := len(text)
	if t.swallows {
		n = 0
		for i := 0; i < len(text); i++ {
			if !isCSpace(text[i]) {
				n++
			}
		}
	}
	return (n + t.maxCover - 1) / t.maxCover
}

// Model returns tokenizer.ggml.model: "llama" (SentencePiece) or "gpt2" (byte-level BPE).
func (t *Tokenizer) Model() string { return t.model }

// Pre returns the pre-tokenizer name (tokenizer.ggml.pre). For SPM vocabs it is
// whatever the file says (llama.cpp ignores it); for BPE vocabs without the key
// it is "default", as in llama.cpp.
func (t *Tokenizer) Pre() string { return t.pre }

// VocabSize returns the number of tokens.
func (t *Tokenizer) VocabSize() int { return len(t.tokens) }

// BOS returns the beginning-of-sequence token, or NoToken.
func (t *Tokenizer) BOS() int32 { return t.bos }

// EOS returns the end-of-sequence token, or NoToken.
func (t *Tokenizer) EOS() int32 { return t.eos }

// EOT returns the end-of-turn token (from the file or detected by its text), or NoToken.
func (t *Tokenizer) EOT() int32 { return t.eot }

// EOM returns the end-of-message token, or NoToken.
func (t *Tokenizer) EOM() int32 { return t.eom }

// UNK returns the unknown token, or NoToken.
func (t *Tokenizer) UNK() int32 { return t.unk }

// PAD returns the padding token, or NoToken.
func (t *Tokenizer) PAD() int32 { return t.pad }

// AddBOS reports whether Encode with addSpecial prepends BOS.
func (t *Tokenizer) AddBOS() bool { return t.addBOS }

// AddEOS reports whether Encode with addSpecial appends EOS.
func (t *Tokenizer) AddEOS() bool { return t.addEOS }

// IsEOG reports whether id ends generation: EOS, EOT, EOM, and the tokens
// llama.cpp recognises by their text ("<|eot_id|>", "<|im_end|>",
// "<|endoftext|>", "<end_of_turn>", "</s>", …).
func (t *Tokenizer) IsEOG(id int32) bool { return t.eog[id] }

// IsControl reports whether id is a control token (decoded as nothing by Decode).
func (t *Tokenizer) IsControl(id int32) bool {
	return t.valid(id) && t.attrs[id]&attrControl != 0
}

// Piece returns the vocabulary text of id exactly as stored (with "▁" or the
// byte-level "Ġ" escapes), or "" for an id out of range.
func (t *Tokenizer) Piece(id int32) string {
	if !t.valid(id) {
		return ""
	}
	return t.tokens[id]
}

// Lookup returns the id of the token whose vocabulary text is s.
func (t *Tokenizer) Lookup(s string) (int32, bool) {
	id, ok := t.toID[s]
	return id, ok
}

func (t *Tokenizer) valid(id int32) bool { return id >= 0 && int(id) < len(t.tokens) }

// Encode converts text to token ids as llama.cpp's llama_tokenize does.
//
// With addSpecial, BOS is prepended and EOS appended when the vocab asks for
// them (AddBOS, AddEOS). With parseSpecial, the texts of control tokens found
// in text are emitted as those tokens; user-defined tokens are always matched,
// as in llama.cpp. Text that is not valid UTF-8 is rejected with an
// *InvalidUTF8Error.
func (t *Tokenizer) Encode(text string, addSpecial, parseSpecial bool) ([]int32, error) {
	return t.encode(text, addSpecial, parseSpecial, nil)
}

// EncodeLiteral is Encode with special tokens parsed everywhere but in the
// literal spans of text: a control token's text that touches one of their
// bytes is tokenized as plain text, as Encode does without parseSpecial.
// It is how a rendered chat keeps the template's markup as control tokens
// while what users wrote stays text, so that typing <|eot_id|> cannot forge
// a turn. Text outside the spans is not cut at their edges: without special
// texts in the spans the result is Encode's with parseSpecial. The spans
// must be within text, sorted and not overlapping.
func (t *Tokenizer) EncodeLiteral(text string, addSpecial bool, literal []Span) ([]int32, error) {
	for i, s := range literal {
		if s.Start < 0 || s.End < s.Start || s.End > len(text) || i > 0 && s.Start < literal[i-1].End {
			return nil, fmt.Errorf("tokenizer: literal span %d [%d, %d) is outside the text (%d bytes), unsorted or overlapping", i, s.Start, s.End, len(text))
		}
	}
	return t.encode(text, addSpecial, true, literal)
}

func (t *Tokenizer) encode(text string, addSpecial, parseSpecial bool, literal []Span) ([]int32, error) {
	if !utf8.ValidString(text) {
		return nil, invalidUTF8(text)
	}
	frags := t.partition(text, parseSpecial, literal)
	out := make([]int32, 0, len(text)/3+2)
	if addSpecial && t.addBOS {
		out = append(out, t.bos)
	}
	var err error
	switch t.kind {
	case kindSPM:
		prevSpecial := true // a fragment at the start gets the space prefix
		for _, f := range frags {
			if f.tok >= 0 {
				out = append(out, f.tok)
				prevSpecial = true
				continue
			}
			out, err = t.encodeSPM(text[f.start:f.end], t.addSpacePrefix && prevSpecial, out)
			if err != nil {
				return nil, err
			}
			prevSpecial = false
		}
	case kindBPE:
		var s bpeScratch
		for _, f := range frags {
			if f.tok >= 0 {
				out = append(out, f.tok)
				continue
			}
			out = t.encodeBPE(text[f.start:f.end], out, &s)
		}
	}
	if addSpecial && t.addEOS {
		out = append(out, t.eos)
	}
	return out, nil
}

func invalidUTF8(s string) error {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n <= 1 {
			return &InvalidUTF8Error{Offset: i, Byte: s[i]}
		}
		i += n
	}
	return ErrInvalidUTF8
}
