// Package model owns the transformer of the Llama family (llama, qwen2,
// qwen3): the hyperparameters read from GGUF metadata, the weights declared
// by their GGUF tensor names, and a forward pass over a batch of tokens that
// may form a tree, run layer by layer so that callers can act between layers
// (yield, prune, stream weights in), with the LM head applied only to the
// rows asked for. It knows nothing of speculation or sampling.
package model

import (
	"errors"
	"fmt"
	"math"

	"shade/gguf"
)

// Config holds the hyperparameters of a model.
type Config struct {
	Arch       string  // general.architecture: llama, qwen2 or qwen3
	Name       string  // general.name, if any
	Dim        int     // embedding length
	Layers     int     // transformer blocks
	Heads      int     // query heads
	KVHeads    int     // key/value heads (GQA when < Heads)
	HeadDim    int     // per-head dimension of Q and K (and V)
	FFN        int     // feed-forward hidden size
	Vocab      int     // rows of the token embedding
	ContextLen int     // training context length
	RMSEps     float32 // RMSNorm epsilon
	RopeBase   float32 // RoPE frequency base
	RopeDim    int     // dimensions rotated per head (≤ HeadDim)
	RopeNeoX   bool    // rotate halves (NeoX) rather than adjacent pairs
	RopeScale  float32 // linear position scale (1 when unscaled)
	QKVBias    bool    // qwen2: biases on Q, K, V
	QKNorm     bool    // qwen3: RMSNorm on each Q and K head
	TiedOutput bool    // LM head shares token_embd.weight
}

// QDim is the width of the concatenated query heads.
func (c *Config) QDim() int { return c.Heads * c.HeadDim }

// KVDim is the width of the concatenated key (or value) heads.
func (c *Config) KVDim() int { return c.KVHeads * c.HeadDim }

// ErrUnsupported is wrapped by errors about files shade cannot run.
var ErrUnsupported = errors.New("unsupported model")

// architecture describes what differs between the supported architectures.
type architecture struct {
	ropeNeoX bool
	qkvBias  bool
	qkNorm   bool
}

var architectures = map[string]architecture{
	"llama": {},
	"qwen2": {ropeNeoX: true, qkvBias: true},
	"qwen3": {ropeNeoX: true, qkNorm: true},
}

// ReadConfig reads the hyperparameters from a file's metadata and checks
// them for consistency. Shapes of tensors are checked when weights load.
func ReadConfig(f *gguf.File) (*Config, error) {
	arch, err := f.Meta.String("general.architecture")
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	a, ok := architectures[arch]
	if !ok {
		return nil, fmt.Errorf("model: architecture %q: %w (shade runs llama, qwen2, qwen3)", arch, ErrUnsupported)
	}
	c := &Config{Arch: arch, RopeNeoX: a.ropeNeoX, QKVBias: a.qkvBias, QKNorm: a.qkNorm, RopeScale: 1}
	c.Name, _ = f.Meta.String("general.name")
	p := arch + "."
	var errs []error
	intKey := func(key string, def int, required bool) int {
		if !f.Meta.Has(key) && !required {
			return def
		}
		n, err := f.Meta.Int(key)
		if err != nil {
			errs = append(errs, err)
			return 0
		}
		if n <= 0 || n > 1<<24 {
			errs = append(errs, fmt.Errorf("%s = %d out of range", key, n))
			return 0
		}
		return int(n)
	}
	floatKey := func(key string, def float32) float32 {
		if !f.Meta.Has(key) {
			return def
		}
		x, err := f.Meta.Float32(key)
		if err != nil {
			errs = append(errs, err)
		}
		return x
	}
	c.Dim = intKey(p+"embedding_length", 0, true)
	c.Layers = intKey(p+"block_count", 0, true)
	c.FFN = intKey(p+"feed_forward_length", 0, true)
	c.Heads = intKey(p+"attention.head_count", 0, true)
	c.KVHeads = intKey(p+"attention.head_count_kv", c.Heads, false)
	c.ContextLen = intKey(p+"context_length", 2048, false)
	if len(errs) > 0 {
		return nil, fmt.Errorf("model: %w", errors.Join(errs...))
	}
	c.HeadDim = intKey(p+"attention.key_length", c.Dim/c.Heads, false)
	if vl := intKey(p+"attention.value_length", c.HeadDim, false); vl != c.HeadDim {
		errs = append(errs, fmt.Errorf("value_length %d ≠ key_length %d: %w", vl, c.HeadDim, ErrUnsupported))
	}
	c.RopeDim = intKey(p+"rope.dimension_count", c.HeadDim, false)
	c.RMSEps = floatKey(p+"attention.layer_norm_rms_epsilon", 1e-5)
	c.RopeBase = floatKey(p+"rope.freq_base", 10000)
	if f.Meta.Has(p + "rope.scaling.type") {
		typ, err := f.Meta.String(p + "rope.scaling.type")
		switch {
		case err != nil:
			errs = append(errs, err)
		case typ == "none":
		case typ == "linear":
			factor := floatKey(p+"rope.scaling.factor", 1)
			if !(factor > 0) || math.IsInf(float64(factor), 0) { // NaN too
				errs = append(errs, fmt.Errorf("rope.scaling.factor %v must be a positive number", factor))
			} else {
				c.RopeScale = 1 / factor
			}
		default:
			errs = append(errs, fmt.Errorf("rope scaling %q: %w", typ, ErrUnsupported))
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("model: %w", errors.Join(errs...))
	}
	switch {
	case c.Heads%c.KVHeads != 0:
		return nil, fmt.Errorf("model: %d heads is not a multiple of %d kv heads", c.Heads, c.KVHeads)
	case c.HeadDim < 2 || c.RopeDim < 2 || c.HeadDim%2 != 0 || c.RopeDim%2 != 0 || c.RopeDim > c.HeadDim:
		return nil, fmt.Errorf("model: head dim %d and rope dim %d must be even and positive, rope ≤ head", c.HeadDim, c.RopeDim)
	case int64(c.Heads)*int64(c.HeadDim) > 1<<24:
		return nil, fmt.Errorf("model: %d heads of %d dimensions out of range", c.Heads, c.HeadDim)
	case !(c.RMSEps > 0 && c.RMSEps <= 1): // NaN too
		return nil, fmt.Errorf("model: rms epsilon %v out of range (0, 1]", c.RMSEps)
	case !(c.RopeBase > 1) || math.IsInf(float64(c.RopeBase), 0): // NaN too
		return nil, fmt.Errorf("model: rope.freq_base %v out of range (a number above 1)", c.RopeBase)
	}
	return c, nil
}
