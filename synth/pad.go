package synth

import (
	"bytes"
	"fmt"

	"shade/gguf"
)

// unusedTokenType is llama.cpp's LLAMA_TOKEN_TYPE_UNUSED.
const unusedTokenType = 5

// PadVocab returns a vocabulary-only GGUF holding v's tokenizer with extra
// unused tokens ("<unused_N>", never produced by encoding) appended up to n
// tokens, so that a model of a real shape (a 128256-token LM head, say) can be
// made from a small vocabulary. v is returned as is when it has ≥ n tokens.
func PadVocab(v *gguf.File, n int) (*gguf.File, error) {
	tokens, err := v.Meta.Strings("tokenizer.ggml.tokens")
	if err != nil {
		return nil, fmt.Errorf("synth: pad vocabulary: %w", err)
	}
	if len(tokens) >= n {
		return v, nil
	}
	var buf bytes.Buffer
	w := gguf.NewWriter(&buf)
	if err := w.CopyMeta(&v.Meta, "tokenizer."); err != nil {
		return nil, err
	}
	extra := n - len(tokens)
	padded := append(append([]string(nil), tokens...), make([]string, extra)...)
	for i := len(tokens); i < n; i++ {
		padded[i] = fmt.Sprintf("<unused_%d>", i)
	}
	if err := w.Set("tokenizer.ggml.tokens", padded); err != nil {
		return nil, err
	}
	if scores, err := v.Meta.Float32s("tokenizer.ggml.scores"); err == nil {
		out := append(append([]float32(nil), scores...), make([]float32, extra)...)
		for i := len(scores); i < n; i++ {
			out[i] = -1e9
		}
		w.Set("tokenizer.ggml.scores", out)
	}
	if types, err := v.Meta.Int32s("tokenizer.ggml.token_type"); err == nil {
		out := append(append([]int32(nil), types...), make([]int32, extra)...)
		for i := len(types); i < n; i++ {
			out[i] = unusedTokenType
		}
		w.Set("tokenizer.ggml.token_type", out)
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return gguf.Parse(buf.Bytes())
}
