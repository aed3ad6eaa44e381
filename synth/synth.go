// Package synth owns synthetic model files: GGUF files with the tensor names,
// shapes and metadata of real models (Llama 2/3, Qwen2.5, Qwen3, and tiny
// ones for tests), random weights, and a real tokenizer copied from another
// GGUF file. They exist so that benchmarks can run models of real size that
// are made on the machine rather than downloaded; their text is gibberish.
//
// The vocabulary size of a written file is always the token count of the
// tokenizer it copies (Options.Vocab); a Shape's Vocab field records the real
// model's and is used for documentation and sizing only.
//
// Weights are drawn from a seeded generator, row by row, so a file is a
// deterministic function of (Shape, Type, vocabulary, Seed), independent of
// the number of threads. Their scales are chosen so that a forward pass stays
// numerically sane: logits spread by a few units and greedy decoding does not
// lock onto one token. Writing streams: memory stays at a few megabytes
// whatever the model size.
//
// Self-speculative drafts: DraftOf writes a model's first K blocks with its
// embedding, final norm, LM head and tokenizer, a draft whose vocabulary is
// the target's by construction. On random weights such a draft agrees with
// its target little (every block matters as much as any other), so Options
// can scale down the blocks from TailFrom = K on (TailScale), which sets how
// often the K-layer draft agrees. Measured greedy agreement (Agreement,
// teacher-forced over 256–384 random tokens; the tiny shape Q8_0, the
// others Q4_0; logit std stays ≈ 3.0 whatever the scale):
//
//	TailScale                       1     0.5   0.3   0.2   0.15  0.1   0.05  0
//	8 × 64 tiny, 512 tokens, K=2    0.29  –     0.72  –     –     –     0.95  1
//	llama3-1b, 128256 tokens, K=4   0.16  0.38  0.57  0.70  –     0.87  0.93  1
//	llama3-8b, 128256 tokens, K=4   –     –     –     –     0.72  0.81  –     1
//
// (The 1b and 8b rows are single runs of 256 tokens: ±0.03.) Agreement falls
// with the vocabulary size
// and with the tail's share of the residual stream, (L−K)·S² against
// L−1+K−1 for a model of L layers; a rough model (the logits of target and
// draft as Gaussian vectors correlated by the ratio of those variances)
// predicts the trend but underestimates agreement by 0.02–0.1.
//
// synth is not a quantizer of real weights and not a model loader.
package synth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"sync"

	"shade/gguf"
	"shade/quant"
)

// Options say what to write.
type Options struct {
	Shape Shape
	Type  quant.Type // type of every 2-D matrix; norms, biases and rope_freqs are F32
	Vocab *gguf.File // source of every tokenizer.* key; its token count is the vocabulary size
	Seed  uint64
	// TailFrom and TailScale make a target whose first TailFrom layers
	// dominate its output, so that its self-speculative draft of TailFrom
	// layers (DraftOf) agrees with it at a chosen rate: every block from
	// TailFrom on has its output projections (attn_output and ffn_down)
	// scaled by TailScale, so that it adds TailScale times what it would
	// to the residual stream. TailScale 1 changes nothing; 0 makes those
	// blocks add nothing, and the draft agrees always. TailFrom 0 (the
	// default) scales no layer and requires TailScale to be 0 or 1. See
	// the package documentation for measured agreement.
	TailFrom  int
	TailScale float32
	// Progress, if set, is called from the writing goroutine after each
	// chunk with the bytes of tensor data written so far and in all.
	Progress func(done, total int64)
}

// types are the matrix types Write can produce, largest first.
var types = []quant.Type{quant.F32, quant.F16, quant.BF16, quant.Q8_0, quant.Q6_K, quant.Q5_1, quant.Q5_0, quant.Q5_K, quant.Q4_1, quant.Q4_0, quant.IQ4_NL, quant.Q4_K, quant.IQ4_XS, quant.Q3_K, quant.Q2_K}

// Types returns the matrix types Write can produce, largest first.
func Types() []quant.Type { return append([]quant.Type(nil), types...) }

// fileType is general.file_type for a file whose matrices are all of type
// t (every type synth writes has one).
func fileType(t quant.Type) uint32 {
	ft, _ := gguf.FileTypeFor(t)
	return ft
}

