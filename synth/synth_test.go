package synth

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"shade/gguf"
	"shade/quant"
)

const spmVocab = "../../shared/testdata/tokenizer/ggml-vocab-llama-spm.gguf"

// openVocab opens the Llama 2 SentencePiece vocabulary of the shared test
// data, skipping the test when it is absent.
func openVocab(t testing.TB) *gguf.File {
	t.Helper()
	if _, err := os.Stat(spmVocab); err != nil {
		t.Skipf("shared test vocabulary %s not available: %v", spmVocab, err)
	}
	f, err := gguf.Open(spmVocab)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func tinyShapes() []Shape {
	var out []Shape
	for _, s := range Shapes() {
		if strings.HasPrefix(s.Name, "tiny") {
			out = append(out, s)
		}
	}
	return out
}

// tiny256 is a tiny shape whose rows are whole K-quant blocks.
var tiny256 = Shape{Name: "tiny256", Arch: "llama", Dim: 256, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 64,
	FFN: 512, ContextLen: 1024, RopeBase: 10000, RMSEps: 1e-5, Tied: true,
	Llama3Rope: true, RopeFactor: 8, RopeLowFreq: 1, RopeHighFreq: 4, RopeOrigContext: 8192}

func TestShapes(t *testing.T) {
	ss := Shapes()
	for i, s := range ss {
		if i > 0 && ss[i-1].Name >= s.Name {
			t.Errorf("shapes not sorted: %q before %q", ss[i-1].Name, s.Name)
		}
		if err := s.validate(); err != nil {
			t.Error(err)
		}
		got, err := LookupShape(s.Name)
		if err != nil || got.Name != s.Name {
			t.Errorf("LookupShape(%q) = %q, %v", s.Name, got.Name, err)
		}
	}
	for _, name := range []string{"llama3-1b", "llama3-3b", "llama3-8b", "llama2-7b", "qwen2.5-0.5b", "qwen2.5-7b", "qwen3-0.6b", "tiny", "tiny-qwen2", "tiny-qwen3"} {
		if _, err := LookupShape(name); err != nil {
			t.Error(err)
		}
	}
	_, err := LookupShape("llama9")
	if err == nil || !strings.Contains(err.Error(), "llama3-8b") || !strings.Contains(err.Error(), "tiny-qwen3") {
		t.Errorf("unknown shape error does not list the known ones: %v", err)
	}
	// Parameter counts of the real models (with their own vocabularies).
	for name, want := range map[string]float64{"llama3-1b": 1.236e9, "llama3-3b": 3.213e9, "llama3-8b": 8.03e9, "llama2-7b": 6.74e9, "qwen2.5-0.5b": 0.494e9, "qwen2.5-7b": 7.616e9, "qwen3-0.6b": 0.596e9} {
		s, _ := LookupShape(name)
		if got := float64(s.Params(s.Vocab)); math.Abs(got-want)/want > 0.01 {
			t.Errorf("%s: %.4g parameters, want %.4g", name, got, want)
		}
	}
}

func TestLlama3RopeFactors(t *testing.T) {
	s, _ := LookupShape("llama3-8b")
	f := llama3RopeFactors(s)
	if len(f) != 64 {
		t.Fatalf("%d factors, want 64", len(f))
	}
	// High frequencies are untouched, low ones divided by the factor, and
	// the factors never decrease in between.
	if f[0] != 1 || f[63] != 8 {
		t.Errorf("factors run from %v to %v, want 1 to 8", f[0], f[63])
	}
	for i := 1; i < len(f); i++ {
		if f[i] < f[i-1] {
			t.Errorf("factor %d = %v < factor %d = %v", i, f[i], i-1, f[i-1])
		}
	}
	// Pair 30: wavelen 2π·500000^(60/128) ≈ 2947 lies inside (2048, 8192):
	// smooth = (8192/3830 − 1)/3, factor 1/((1−smooth)/8 + smooth).
	wl := 2 * math.Pi * math.Pow(500000, 60.0/128)
	sm := (8192/wl - 1) / 3
	if wl < 2048 || wl > 8192 {
		t.Fatalf("wavelength %v outside the interpolated band", wl)
	}
	if want := float32(1 / ((1-sm)/8 + sm)); math.Abs(float64(f[30]-want)) > 1e-6 {
		t.Errorf("factor 30 = %v, want %v", f[30], want)
	}
}

// expectTensors lists name → (type, dims) of a shape's file.
func expectTensors(s Shape, typ quant.Type, vocab int) map[string]struct {
	typ  quant.Type
	dims []uint64
} {
	type td = struct {
		typ  quant.Type
		dims []uint64
	}
	d, q, kv, f, hd := uint64(s.Dim), uint64(s.QDim()), uint64(s.KVDim()), uint64(s.FFN), uint64(s.HeadDim)
	m := map[string]td{
		"token_embd.weight":  {typ, []uint64{d, uint64(vocab)}},
		"output_norm.weight": {quant.F32, []uint64{d}},
	}
	if !s.Tied {
		m["output.weight"] = td{typ, []uint64{d, uint64(vocab)}}
	}
	if s.Llama3Rope {
		m["rope_freqs.weight"] = td{quant.F32, []uint64{hd / 2}}
	}
	for l := range s.Layers {
		b := "blk." + string(rune('0'+l)) + "."
		m[b+"attn_norm.weight"] = td{quant.F32, []uint64{d}}
		m[b+"attn_q.weight"] = td{typ, []uint64{d, q}}
		m[b+"attn_k.weight"] = td{typ, []uint64{d, kv}}
		m[b+"attn_v.weight"] = td{typ, []uint64{d, kv}}
		m[b+"attn_output.weight"] = td{typ, []uint64{q, d}}
		m[b+"ffn_norm.weight"] = td{quant.F32, []uint64{d}}
		m[b+"ffn_gate.weight"] = td{typ, []uint64{d, f}}
		m[b+"ffn_up.weight"] = td{typ, []uint64{d, f}}
		m[b+"ffn_down.weight"] = td{typ, []uint64{f, d}}
		if s.QKVBias {
			m[b+"attn_q.bias"] = td{quant.F32, []uint64{q}}
			m[b+"attn_k.bias"] = td{quant.F32, []uint64{kv}}
			m[b+"attn_v.bias"] = td{quant.F32, []uint64{kv}}
		}
		if s.QKNorm {
			m[b+"attn_q_norm.weight"] = td{quant.F32, []uint64{hd}}
			m[b+"attn_k_norm.weight"] = td{quant.F32, []uint64{hd}}
		}
	}
	return m
}

func checkFile(t *testing.T, path string, s Shape, typ quant.Type, vocab *gguf.File) {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	nvocab, _ := vocab.Meta.ArrayLen("tokenizer.ggml.tokens")
	a := s.Arch + "."
	ints := map[string]int64{
		a + "context_length":           int64(s.ContextLen),
		a + "embedding_length":         int64(s.Dim),
		a + "block_count":              int64(s.Layers),
		a + "feed_forward_length":      int64(s.FFN),
		a + "attention.head_count":     int64(s.Heads),
		a + "attention.head_count_kv":  int64(s.KVHeads),
		a + "rope.dimension_count":     int64(s.HeadDim),
		"general.file_type":            int64(fileType(typ)),
		"general.quantization_version": 2,
	}
	if s.HeadDim*s.Heads != s.Dim {
		ints[a+"attention.key_length"] = int64(s.HeadDim)
		ints[a+"attention.value_length"] = int64(s.HeadDim)
	} else if f.Meta.Has(a + "attention.key_length") {
		t.Errorf("key_length written though head dim = dim/heads")
	}
	for k, want := range ints {
		if got, err := f.Meta.Int(k); err != nil || got != want {
			t.Errorf("%s = %d, %v; want %d", k, got, err, want)
		}
	}
	if got, _ := f.Meta.String("general.architecture"); got != s.Arch {
		t.Errorf("architecture %q, want %q", got, s.Arch)
	}
	if got, _ := f.Meta.Float32(a + "rope.freq_base"); got != s.RopeBase {
		t.Errorf("rope base %v, want %v", got, s.RopeBase)
	}
	if got, _ := f.Meta.Float32(a + "attention.layer_norm_rms_epsilon"); got != s.RMSEps {
		t.Errorf("rms eps %v, want %v", got, s.RMSEps)
	}
	// Every tokenizer key, copied with its value.
	for _, kv := range vocab.Meta.KVs {
		if !strings.HasPrefix(kv.Key, "tokenizer.") {
			continue
		}
		got, ok := f.Meta.Lookup(kv.Key)
		if !ok || got.Type != kv.Value.Type || got.ElemType != kv.Value.ElemType {
			t.Errorf("tokenizer key %s missing or retyped", kv.Key)
		}
	}
	toks, _ := f.Meta.Strings("tokenizer.ggml.tokens")
	src, _ := vocab.Meta.Strings("tokenizer.ggml.tokens")
	if len(toks) != len(src) || toks[len(toks)-1] != src[len(src)-1] {
		t.Errorf("tokens differ: %d vs %d", len(toks), len(src))
	}
	want := expectTensors(s, typ, nvocab)
	if len(f.Tensors) != len(want) {
		t.Errorf("%d tensors, want %d", len(f.Tensors), len(want))
	}
	for _, ti := range f.Tensors {
		w, ok := want[ti.Name]
		if !ok {
			t.Errorf("unexpected tensor %q", ti.Name)
			continue
		}
		if ti.Type != w.typ || !equalDims(ti.Dims, w.dims) {
			t.Errorf("tensor %q: %v %v, want %v %v", ti.Name, ti.Type, ti.Dims, w.typ, w.dims)
		}
	}
	// Norm weights near 1, embedding values of the intended scale.
	if ti, ok := f.Tensor("output_norm.weight"); ok {
		for i, v := range f32s(f.TensorData(ti)) {
			if math.Abs(float64(v)-1) > 0.1 {
				t.Errorf("output_norm[%d] = %v", i, v)
				break
			}
		}
	}
}

func equalDims(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func f32s(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(uint32(b[4*i]) | uint32(b[4*i+1])<<8 | uint32(b[4*i+2])<<16 | uint32(b[4*i+3])<<24)
	}
	return out
}

func TestWriteTinyShapes(t *testing.T) {
	vocab := openVocab(t)
	dir := t.TempDir()
	for _, s := range tinyShapes() {
		for _, typ := range []quant.Type{quant.Q8_0, quant.F32, quant.F16, quant.BF16, quant.Q4_0} {
			path := filepath.Join(dir, s.Name+"-"+typ.String()+".gguf")
			var last, total int64
			o := Options{Shape: s, Type: typ, Vocab: vocab, Seed: 7, Progress: func(d, tot int64) {
				if d < last {
					t.Errorf("progress went back from %d to %d", last, d)
				}
				last, total = d, tot
			}}
			if err := WriteFile(path, o); err != nil {
				t.Fatalf("%s %v: %v", s.Name, typ, err)
			}
			if last != total || total == 0 {
				t.Errorf("%s %v: progress ended at %d of %d", s.Name, typ, last, total)
			}
			if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
				t.Errorf("temporary file left behind: %v", err)
			}
			checkFile(t, path, s, typ, vocab)
		}
	}
}

