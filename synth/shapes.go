package synth

import (
	"fmt"
	"sort"
	"strings"
)

// Shape is the architecture and hyperparameters of a model: everything a
// GGUF file needs except the weights and the tokenizer.
//
// Vocab is the real model's vocabulary size, kept for documentation and
// sizing only: the files Write produces always take their vocabulary size
// from the tokenizer they copy (Options.Vocab).
type Shape struct {
	Name       string // what LookupShape finds it by, e.g. "llama3-8b"
	Arch       string // general.architecture: llama, qwen2 or qwen3
	Dim        int    // embedding length
	Layers     int    // transformer blocks
	Heads      int    // query heads
	KVHeads    int    // key/value heads
	HeadDim    int    // per-head dimension of Q, K and V
	FFN        int    // feed-forward hidden size
	Vocab      int    // the real model's vocabulary size (0: none); not what is written
	ContextLen int    // training context length
	RopeBase   float32
	RMSEps     float32
	Tied       bool // the LM head shares token_embd.weight (no output.weight)
	QKVBias    bool // qwen2: attn_{q,k,v}.bias
	QKNorm     bool // qwen3: attn_{q,k}_norm.weight

	// Llama3Rope writes rope_freqs.weight: Llama 3.1's per-frequency
	// divisors computed from the four parameters below, as llama.cpp's
	// convert_hf_to_gguf.py does for rope_type "llama3".
	Llama3Rope      bool
	RopeFactor      float32 // "factor"
	RopeLowFreq     float32 // "low_freq_factor"
	RopeHighFreq    float32 // "high_freq_factor"
	RopeOrigContext int     // "original_max_position_embeddings"
}

// QDim is the width of the concatenated query heads.
func (s Shape) QDim() int { return s.Heads * s.HeadDim }

// KVDim is the width of the concatenated key (or value) heads.
func (s Shape) KVDim() int { return s.KVHeads * s.HeadDim }

// Params is the number of weights of the shape for a vocabulary of vocab
// tokens (norms and biases included).
func (s Shape) Params(vocab int) int64 {
	d, q, kv, f := int64(s.Dim), int64(s.QDim()), int64(s.KVDim()), int64(s.FFN)
	block := d*q + 2*d*kv + q*d + 3*d*f + 2*d
	if s.QKVBias {
		block += q + 2*kv
	}
	if s.QKNorm {
		block += 2 * int64(s.HeadDim)
	}
	n := int64(s.Layers)*block + int64(vocab)*d + d
	if !s.Tied {
		n += int64(vocab) * d
	}
	if s.Llama3Rope {
		n += int64(s.HeadDim / 2)
	}
	return n
}

