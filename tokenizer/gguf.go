package tokenizer

import (
	"errors"
	"fmt"
	"math"

	"shade/gguf"
)

// GGUF metadata keys read by FromGGUF.
const (
	keyModel          = "tokenizer.ggml.model"
	keyPre            = "tokenizer.ggml.pre"
	keyTokens         = "tokenizer.ggml.tokens"
	keyScores         = "tokenizer.ggml.scores"
	keyTypes          = "tokenizer.ggml.token_type"
	keyMerges         = "tokenizer.ggml.merges"
	keyBOS            = "tokenizer.ggml.bos_token_id"
	keyEOS            = "tokenizer.ggml.eos_token_id"
	keyEOT            = "tokenizer.ggml.eot_token_id"
	keyEOM            = "tokenizer.ggml.eom_token_id"
	keyUNK            = "tokenizer.ggml.unknown_token_id"
	keyPAD            = "tokenizer.ggml.padding_token_id"
	keyFIMPad         = "tokenizer.ggml.fim_pad_token_id"
	keyFIMRep         = "tokenizer.ggml.fim_rep_token_id"
	keyFIMSep         = "tokenizer.ggml.fim_sep_token_id"
	keyAddBOS         = "tokenizer.ggml.add_bos_token"
	keyAddEOS         = "tokenizer.ggml.add_eos_token"
	keyAddSpacePrefix = "tokenizer.ggml.add_space_prefix"
	keyName           = "general.name"
)

// FromGGUF builds the Tokenizer described by f's tokenizer.ggml.* metadata.
// The tokenizer does not refer to f afterwards.
func FromGGUF(f *gguf.File) (*Tokenizer, error) {
	v, err := VocabFromGGUF(&f.Meta)
	if err != nil {
		return nil, err
	}
	return New(v)
}

// VocabFromGGUF reads the tokenizer metadata of a GGUF file into a Vocab.
// Missing optional keys stay nil; a key of the wrong type is an error.
func VocabFromGGUF(m *gguf.Metadata) (Vocab, error) {
	var v Vocab
	var err error
	if v.Model, err = m.String(keyModel); err != nil {
		return v, fmt.Errorf("tokenizer: %w", err)
	}
	if v.Pre, err = optional(m, keyPre, m.String); err != nil {
		return v, err
	}
	if v.Name, err = optional(m, keyName, m.String); err != nil {
		return v, err
	}
	if v.Tokens, err = m.Strings(keyTokens); err != nil {
		return v, fmt.Errorf("tokenizer: %w", err)
	}
	if m.Has(keyScores) {
		if v.Scores, err = m.Float32s(keyScores); err != nil {
			// llama.cpp also accepts integer scores.
			is, ierr := m.Int32s(keyScores)
			if ierr != nil {
				return v, fmt.Errorf("tokenizer: %w", err)
			}
			v.Scores = make([]float32, len(is))
			for i, x := range is {
				v.Scores[i] = float32(x)
			}
		}
	}
	if m.Has(keyTypes) {
		ts, err := m.Int32s(keyTypes)
		if err != nil {
			return v, fmt.Errorf("tokenizer: %w", err)
		}
		v.Types = make([]TokenType, len(ts))
		for i, x := range ts {
			v.Types[i] = TokenType(x)
		}
	}
	if m.Has(keyMerges) {
		if v.Merges, err = m.Strings(keyMerges); err != nil {
			return v, fmt.Errorf("tokenizer: %w", err)
		}
	}
	for _, k := range []struct {
		key string
		dst **uint32
	}{
		{keyBOS, &v.BOS}, {keyEOS, &v.EOS}, {keyEOT, &v.EOT}, {keyEOM, &v.EOM},
		{keyUNK, &v.UNK}, {keyPAD, &v.PAD},
		{keyFIMPad, &v.FIMPad}, {keyFIMRep, &v.FIMRep}, {keyFIMSep, &v.FIMSep},
	} {
		id, err := optionalPtr(m, k.key, m.Int)
		if err != nil {
			return v, err
		}
		if id != nil && *id >= 0 && *id <= math.MaxUint32 { // negative: "none"
			*k.dst = new(uint32(*id))
		}
	}
	for _, k := range []struct {
		key string
		dst **bool
	}{
		{keyAddBOS, &v.AddBOS}, {keyAddEOS, &v.AddEOS}, {keyAddSpacePrefix, &v.AddSpacePrefix},
	} {
		if *k.dst, err = optionalPtr(m, k.key, m.Bool); err != nil {
			return v, err
		}
	}
	return v, nil
}

func optional[T any](m *gguf.Metadata, key string, get func(string) (T, error)) (T, error) {
	x, err := get(key)
	if err != nil && !errors.Is(err, gguf.ErrKeyNotFound) {
		return x, fmt.Errorf("tokenizer: %w", err)
	}
	return x, nil
}

func optionalPtr[T any](m *gguf.Metadata, key string, get func(string) (T, error)) (*T, error) {
	if !m.Has(key) {
		return nil, nil
	}
	x, err := get(key)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	return &x, nil
}