func supportedType(t quant.Type) bool {
	for _, u := range types {
		if t == u {
			return true
		}
	}
	return false
}

// Write writes the model described by o to w as GGUF, tensor by tensor.
// Generation and quantization run on every CPU (GOMAXPROCS); writing stays in
// the calling goroutine and in declaration order.
func Write(w io.Writer, o Options) error {
	p, err := newPlan(o)
	if err != nil {
		return err
	}
	gw := gguf.NewWriter(w)
	if err := p.declare(gw, o); err != nil {
		return err
	}
	if err := gw.WriteHeader(); err != nil {
		return err
	}
	if err := p.stream(gw, o.Progress); err != nil {
		return err
	}
	return gw.Close()
}

// WriteFile writes the model to path by way of a temporary file beside it,
// renamed into place once complete; on error the temporary file is removed
// and path is left as it was. The file is not fsynced. path must not exist
// or be a regular file: a symbolic link, device, FIFO or directory there
// is an error wrapping ErrNotRegular (replacing it would be a surprise).
func WriteFile(path string, o Options) error {
	return WriteFileContext(context.Background(), path, o)
}

// WriteFileContext is WriteFile, stopped (the temporary file removed) when
// ctx is done.
func WriteFileContext(ctx context.Context, path string, o Options) error {
	if _, err := newPlan(o); err != nil {
		return err // before creating anything
	}
	return writeAtomic(ctx, path, func(w io.Writer) error { return Write(w, o) })
}

// fill says how a tensor's values are made.
type fill uint8

const (
	fillNormal  fill = iota // N(0, std²) per value
	fillNorm                // 1 + N(0, std²): RMSNorm weights
	fillUnitRow             // N(0, 1) per value, each row then scaled to RMS std exactly
	fillFixed               // the values in tensor.fixed
)

// tensor is one tensor of the plan. Its data is rows × rowLen values.
type tensor struct {
	name     string
	typ      quant.Type
	rowLen   int // dims[0]
	rows     int // dims[1], or 1 for a vector
	matrix   bool
	fill     fill
	std      float32
	fixed    []float32
	seed     uint64 // per-tensor generator seed (Seed and name mixed)
	rowBytes int
}

func (t *tensor) dims() []uint64 {
	if !t.matrix {
		return []uint64{uint64(t.rowLen)}
	}
	return []uint64{uint64(t.rowLen), uint64(t.rows)}
}

func (t *tensor) size() int64 { return int64(t.rowBytes) * int64(t.rows) }

// plan is the ordered list of tensors of a file.
type plan struct {
	shape   Shape
	vocab   int
	tensors []*tensor
}

// Weight scales. Every projection reads an RMS-normed input (RMS 1), so a
// matrix whose entries have std 1/√n (n its row length) produces outputs of
// std ≈ 1: Q, K, V, gate and up are scaled so. The other scales:
//
//   - The LM head (output.weight, or token_embd.weight when tied) has rows
//     of RMS exactly logitStd/√dim, so logits have std ≈ logitStd. The
//     embedding has the same RMS: small next to what the blocks add.
//   - Layer 0's attention output adds only attn0Share times the embedding's
//     RMS, so that layer 0's FFN still sees mostly the current token and
//     turns it into a large token-specific vector, of RMS residualRMS/√2.
//     Every later sublayer adds an independent vector of RMS
//     residualRMS/√(4·(Layers−1)), together as much again, so the residual
//     stream ends at RMS ≈ residualRMS whatever the depth.
//
// Why: with a tied embedding, the input token's own logit gets a bonus of
// about (its share of the final hidden state)·√dim·logitStd =
// logitStd²/residualRMS ≈ 0.3 units, a tenth of a standard deviation, too
// little to make greedy decoding repeat the input. And if context-averaged
// attention outputs swamped the token before the first FFN, consecutive
// hidden states would be nearly equal and greedy decoding would stick to one
// token; with the token carried by layer 0's FFN, consecutive hidden states
// are nearly uncorrelated.
const (
	logitStd    = 3.0
	residualRMS = 30.0
	attn0Share  = 0.5
	normNoise   = 0.02 // std of RMSNorm weights around 1
	biasStd     = 0.02 // qwen2 QKV biases, against projections of std 1
	// swigluRMS is the RMS of silu(g)·u for g, u ~ N(0, 1): √0.3558.
	swigluRMS = 0.5965
)