var shapes = []Shape{
	{
		// meta-llama/Llama-3.2-1B
		Name: "llama3-1b", Arch: "llama", Dim: 2048, Layers: 16, Heads: 32, KVHeads: 8, HeadDim: 64,
		FFN: 8192, Vocab: 128256, ContextLen: 131072, RopeBase: 500000, RMSEps: 1e-5, Tied: true,
		Llama3Rope: true, RopeFactor: 32, RopeLowFreq: 1, RopeHighFreq: 4, RopeOrigContext: 8192,
	},
	{
		// meta-llama/Llama-3.1-8B
		Name: "llama3-8b", Arch: "llama", Dim: 4096, Layers: 32, Heads: 32, KVHeads: 8, HeadDim: 128,
		FFN: 14336, Vocab: 128256, ContextLen: 131072, RopeBase: 500000, RMSEps: 1e-5,
		Llama3Rope: true, RopeFactor: 8, RopeLowFreq: 1, RopeHighFreq: 4, RopeOrigContext: 8192,
	},
	{
		// meta-llama/Llama-3.2-3B: three query heads a KV head
		Name: "llama3-3b", Arch: "llama", Dim: 3072, Layers: 28, Heads: 24, KVHeads: 8, HeadDim: 128,
		FFN: 8192, Vocab: 128256, ContextLen: 131072, RopeBase: 500000, RMSEps: 1e-5, Tied: true,
		Llama3Rope: true, RopeFactor: 32, RopeLowFreq: 1, RopeHighFreq: 4, RopeOrigContext: 8192,
	},
	{
		// meta-llama/Llama-2-7b-hf
		Name: "llama2-7b", Arch: "llama", Dim: 4096, Layers: 32, Heads: 32, KVHeads: 32, HeadDim: 128,
		FFN: 11008, Vocab: 32000, ContextLen: 4096, RopeBase: 10000, RMSEps: 1e-5,
	},
	{
		// Qwen/Qwen2.5-0.5B
		Name: "qwen2.5-0.5b", Arch: "qwen2", Dim: 896, Layers: 24, Heads: 14, KVHeads: 2, HeadDim: 64,
		FFN: 4864, Vocab: 151936, ContextLen: 32768, RopeBase: 1e6, RMSEps: 1e-6, Tied: true, QKVBias: true,
	},
	{
		// Qwen/Qwen2.5-7B: seven query heads a KV head
		Name: "qwen2.5-7b", Arch: "qwen2", Dim: 3584, Layers: 28, Heads: 28, KVHeads: 4, HeadDim: 128,
		FFN: 18944, Vocab: 152064, ContextLen: 131072, RopeBase: 1e6, RMSEps: 1e-6, QKVBias: true,
	},
	{
		// Qwen/Qwen3-0.6B
		Name: "qwen3-0.6b", Arch: "qwen3", Dim: 1024, Layers: 28, Heads: 16, KVHeads: 8, HeadDim: 128,
		FFN: 3072, Vocab: 151936, ContextLen: 40960, RopeBase: 1e6, RMSEps: 1e-6, Tied: true, QKNorm: true,
	},
	// Tiny shapes for tests and the demo. FFN is 192 (not llama2.c's 172)
	// so that every row length is a whole number of Q8_0/Q4_0 blocks.
	{
		Name: "tiny", Arch: "llama", Dim: 64, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 16,
		FFN: 192, ContextLen: 2048, RopeBase: 10000, RMSEps: 1e-5,
	},
	{
		Name: "tiny-qwen2", Arch: "qwen2", Dim: 64, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 16,
		FFN: 192, ContextLen: 2048, RopeBase: 1e6, RMSEps: 1e-6, Tied: true, QKVBias: true,
	},
	{
		// head_dim 32 ≠ dim/heads = 16, as in Qwen3.
		Name: "tiny-qwen3", Arch: "qwen3", Dim: 64, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 32,
		FFN: 192, ContextLen: 2048, RopeBase: 1e6, RMSEps: 1e-6, Tied: true, QKNorm: true,
	},
}

func init() {
	sort.Slice(shapes, func(i, j int) bool { return shapes[i].Name < shapes[j].Name })
}

// Shapes returns the known shapes, sorted by name.
func Shapes() []Shape { return append([]Shape(nil), shapes...) }

// LookupShape returns the known shape called name.
func LookupShape(name string) (Shape, error) {
	names := make([]string, len(shapes))
	for i, s := range shapes {
		if s.Name == name {
			return s, nil
		}
		names[i] = s.Name
	}
	return Shape{}, fmt.Errorf("synth: unknown shape %q (known: %s)", name, strings.Join(names, ", "))
}

// validate checks that a shape is one the model package can load.
func (s Shape) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("synth: shape %q: %s", s.Name, fmt.Sprintf(format, args...))
	}
	switch s.Arch {
	case "llama", "qwen2", "qwen3":
	default:
		return bad("architecture %q (synth writes llama, qwen2, qwen3)", s.Arch)
	}
	switch {
	case s.Dim <= 0 || s.Layers <= 0 || s.Heads <= 0 || s.KVHeads <= 0 || s.HeadDim <= 0 || s.FFN <= 0:
		return bad("dimensions must be positive (dim %d, layers %d, heads %d/%d, head dim %d, ffn %d)",
			s.Dim, s.Layers, s.Heads, s.KVHeads, s.HeadDim, s.FFN)
	case s.Heads%s.KVHeads != 0:
		return bad("%d heads is not a multiple of %d kv heads", s.Heads, s.KVHeads)
	case s.HeadDim%2 != 0:
		return bad("head dim %d is odd", s.HeadDim)
	case s.ContextLen <= 0:
		return bad("context length %d", s.ContextLen)
	case !(s.RopeBase > 1):
		return bad("rope base %v", s.RopeBase)
	case !(s.RMSEps > 0 && s.RMSEps < 1):
		return bad("rms epsilon %v", s.RMSEps)
	case s.Llama3Rope && !(s.RopeFactor > 0 && s.RopeHighFreq > s.RopeLowFreq && s.RopeLowFreq > 0 && s.RopeOrigContext > 0):
		return bad("llama3 rope parameters (factor %v, low %v, high %v, original context %d)",
			s.RopeFactor, s.RopeLowFreq, s.RopeHighFreq, s.RopeOrigContext)
	}
	return nil
}
