package model

import (
	"fmt"
	"strings"

	"shade/gguf"
	"shade/quant"
)

// Layer holds the tensors of one transformer block. Matrices are views of
// their storage (the mapped file, or a buffer a streamer filled), those of
// a mapped file repacked on first use where that is faster (see
// quant.Repackable); vectors are small and decoded to float32.
type Layer struct {
	AttnNorm   []float32    // (dim)
	Wq         quant.Matrix // (heads·headDim, dim)
	Wk, Wv     quant.Matrix // (kvHeads·headDim, dim)
	Bq         []float32    // (heads·headDim) qwen2 only
	Bk, Bv     []float32    // (kvHeads·headDim) qwen2 only
	QNorm      []float32    // (headDim) qwen3 only
	KNorm      []float32    // (headDim) qwen3 only
	Wo         quant.Matrix // (dim, heads·headDim)
	FFNNorm    []float32    // (dim)
	Gate, Up   quant.Matrix // (ffn, dim)
	Down       quant.Matrix // (dim, ffn)
	WeightSize int64        // bytes of the matrices
}

// LayerSource yields the weights of each layer. The forward pass asks for
// layer i just before running it, so an implementation may keep some layers
// on storage and stream them in; a resident one just returns them.
type LayerSource interface {
	Layer(i int) (*Layer, error)
}

// LayerReleaser is a LayerSource that wants to know when the forward pass
// is done with a layer it handed out: a streamer can then reuse that
// layer's buffer at once (say, to read the next pass's first layers while
// the caller drafts) instead of at the next Layer call.
type LayerReleaser interface {
	LayerSource
	// ReleaseLayer says layer i's weights are no longer used by the pass.
	ReleaseLayer(i int)
}

// ResidentLayers is a LayerSource that can say which layers stay in memory
// (as opposed to being read for every pass), without reading any.
type ResidentLayers interface {
	LayerSource
	// ResidentLayer returns layer i if it is resident.
	ResidentLayer(i int) (*Layer, bool)
}

// Weights are the tensors outside the layers, plus where the layers come from.
type Weights struct {
	Embed       quant.Matrix // (vocab, dim)
	OutNorm     []float32    // (dim)
	Output      quant.Matrix // (vocab, dim); Embed when tied
	RopeFreqs   []float32    // (ropeDim/2) per-pair frequency divisors (Llama 3.1 scaling), or nil
	Layers      LayerSource
	LayerBytes  []int64 // bytes of each layer's matrices
	GlobalBytes int64   // bytes of embed, output and norms
}

// TensorError reports a problem with one named tensor.
type TensorError struct {
	Name string
	Err  error
}

func (e *TensorError) Error() string { return fmt.Sprintf("model: tensor %q: %v", e.Name, e.Err) }
func (e *TensorError) Unwrap() error { return e.Err }

// loader pulls tensors by name out of a file, checking type and shape.
type loader struct {
	f *gguf.File
}

func (ld loader) info(name string, dims ...int) (*gguf.TensorInfo, error) {
	ti, ok := ld.f.Tensor(name)
	if !ok {
		return nil, &TensorError{name, fmt.Errorf("missing from the file")}
	}
	if !ti.Type.Supported() {
		return nil, &TensorError{name, fmt.Errorf("type %v: %w (shade computes with %s)", ti.Type, ErrUnsupported, computedTypes())}
	}
	ok = len(ti.Dims) == len(dims)
	for i := 0; ok && i < len(dims); i++ {
		ok = ti.Dims[i] == uint64(dims[i])
	}
	if !ok {
		return nil, &TensorError{name, fmt.Errorf("shape %v, want %v", ti.Dims, dims)}
	}
	return ti, nil
}

// matrix loads a (rows, cols) matrix; GGUF lists dims as [cols, rows].
func (ld loader) matrix(name string, rows, cols int) (quant.Matrix, error) {
	ti, err := ld.info(name, cols, rows)
	if err != nil {
		return quant.Matrix{}, err
	}
	m, err := quant.NewMatrix(ti.Type, rows, cols, ld.f.TensorData(ti))
	if err != nil {
		return quant.Matrix{}, &TensorError{name, err}
	}
	// Q4_0, Q8_0 and Q4_K weights compute fastest repacked into row panels
	// (quant/panel.go, quant/panelk.go), which happens later (Model.Repack, or first use),
	// so that layers a streamer takes over are never copied; the mapped
	// pages are then dropped, keeping the resident set at one copy of the
	// weights.
	return quant.Repackable(m, ld.f.ReleasePages), nil
}