func newPlan(o Options) (*plan, error) {
	s := o.Shape
	if err := s.validate(); err != nil {
		return nil, err
	}
	if !supportedType(o.Type) {
		return nil, fmt.Errorf("synth: type %v is not supported (synth writes %v)", o.Type, types)
	}
	if o.Vocab == nil {
		return nil, errors.New("synth: no vocabulary file (Options.Vocab)")
	}
	vocab, err := o.Vocab.Meta.ArrayLen("tokenizer.ggml.tokens")
	if err != nil {
		return nil, fmt.Errorf("synth: vocabulary file: %w", err)
	}
	if vocab <= 0 {
		return nil, errors.New("synth: vocabulary file has no tokens")
	}
	switch {
	case o.TailFrom < 0 || o.TailFrom > 0 && o.TailFrom >= s.Layers:
		return nil, fmt.Errorf("synth: tail from layer %d: shape %q has layers 0 to %d, and layer 0 cannot be tail", o.TailFrom, s.Name, s.Layers-1)
	case !(o.TailScale >= 0) || math.IsInf(float64(o.TailScale), 0):
		return nil, fmt.Errorf("synth: tail scale %v must be finite and ≥ 0", o.TailScale)
	case o.TailFrom == 0 && o.TailScale != 0 && o.TailScale != 1:
		return nil, fmt.Errorf("synth: tail scale %v without a tail (TailFrom)", o.TailScale)
	}
	p := &plan{shape: s, vocab: vocab}
	dim, q, kv, ffn := s.Dim, s.QDim(), s.KVDim(), s.FFN
	isqrt := func(n int) float32 { return float32(1 / math.Sqrt(float64(n))) }
	// Layer 0's attention adds little to the embedding, so that its FFN sees
	// the token and turns it into a large token-specific vector (RMS r0);
	// every later sublayer adds an independent vector of RMS r, together as
	// much again.
	embStd := logitStd * isqrt(dim)
	r0 := residualRMS / float32(math.Sqrt2)
	r := r0
	if s.Layers > 1 {
		r = r0 / float32(math.Sqrt(float64(2*(s.Layers-1))))
	}

	var errs []error
	matrixFill := func(name string, rowLen, rows int, f fill, std float32) {
		if rowLen%o.Type.BlockSize() != 0 {
			errs = append(errs, fmt.Errorf("synth: shape %q: tensor %q has rows of %d, not a whole number of %v blocks of %d",
				s.Name, name, rowLen, o.Type, o.Type.BlockSize()))
		}
		p.add(o.Seed, &tensor{name: name, typ: o.Type, rowLen: rowLen, rows: rows, matrix: true, fill: f, std: std})
	}
	matrix := func(name string, rowLen, rows int, std float32) {
		matrixFill(name, rowLen, rows, fillNormal, std)
	}
	vector := func(name string, n int, f fill, std float32) {
		p.add(o.Seed, &tensor{name: name, typ: quant.F32, rowLen: n, rows: 1, fill: f, std: std})
	}

	matrixFill("token_embd.weight", dim, vocab, fillUnitRow, embStd)
	vector("output_norm.weight", dim, fillNorm, normNoise)
	if !s.Tied {
		matrixFill("output.weight", dim, vocab, fillUnitRow, logitStd*isqrt(dim))
	}
	if s.Llama3Rope {
		p.add(o.Seed, &tensor{name: "rope_freqs.weight", typ: quant.F32, rowLen: s.HeadDim / 2, rows: 1,
			fill: fillFixed, fixed: llama3RopeFactors(s)})
	}
	for l := range s.Layers {
		b := fmt.Sprintf("blk.%d.", l)
		vector(b+"attn_norm.weight", dim, fillNorm, normNoise)
		matrix(b+"attn_q.weight", dim, q, isqrt(dim))
		matrix(b+"attn_k.weight", dim, kv, isqrt(dim))
		matrix(b+"attn_v.weight", dim, kv, isqrt(dim))
		if s.QKVBias {
			vector(b+"attn_q.bias", q, fillNormal, biasStd)
			vector(b+"attn_k.bias", kv, fillNormal, biasStd)
			vector(b+"attn_v.bias", kv, fillNormal, biasStd)
		}
		if s.QKNorm {
			vector(b+"attn_q_norm.weight", s.HeadDim, fillNorm, normNoise)
			vector(b+"attn_k_norm.weight", s.HeadDim, fillNorm, normNoise)
		}
		// The attention output is a weighted mean of V rows of RMS ≈ 1.
		ra, rf := r, r
		if l == 0 {
			ra, rf = attn0Share*embStd, r0
		}
		if o.TailFrom > 0 && l >= o.TailFrom {
			ra, rf = ra*o.TailScale, rf*o.TailScale
		}
		matrix(b+"attn_output.weight", q, dim, ra*isqrt(q))
		vector(b+"ffn_norm.weight", dim, fillNorm, normNoise)
		matrix(b+"ffn_gate.weight", dim, ffn, isqrt(dim))
		matrix(b+"ffn_up.weight", dim, ffn, isqrt(dim))
		matrix(b+"ffn_down.weight", ffn, dim, rf/swigluRMS*isqrt(ffn))
	}
	if len(errs) > 0 {
		// Later layers repeat the first one's problem.
		return nil, errs[0]
	}
	return p, nil
}

