package synth

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"shade/gguf"
	"shade/internal/testutil"
	"shade/model"
	"shade/quant"
)

const storiesPath = "../../shared/testdata/conformance/stories260K.gguf"

// deep is a tiny shape with enough layers for drafts of several sizes.
var deep = Shape{Name: "tiny-deep", Arch: "llama", Dim: 64, Layers: 8, Heads: 4, KVHeads: 2, HeadDim: 16,
	FFN: 192, ContextLen: 2048, RopeBase: 10000, RMSEps: 1e-5}

// deepOf returns a shape like s with n layers.
func deepOf(s Shape, n int) Shape {
	s.Name += fmt.Sprintf("-%dl", n)
	s.Layers = n
	return s
}

func writeTarget(t testing.TB, o Options) string {
	t.Helper()
	if o.Vocab == nil {
		v, err := DemoVocab()
		if err != nil {
			t.Fatal(err)
		}
		o.Vocab = v
	}
	path := filepath.Join(t.TempDir(), o.Shape.Name+".gguf")
	if err := WriteFile(path, o); err != nil {
		t.Fatal(err)
	}
	return path
}

func randomTokens(n, vocab int, seed uint64) []int32 {
	r := rand.New(rand.NewPCG(seed, 0))
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(r.IntN(vocab))
	}
	return out
}

