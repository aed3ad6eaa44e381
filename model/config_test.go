package model

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"shade/gguf"
)

// TestBadHyperparameters: NaN, infinite, negative or zero hyperparameters
// in the metadata are refused when the model loads, naming the key.
func TestBadHyperparameters(t *testing.T) {
	conformanceModels(t)
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	cases := []struct {
		name string
		meta map[string]any
		want string
	}{
		{"rope base NaN", map[string]any{"llama.rope.freq_base": nan}, "rope.freq_base NaN"},
		{"rope base +Inf", map[string]any{"llama.rope.freq_base": inf}, "rope.freq_base +Inf"},
		{"rope base negative", map[string]any{"llama.rope.freq_base": float32(-10000)}, "rope.freq_base"},
		{"rms eps NaN", map[string]any{"llama.attention.layer_norm_rms_epsilon": nan}, "rms epsilon NaN"},
		{"rms eps -Inf", map[string]any{"llama.attention.layer_norm_rms_epsilon": -inf}, "rms epsilon"},
		{"rope scale NaN", map[string]any{"llama.rope.scaling.type": "linear", "llama.rope.scaling.factor": nan}, "rope.scaling.factor NaN"},
		{"rope scale Inf", map[string]any{"llama.rope.scaling.type": "linear", "llama.rope.scaling.factor": inf}, "rope.scaling.factor"},
		{"context negative", map[string]any{"llama.context_length": int32(-4)}, "context_length"},
		{"context zero", map[string]any{"llama.context_length": uint32(0)}, "context_length"},
		{"rope dims zero", map[string]any{"llama.rope.dimension_count": uint32(0)}, "dimension_count"},
		{"heads too many", map[string]any{"llama.attention.head_count": uint32(1 << 20), "llama.attention.head_count_kv": uint32(1 << 20)}, "head"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := rewriteModel(t, "llama-tiny-q8_0.gguf", tc.meta, "", "")
			m, err := Open(path, 1)
			if err == nil {
				m.Close()
				t.Fatal("loaded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not mention %q", err, tc.want)
			}
		})
	}
}

// FuzzReadConfig: whatever the hyperparameters, ReadConfig returns an
// error or a configuration every later step can rely on (positive shapes,
// finite positive constants), and never panics.
func FuzzReadConfig(f *testing.F) {
	f.Add(uint32(64), uint32(5), uint32(172), uint32(8), uint32(4), uint32(2048), uint32(8), float32(1e-5), float32(10000), "", float32(1))
	f.Add(uint32(4096), uint32(32), uint32(11008), uint32(32), uint32(32), uint32(0), uint32(0), float32(math.NaN()), float32(math.Inf(1)), "linear", float32(math.NaN()))
	f.Fuzz(func(t *testing.T, dim, layers, ffn, heads, kvHeads, ctx, ropeDim uint32, eps, base float32, scaling string, factor float32) {
		var buf bytes.Buffer
		w := gguf.NewWriter(&buf)
		w.Set("general.architecture", "llama")
		for k, v := range map[string]uint32{"embedding_length": dim, "block_count": layers, "feed_forward_length": ffn,
			"attention.head_count": heads, "attention.head_count_kv": kvHeads, "context_length": ctx, "rope.dimension_count": ropeDim} {
			w.Set("llama."+k, v)
		}
		w.Set("llama.attention.layer_norm_rms_epsilon", eps)
		w.Set("llama.rope.freq_base", base)
		if scaling != "" {
			w.Set("llama.rope.scaling.type", scaling)
			w.Set("llama.rope.scaling.factor", factor)
		}
		if err := w.Close(); err != nil {
			t.Skip(err)
		}
		file, err := gguf.Parse(buf.Bytes())
		if err != nil {
			t.Skip(err)
		}
		c, err := ReadConfig(file)
		if err != nil {
			return
		}
		finitePos := func(x float32) bool { return x > 0 && !math.IsInf(float64(x), 0) }
		if c.Dim <= 0 || c.Layers <= 0 || c.FFN <= 0 || c.Heads <= 0 || c.KVHeads <= 0 || c.HeadDim <= 0 || c.RopeDim <= 0 || c.ContextLen <= 0 ||
			!finitePos(c.RMSEps) || !finitePos(c.RopeBase) || !finitePos(c.RopeScale) || c.Heads%c.KVHeads != 0 || c.RopeDim > c.HeadDim {
			t.Fatalf("accepted %+v", c)
		}
	})
}