func (p *plan) add(seed uint64, t *tensor) {
	t.rowBytes, _ = t.typ.RowBytes(t.rowLen) // checked by the caller (or F32)
	t.seed = tensorSeed(seed, t.name)
	p.tensors = append(p.tensors, t)
}

// llama3RopeFactors computes rope_freqs.weight as convert_hf_to_gguf.py does
// for rope_type "llama3": per rotated pair, 1 for high frequencies, factor
// for low ones, and a smooth interpolation in between. It computes in
// float64 where the converter uses float32 tensors, so a value may differ
// from the converter's in the last bit.
func llama3RopeFactors(s Shape) []float32 {
	n := s.HeadDim / 2
	out := make([]float32, n)
	orig := float64(s.RopeOrigContext)
	lowWavelen := orig / float64(s.RopeLowFreq)
	highWavelen := orig / float64(s.RopeHighFreq)
	for i := range n {
		freq := 1 / math.Pow(float64(s.RopeBase), float64(2*i)/float64(s.HeadDim))
		wavelen := 2 * math.Pi / freq
		switch {
		case wavelen < highWavelen:
			out[i] = 1
		case wavelen > lowWavelen:
			out[i] = s.RopeFactor
		default:
			smooth := (orig/wavelen - float64(s.RopeLowFreq)) / float64(s.RopeHighFreq-s.RopeLowFreq)
			out[i] = float32(1 / ((1-smooth)/float64(s.RopeFactor) + smooth))
		}
	}
	return out
}

// declare sets the metadata and declares the tensors, keys named as
// llama.cpp's convert_hf_to_gguf.py names them.
func (p *plan) declare(gw *gguf.Writer, o Options) error {
	s := p.shape
	a := s.Arch + "."
	type kv struct {
		key string
		v   any
	}
	name := s.Name + " (synthetic, random weights)"
	if o.TailFrom > 0 && o.TailScale != 1 {
		name = fmt.Sprintf("%s (synthetic, random weights; layers %d+ scaled by %g)", s.Name, o.TailFrom, o.TailScale)
	}
	kvs := []kv{
		{"general.architecture", s.Arch},
		{"general.name", name},
		{a + "context_length", uint32(s.ContextLen)},
		{a + "embedding_length", uint32(s.Dim)},
		{a + "block_count", uint32(s.Layers)},
		{a + "feed_forward_length", uint32(s.FFN)},
		{a + "attention.head_count", uint32(s.Heads)},
		{a + "attention.head_count_kv", uint32(s.KVHeads)},
		{a + "rope.freq_base", s.RopeBase},
		{a + "rope.dimension_count", uint32(s.HeadDim)},
		{a + "attention.layer_norm_rms_epsilon", s.RMSEps},
	}
	if s.HeadDim*s.Heads != s.Dim {
		kvs = append(kvs, kv{a + "attention.key_length", uint32(s.HeadDim)},
			kv{a + "attention.value_length", uint32(s.HeadDim)})
	}
	if s.Arch == "llama" {
		kvs = append(kvs, kv{a + "vocab_size", uint32(p.vocab)})
	}
	kvs = append(kvs, kv{"general.file_type", fileType(o.Type)})
	for _, kv := range kvs {
		if err := gw.Set(kv.key, kv.v); err != nil {
			return err
		}
	}
	if err := gw.CopyMeta(&o.Vocab.Meta, "tokenizer."); err != nil {
		return err
	}
	if err := gw.Set("general.quantization_version", uint32(2)); err != nil {
		return err
	}
	for _, t := range p.tensors {
		if err := gw.AddTensor(t.name, t.typ, t.dims()...); err != nil {
			return err
		}
	}
	return nil
}