// checkDraft writes the K-layer draft of the target at path and checks it:
// it loads with K layers, has the target's metadata (tokenizer included)
// but for block_count and general.name, the target's tensors byte for byte
// but for the blocks ≥ K, and its residual stream after its K layers is
// bit-identical to the target's after the target's first K layers.
func checkDraft(t *testing.T, path string, k int) {
	t.Helper()
	tf, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer tf.Close()
	out := filepath.Join(t.TempDir(), fmt.Sprintf("draft-%d.gguf", k))
	if err := WriteDraft(out, tf, k); err != nil {
		t.Fatal(err)
	}
	df, err := gguf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer df.Close()
	arch, _ := tf.Meta.String("general.architecture")
	n, _ := tf.Meta.Int(arch + ".block_count")
	if got, _ := df.Meta.Int(arch + ".block_count"); got != int64(k) {
		t.Errorf("draft block_count %d, want %d", got, k)
	}
	if name, _ := df.Meta.String("general.name"); !strings.Contains(name, "draft") || !strings.Contains(name, fmt.Sprintf("first %d of %d", k, n)) {
		t.Errorf("draft name %q", name)
	}
	if len(df.Meta.KVs) != len(tf.Meta.KVs) {
		t.Errorf("draft has %d metadata keys, target %d", len(df.Meta.KVs), len(tf.Meta.KVs))
	}
	for _, kv := range tf.Meta.KVs {
		if kv.Key == arch+".block_count" || kv.Key == "general.name" {
			continue
		}
		got, ok := df.Meta.Lookup(kv.Key)
		if !ok || !reflect.DeepEqual(got, kv.Value) {
			t.Errorf("metadata %s differs or is missing", kv.Key)
		}
	}
	var want []string
	for _, ti := range tf.Tensors {
		if b, ok := blockOf(ti.Name); ok && b >= k {
			continue
		}
		want = append(want, ti.Name)
		dt, ok := df.Tensor(ti.Name)
		if !ok {
			t.Errorf("draft lacks %s", ti.Name)
			continue
		}
		if dt.Type != ti.Type || !equalDims(dt.Dims, ti.Dims) || !bytes.Equal(df.TensorData(dt), tf.TensorData(&ti)) {
			t.Errorf("tensor %s differs", ti.Name)
		}
	}
	if len(df.Tensors) != len(want) {
		t.Errorf("draft has %d tensors, want %d", len(df.Tensors), len(want))
	}

	tm, err := model.Open(path, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer tm.Close()
	dm, err := model.Open(out, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer dm.Close()
	if dm.Config.Layers != k || dm.Config.Vocab != tm.Config.Vocab || dm.Config.TiedOutput != tm.Config.TiedOutput {
		t.Fatalf("draft config %+v", dm.Config)
	}
	toks := randomTokens(24, tm.Config.Vocab, uint64(k))
	ts, _ := tm.NewState(64)
	ds, _ := dm.NewState(64)
	for _, s := range []*model.State{ts, ds} {
		if err := s.Begin(model.Chain(toks)); err != nil {
			t.Fatal(err)
		}
		if err := s.RunLayers(0, k, nil); err != nil {
			t.Fatal(err)
		}
	}
	for r := range toks {
		th, dh := ts.Hidden(r), ds.Hidden(r)
		for i := range th {
			if math.Float32bits(th[i]) != math.Float32bits(dh[i]) {
				t.Fatalf("K=%d: row %d: hidden[%d] target %v, draft %v", k, r, i, th[i], dh[i])
			}
		}
	}
	// And the draft runs to logits.
	logits := make([]float32, dm.Config.Vocab)
	if err := ds.Logits([]int{len(toks) - 1}, logits); err != nil {
		t.Fatal(err)
	}
}

func TestDraftSynthesized(t *testing.T) {
	qwen2, _ := LookupShape("tiny-qwen2")
	qwen3, _ := LookupShape("tiny-qwen3")
	for _, s := range []Shape{deep, deepOf(qwen2, 3), deepOf(qwen3, 3), deepOf(tiny256, 3)} {
		t.Run(s.Name, func(t *testing.T) {
			path := writeTarget(t, Options{Shape: s, Type: quant.Q8_0, Seed: 5})
			for _, k := range []int{1, s.Layers / 2, s.Layers - 1} {
				checkDraft(t, path, k)
			}
		})
	}
}

func TestDraftStories(t *testing.T) {
	if _, err := os.Stat(storiesPath); err != nil {
		t.Skipf("%s not available (shared test data): %v", storiesPath, err)
	}
	for k := 1; k < 5; k++ {
		checkDraft(t, storiesPath, k)
	}
	// A trained model's early layers predict some of what it does.
	tm, err := model.Open(storiesPath, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer tm.Close()
	tf, _ := gguf.Open(storiesPath)
	defer tf.Close()
	text := greedy(t, tm, []int32{1}, 255) // the target's own story, from BOS
	for k := 1; k < 5; k++ {
		out := filepath.Join(t.TempDir(), "d.gguf")
		if err := WriteDraft(out, tf, k); err != nil {
			t.Fatal(err)
		}
		dm, err := model.Open(out, 2)
		if err != nil {
			t.Fatal(err)
		}
		a, err := Agreement(tm, dm, randomTokens(256, tm.Config.Vocab, 1))
		if err != nil {
			t.Fatal(err)
		}
		g, err := Agreement(tm, dm, text)
		dm.Close()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("stories260K, draft of %d of 5 layers: agreement %.3f over 256 random tokens, %.3f over the target's greedy text", k, a, g)
	}
}

// greedy returns prompt followed by n tokens greedily decoded by m.
func greedy(t *testing.T, m *model.Model, prompt []int32, n int) []int32 {
	t.Helper()
	st, err := m.NewState(len(prompt) + n)
	if err != nil {
		t.Fatal(err)
	}
	logits := make([]float32, m.Config.Vocab)
	out := append([]int32(nil), prompt...)
	next := prompt
	for range n {
		if err := st.Forward(model.Chain(next)); err != nil {
			t.Fatal(err)
		}
		if err := st.Logits([]int{len(next) - 1}, logits); err != nil {
			t.Fatal(err)
		}
		if err := st.CommitAll(); err != nil {
			t.Fatal(err)
		}
		next = []int32{int32(argmax(logits))}
		out = append(out, next[0])
	}
	return out
}

// rewrite returns a copy of src, in memory, without the tensor named drop
// and with the metadata in set changed.
func rewrite(t *testing.T, src *gguf.File, drop string, set map[string]any) *gguf.File {
	t.Helper()
	return testutil.GGUF(t, func(w *gguf.Writer) error {
		if err := w.CopyMeta(&src.Meta, ""); err != nil {
			return err
		}
		for k, v := range set {
			if err := w.Set(k, v); err != nil {
				return err
			}
		}
		var keep []*gguf.TensorInfo
		for i := range src.Tensors {
			ti := &src.Tensors[i]
			if ti.Name != drop {
				keep = append(keep, ti)
				w.AddTensor(ti.Name, ti.Type, ti.Dims...)
			}
		}
		w.WriteHeader()
		for _, ti := range keep {
			w.Write(src.TensorData(ti))
		}
		return nil
	})
}

func TestDraftErrors(t *testing.T) {
	path := writeTarget(t, Options{Shape: deepOf(deep, 3), Type: quant.Q8_0, Seed: 1})
	tf, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer tf.Close()
	dir := t.TempDir()
	out := filepath.Join(dir, "d.gguf")
	cases := []struct {
		f    *gguf.File
		k    int
		want string
	}{
		{tf, 0, "1 to 2 of the target's 3 layers"},
		{tf, -1, "1 to 2"},
		{tf, 3, "1 to 2 of the target's 3 layers"},
		{tf, 4, "1 to 2"},
		{rewrite(t, tf, "", map[string]any{"general.architecture": "gpt2"}), 1, `architecture "gpt2"`},
		{rewrite(t, tf, "blk.0.ffn_up.weight", nil), 1, `"blk.0.ffn_up.weight"`},
		{rewrite(t, tf, "blk.2.attn_k.weight", nil), 1, `"blk.2.attn_k.weight"`},
		{rewrite(t, tf, "output_norm.weight", nil), 2, `"output_norm.weight"`},
		{rewrite(t, tf, "token_embd.weight", nil), 2, `"token_embd.weight"`},
		{nil, 1, "no target"},
	}
	for _, c := range cases {
		err := WriteDraft(out, c.f, c.k)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("K=%d: error %v, want one containing %q", c.k, err, c.want)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Errorf("files left after an error: %v", ents)
		}
	}
	// A writer failing mid-stream: the error comes back, no file is left.
	if err := DraftOf(&failWriter{n: 5000}, tf, 1); err == nil {
		t.Error("failing writer: no error")
	}
	if err := WriteDraft(filepath.Join(dir, "no", "d.gguf"), tf, 1); err == nil {
		t.Error("missing directory: no error")
	}
}

func TestTailScaleErrors(t *testing.T) {
	v, _ := DemoVocab()
	for _, c := range []struct {
		from  int
		scale float32
		want  string
	}{
		{-1, 0.5, "tail from layer -1"},
		{8, 0.5, "tail from layer 8"},
		{2, -0.5, "tail scale -0.5"},
		{2, float32(math.NaN()), "tail scale NaN"},
		{2, float32(math.Inf(1)), "tail scale +Inf"},
		{0, 0.5, "without a tail"},
	} {
		err := Write(&bytes.Buffer{}, Options{Shape: deep, Type: quant.Q8_0, Vocab: v, TailFrom: c.from, TailScale: c.scale})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("TailFrom %d, TailScale %v: %v, want %q", c.from, c.scale, err, c.want)
		}
	}
	// TailScale 1 writes the same bytes as no tail.
	a := writeBytes(t, Options{Shape: deep, Type: quant.Q8_0, Vocab: v, Seed: 2})
	b := writeBytes(t, Options{Shape: deep, Type: quant.Q8_0, Vocab: v, Seed: 2, TailFrom: 3, TailScale: 1})
	if !bytes.Equal(a, b) {
		t.Error("TailScale 1 changed the file")
	}
}

// measureAgreement writes a target of shape s with the given tail and its
// K-layer draft, and returns the draft's agreement over n random tokens and
// the std of the target's logits at the last token.
func measureAgreement(t testing.TB, o Options, k, n int) (agree, std float64) {
	t.Helper()
	o.TailFrom = k
	path := writeTarget(t, o)
	tf, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer tf.Close()
	dpath := path + ".draft"
	if err := WriteDraft(dpath, tf, k); err != nil {
		t.Fatal(err)
	}
	tm, err := model.Open(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer tm.Close()
	dm, err := model.Open(dpath, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer dm.Close()
	toks := randomTokens(n, tm.Config.Vocab, 11)
	if agree, err = Agreement(tm, dm, toks); err != nil {
		t.Fatal(err)
	}
	st, _ := tm.NewState(len(toks))
	if err := st.Forward(model.Chain(toks)); err != nil {
		t.Fatal(err)
	}
	logits := make([]float32, tm.Config.Vocab)
	if err := st.Logits([]int{len(toks) - 1}, logits); err != nil {
		t.Fatal(err)
	}
	var s, sq float64
	for _, x := range logits {
		s += float64(x)
		sq += float64(x) * float64(x)
	}
	mean := s / float64(len(logits))
	return agree, math.Sqrt(sq/float64(len(logits)) - mean*mean)
}

// TestTailScaleAgreement checks that a smaller tail scale makes the
// self-draft agree more often, that scale 0 makes it agree always, and that
// the logits keep a spread of a few units.
func TestTailScaleAgreement(t *testing.T) {
	const k, n = 2, 384
	prev := -1.0
	for _, s := range []float32{1, 0.3, 0.05, 0} {
		a, std := measureAgreement(t, Options{Shape: deep, Type: quant.Q8_0, Seed: 9, TailScale: s}, k, n)
		t.Logf("%s, draft %d of %d layers, tail scale %-4v: agreement %.3f, logit std %.2f", deep.Name, k, deep.Layers, s, a, std)
		if a < prev {
			t.Errorf("tail scale %v: agreement %.3f below the larger scale's %.3f", s, a, prev)
		}
		if std < 1 || std > 20 {
			t.Errorf("tail scale %v: logit std %.2f outside [1, 20]", s, std)
		}
		prev = a
		if s == 0 && a != 1 {
			t.Errorf("tail scale 0: agreement %.3f, want 1", a)
		}
	}
}

// TestAgreementTable measures the tail-scale → agreement mapping on a
// real shape; set SHADE_SYNTH_AGREEMENT=shape:K (e.g. llama3-1b:4) to run it.
func TestAgreementTable(t *testing.T) {
	spec := os.Getenv("SHADE_SYNTH_AGREEMENT")
	if spec == "" {
		t.Skip("set SHADE_SYNTH_AGREEMENT=shape:K (e.g. llama3-1b:4) to measure")
	}
	var name string
	var k int
	if _, err := fmt.Sscanf(strings.Replace(spec, ":", " ", 1), "%s %d", &name, &k); err != nil {
		t.Fatal(err)
	}
	var s Shape
	if name == deep.Name {
		s = deep
	} else {
		var err error
		if s, err = LookupShape(name); err != nil {
			t.Fatal(err)
		}
	}
	o := Options{Shape: s, Type: quant.Q4_0, Seed: 1}
	if vp := os.Getenv("SHADE_SYNTH_VOCAB"); vp != "" {
		v, err := gguf.Open(vp)
		if err != nil {
			t.Fatal(err)
		}
		defer v.Close()
		o.Vocab = v
	}
	for _, sc := range []float32{1, 0.5, 0.3, 0.2, 0.1, 0.05} {
		o.TailScale = sc
		a, std := measureAgreement(t, o, k, 256)
		t.Logf("%s, draft %d of %d layers, tail scale %-4v: agreement %.3f, logit std %.2f", s.Name, k, s.Layers, sc, a, std)
	}
}