func (ld loader) vector(name string, n int) ([]float32, error) {
	ti, err := ld.info(name, n)
	if err != nil {
		return nil, err
	}
	out := make([]float32, n)
	if err := quant.Dequantize(ti.Type, ld.f.TensorData(ti), out); err != nil {
		return nil, &TensorError{name, err}
	}
	return out, nil
}

func (ld loader) has(name string) bool { _, ok := ld.f.Tensor(name); return ok }

// LoadLayer reads block i of a file. It is how resident layers load and how
// a streamer interprets a layer it has read into a buffer laid out like the
// file (see model/stream in the weights package).
func LoadLayer(f *gguf.File, c *Config, i int) (*Layer, error) {
	ld := loader{f}
	p := fmt.Sprintf("blk.%d.", i)
	l := &Layer{}
	var err error
	set := func(dst *quant.Matrix, name string, rows, cols int) {
		if err == nil {
			*dst, err = ld.matrix(p+name, rows, cols)
			l.WeightSize += int64(len(dst.Data))
		}
	}
	vec := func(dst *[]float32, name string, n int) {
		if err == nil {
			*dst, err = ld.vector(p+name, n)
		}
	}
	vec(&l.AttnNorm, "attn_norm.weight", c.Dim)
	set(&l.Wq, "attn_q.weight", c.QDim(), c.Dim)
	set(&l.Wk, "attn_k.weight", c.KVDim(), c.Dim)
	set(&l.Wv, "attn_v.weight", c.KVDim(), c.Dim)
	set(&l.Wo, "attn_output.weight", c.Dim, c.QDim())
	vec(&l.FFNNorm, "ffn_norm.weight", c.Dim)
	set(&l.Gate, "ffn_gate.weight", c.FFN, c.Dim)
	set(&l.Up, "ffn_up.weight", c.FFN, c.Dim)
	set(&l.Down, "ffn_down.weight", c.Dim, c.FFN)
	if c.QKVBias {
		vec(&l.Bq, "attn_q.bias", c.QDim())
		vec(&l.Bk, "attn_k.bias", c.KVDim())
		vec(&l.Bv, "attn_v.bias", c.KVDim())
	}
	if c.QKNorm {
		vec(&l.QNorm, "attn_q_norm.weight", c.HeadDim)
		vec(&l.KNorm, "attn_k_norm.weight", c.HeadDim)
	}
	if err != nil {
		return nil, err
	}
	return l, nil
}

// residentLayers serves layers loaded once from the mapped file.
type residentLayers []*Layer

func (r residentLayers) Layer(i int) (*Layer, error) { return r[i], nil }

func (r residentLayers) ResidentLayer(i int) (*Layer, bool) { return r[i], true }

// LoadWeights reads every tensor the architecture needs from f, in place.
func LoadWeights(f *gguf.File, c *Config) (*Weights, error) {
	ld := loader{f}
	w := &Weights{}
	ti, ok := f.Tensor("token_embd.weight")
	if !ok {
		return nil, &TensorError{"token_embd.weight", fmt.Errorf("missing from the file")}
	}
	if len(ti.Dims) != 2 || ti.Dims[1] == 0 || ti.Dims[1] > 1<<24 {
		return nil, &TensorError{"token_embd.weight", fmt.Errorf("shape %v, want [%d, vocab]", ti.Dims, c.Dim)}
	}
	c.Vocab = int(ti.Dims[1])
	var err error
	if w.Embed, err = ld.matrix("token_embd.weight", c.Vocab, c.Dim); err != nil {
		return nil, err
	}
	if w.OutNorm, err = ld.vector("output_norm.weight", c.Dim); err != nil {
		return nil, err
	}
	if ld.has("output.weight") {
		if w.Output, err = ld.matrix("output.weight", c.Vocab, c.Dim); err != nil {
			return nil, err
		}
		w.GlobalBytes += int64(len(w.Output.Data))
	} else {
		c.TiedOutput = true
		w.Output = w.Embed
	}
	w.GlobalBytes += int64(len(w.Embed.Data))
	if ld.has("rope_freqs.weight") {
		if w.RopeFreqs, err = ld.vector("rope_freqs.weight", c.RopeDim/2); err != nil {
			return nil, err
		}
	}
	layers := make(residentLayers, c.Layers)
	w.LayerBytes = make([]int64, c.Layers)
	for i := range layers {
		if layers[i], err = LoadLayer(f, c, i); err != nil {
			return nil, err
		}
		w.LayerBytes[i] = layers[i].WeightSize
	}
	w.Layers = layers
	return w, nil
}

// computedTypes lists the tensor types shade computes with, for errors.
func computedTypes() string {
	var names []string
	for t := quant.Type(0); t < 64; t++ {
		if t.Supported() {
			names = append(names, t.String())
		}
	}
	return strings.Join(names, ", ")
}