// chunkValues is the number of values generated per unit of work (whole
// rows, at least one): 1 MB of float32 scratch.
const chunkValues = 1 << 18

// chunk is a unit of work: rows [r0, r1) of one tensor, encoded into out.
type chunk struct {
	t      *tensor
	r0, r1 int
	out    []byte
	err    error
	done   chan struct{}
}

// stream generates, encodes and writes every tensor's data in order. Chunks
// are made by GOMAXPROCS workers and written in order by the caller; at most
// a few chunks per worker are in flight, so memory is bounded by the chunk
// size, not the tensor size.
func (p *plan) stream(w io.Writer, progress func(done, total int64)) error {
	var total, done int64
	maxOut, maxVals := 0, 0
	for _, t := range p.tensors {
		total += t.size()
		rows := max(1, min(t.rows, chunkValues/t.rowLen))
		maxOut = max(maxOut, rows*t.rowBytes)
		maxVals = max(maxVals, rows*t.rowLen)
	}
	workers := runtime.GOMAXPROCS(0)
	inFlight := 2 * workers
	order := make(chan *chunk, inFlight) // to the writer, in file order
	work := make(chan *chunk)            // to the workers
	free := make(chan []byte, inFlight+workers+2)
	quit := make(chan struct{})
	var wg sync.WaitGroup

	wg.Add(1)
	go func() { // producer
		defer wg.Done()
		defer close(work)
		defer close(order)
		for _, t := range p.tensors {
			rows := max(1, min(t.rows, chunkValues/t.rowLen))
			for r0 := 0; r0 < t.rows; r0 += rows {
				c := &chunk{t: t, r0: r0, r1: min(t.rows, r0+rows), done: make(chan struct{})}
				select {
				case order <- c:
				case <-quit:
					return
				}
				select {
				case work <- c:
				case <-quit:
					return
				}
			}
		}
	}()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			vals := make([]float32, maxVals)
			for c := range work {
				select {
				case <-quit:
				default:
					var buf []byte
					select {
					case buf = <-free:
					default:
						buf = make([]byte, maxOut)
					}
					c.out, c.err = c.t.encode(c.r0, c.r1, vals, buf)
				}
				close(c.done)
			}
		}()
	}

	var err error
	for c := range order {
		<-c.done
		if err = c.err; err != nil {
			break
		}
		if _, err = w.Write(c.out); err != nil {
			break
		}
		done += int64(len(c.out))
		select {
		case free <- c.out[:cap(c.out)]:
		default:
		}
		if progress != nil {
			progress(done, total)
		}
	}
	close(quit)
	wg.Wait()
	return err
}

// encode generates rows [r0, r1) of t into vals and encodes them into buf.
func (t *tensor) encode(r0, r1 int, vals []float32, buf []byte) ([]byte, error) {
	n := t.rowLen
	vals = vals[:(r1-r0)*n]
	for r := r0; r < r1; r++ {
		row := vals[(r-r0)*n : (r-r0+1)*n]
		switch t.fill {
		case fillFixed:
			copy(row, t.fixed[r*n:])
		case fillNormal:
			normalRow(row, t.seed, r, 0, t.std)
		case fillNorm:
			normalRow(row, t.seed, r, 1, t.std)
		case fillUnitRow:
			normalRow(row, t.seed, r, 0, 1)
			scaleRMS(row, t.std)
		}
	}
	out := buf[:(r1-r0)*t.rowBytes]
	if err := quant.Quantize(t.typ, vals, out); err != nil {
		return nil, fmt.Errorf("synth: tensor %q: %w", t.name, err)
	}
	return out, nil
}