func TestWriteKQuants(t *testing.T) {
	vocab := openVocab(t)
	for _, typ := range []quant.Type{quant.Q4_K, quant.Q6_K} {
		path := filepath.Join(t.TempDir(), "m.gguf")
		if err := WriteFile(path, Options{Shape: tiny256, Type: typ, Vocab: vocab, Seed: 1}); err != nil {
			t.Fatal(err)
		}
		checkFile(t, path, tiny256, typ, vocab)
		f, _ := gguf.Open(path)
		ti, _ := f.Tensor("rope_freqs.weight")
		got, want := f32s(f.TensorData(ti)), llama3RopeFactors(tiny256)
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("rope_freqs[%d] = %v, want %v", i, got[i], want[i])
			}
		}
		f.Close()
	}
	// Rows that are not whole blocks are refused, naming tensor and type.
	s, _ := LookupShape("tiny")
	err := Write(&bytes.Buffer{}, Options{Shape: s, Type: quant.Q4_K, Vocab: vocab})
	if err == nil || !strings.Contains(err.Error(), "token_embd.weight") || !strings.Contains(err.Error(), "Q4_K") {
		t.Errorf("tiny as Q4_K: %v", err)
	}
}

func writeBytes(t *testing.T, o Options) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, o); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestDeterministic(t *testing.T) {
	vocab := openVocab(t)
	s, _ := LookupShape("tiny-qwen3")
	o := Options{Shape: s, Type: quant.Q4_0, Vocab: vocab, Seed: 42}
	a := writeBytes(t, o)
	// The same on one thread: rows are seeded, not the order of work.
	prev := runtime.GOMAXPROCS(1)
	b := writeBytes(t, o)
	runtime.GOMAXPROCS(prev)
	if !bytes.Equal(a, b) {
		t.Error("same seed, different bytes (1 thread vs many)")
	}
	o.Seed = 43
	c := writeBytes(t, o)
	if len(c) != len(a) {
		t.Fatalf("seed changed the size: %d vs %d", len(c), len(a))
	}
	if bytes.Equal(a, c) {
		t.Error("different seeds, same bytes")
	}
}

// failWriter fails after n bytes.
type failWriter struct{ n int }

var errDiskFull = errors.New("disk full")

func (w *failWriter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		k := w.n
		w.n = 0
		return k, errDiskFull
	}
	w.n -= len(p)
	return len(p), nil
}

func TestErrors(t *testing.T) {
	vocab := openVocab(t)
	s, _ := LookupShape("tiny")
	dir := t.TempDir()
	path := filepath.Join(dir, "m.gguf")

	err := WriteFile(path, Options{Shape: s, Type: quant.IQ1_S, Vocab: vocab})
	if err == nil || !strings.Contains(err.Error(), "IQ1_S") {
		t.Errorf("IQ1_S: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("files left after an error: %v", ents)
	}
	if err := WriteFile(path, Options{Shape: s, Type: quant.Q8_0}); err == nil {
		t.Error("no vocabulary: no error")
	}
	bad := s
	bad.KVHeads = 3
	if err := WriteFile(path, Options{Shape: bad, Type: quant.Q8_0, Vocab: vocab}); err == nil || !strings.Contains(err.Error(), "kv heads") {
		t.Errorf("4 heads over 3 kv heads: %v", err)
	}
	bad = s
	bad.Arch = "gpt2"
	if err := WriteFile(path, Options{Shape: bad, Type: quant.Q8_0, Vocab: vocab}); err == nil || !strings.Contains(err.Error(), "gpt2") {
		t.Errorf("gpt2: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("files left after an error: %v", ents)
	}
	// A writer failing mid-stream: the error comes back, nothing hangs.
	for _, n := range []int{10, 1 << 20, 3 << 20} {
		err := Write(&failWriter{n: n}, Options{Shape: s, Type: quant.F32, Vocab: vocab})
		if !errors.Is(err, errDiskFull) {
			t.Errorf("failing after %d bytes: %v", n, err)
		}
	}
	// A directory that does not exist: nothing is created.
	if err := WriteFile(filepath.Join(dir, "no", "m.gguf"), Options{Shape: s, Type: quant.Q8_0, Vocab: vocab}); err == nil {
		t.Error("missing directory: no error")
	}
}

func TestDemo(t *testing.T) {
	v, err := DemoVocab()
	if err != nil {
		t.Fatal(err)
	}
	if n, err := v.Meta.ArrayLen("tokenizer.ggml.tokens"); err != nil || n != 512 {
		t.Fatalf("demo vocabulary: %d tokens, %v", n, err)
	}
	if m, _ := v.Meta.String("tokenizer.ggml.model"); m != "llama" {
		t.Errorf("tokenizer model %q, want llama (SentencePiece)", m)
	}
	path := filepath.Join(t.TempDir(), "demo.gguf")
	if err := WriteDemo(path); err != nil {
		t.Fatal(err)
	}
	s, _ := LookupShape("tiny")
	checkFile(t, path, s, quant.Q8_0, v)
	// Seed 1 every time: the demo file is always the same.
	o, _ := Demo()
	want, _ := os.ReadFile(path)
	if !bytes.Equal(writeBytes(t, o), want) {
		t.Error("WriteDemo is not deterministic")
	}
}

// TestNormalRow checks the generator's moments and that rows differ.
func TestNormalRow(t *testing.T) {
	const n = 1 << 16
	a, b := make([]float32, n), make([]float32, n)
	normalRow(a, 99, 0, 0, 2)
	normalRow(b, 99, 1, 0, 2)
	var sum, sq, cross float64
	for i := range a {
		sum += float64(a[i])
		sq += float64(a[i]) * float64(a[i])
		cross += float64(a[i]) * float64(b[i])
	}
	mean, std := sum/n, math.Sqrt(sq/n)
	if math.Abs(mean) > 0.05 || math.Abs(std-2) > 0.05 {
		t.Errorf("mean %.3f std %.3f, want 0 and 2", mean, std)
	}
	if c := cross / n / 4; math.Abs(c) > 0.02 {
		t.Errorf("rows 0 and 1 correlate: %.3f", c)
	}
}
