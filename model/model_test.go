package model

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"shade/gguf"
	"shade/quant"
)

func openConformance(t *testing.T, name string) *Model { return openConformanceB(t, name) }

func openConformanceB(t testing.TB, name string) *Model {
	t.Helper()
	conformanceModels(t)
	m, err := Open(filepath.Join(conformanceDir, name), 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// logitsOf runs a batch on a state and returns the logits of every row.
func logitsOf(t *testing.T, s *State, b Batch) []float32 {
	t.Helper()
	if err := s.Forward(b); err != nil {
		t.Fatal(err)
	}
	rows := make([]int, len(b.Tokens))
	for i := range rows {
		rows[i] = i
	}
	out := make([]float32, len(rows)*s.cfg.Vocab)
	if err := s.Logits(rows, out); err != nil {
		t.Fatal(err)
	}
	return out
}

var testPrompt = []int32{1, 403, 407, 261, 378, 432, 383, 286}

func TestBatchEqualsSequential(t *testing.T) {
	for _, name := range []string{"stories260K.gguf", "llama-tiny-q4_0.gguf", "qwen3-tiny-q8_0.gguf"} {
		t.Run(name, func(t *testing.T) {
			m := openConformance(t, name)
			V := m.Config.Vocab
			batch, _ := m.NewState(64)
			all := logitsOf(t, batch, Chain(testPrompt))
			seq, _ := m.NewState(64)
			for i, tok := range testPrompt {
				got := logitsOf(t, seq, Chain([]int32{tok}))
				if err := seq.CommitAll(); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, all[i*V:(i+1)*V]) {
					t.Fatalf("row %d: batched logits differ from token-by-token", i)
				}
			}
		})
	}
}

func TestTreeBranchesMatchAlone(t *testing.T) {
	m := openConformance(t, "llama-tiny-q8_0.gguf")
	V := m.Config.Vocab
	prefix := testPrompt[:4]
	// A tree after the prefix:   row0 ─┬─ row1 ── row3
	//                                  └─ row2 ── row4
	tree := Batch{
		Tokens: []int32{100, 200, 300, 400, 500},
		Parent: []int32{-1, 0, 0, 1, 2},
	}
	s, _ := m.NewState(64)
	logitsOf(t, s, Chain(prefix))
	s.CommitAll()
	treeLogits := logitsOf(t, s, tree)
	for _, path := range [][]int{{0, 1, 3}, {0, 2, 4}} {
		alone, _ := m.NewState(64)
		logitsOf(t, alone, Chain(prefix))
		alone.CommitAll()
		var toks []int32
		for _, r := range path {
			toks = append(toks, tree.Tokens[r])
		}
		got := logitsOf(t, alone, Chain(toks))
		for k, r := range path {
			if !slices.Equal(got[k*V:(k+1)*V], treeLogits[r*V:(r+1)*V]) {
				t.Errorf("path %v: row %d of the tree differs from the branch run alone", path, r)
			}
		}
	}
	// Commit one branch and continue: same as having run it as a chain.
	if err := s.Commit([]int{0, 2, 4}); err != nil {
		t.Fatal(err)
	}
	next := logitsOf(t, s, Chain([]int32{42}))
	ref, _ := m.NewState(64)
	logitsOf(t, ref, Chain(append(slices.Clone(prefix), 100, 300, 500)))
	ref.CommitAll()
	want := logitsOf(t, ref, Chain([]int32{42}))
	if !slices.Equal(next, want) {
		t.Error("after committing a tree branch, the next token's logits differ from the chain's")
	}
	if err := s.Commit([]int{1}); err == nil {
		t.Error("commit of rows that are not a root path accepted")
	}
}

func TestRollbackRegenerates(t *testing.T) {
	m := openConformance(t, "stories260K.gguf")
	s, _ := m.NewState(128)
	logits := make([]float32, m.Config.Vocab)
	gen := func(n int) []int32 {
		var out []int32
		for range n {
			next := int32(0)
			for i, v := range logits {
				if v > logits[next] {
					next = int32(i)
				}
			}
			out = append(out, next)
			s.Forward(Chain([]int32{next}))
			s.Logits([]int{0}, logits)
			s.CommitAll()
		}
		return out
	}
	s.Forward(Chain(testPrompt[:5]))
	s.Logits([]int{4}, logits)
	s.CommitAll()
	first := gen(20)
	// Roll back 12 tokens and regenerate: the logits of the token before
	// them are recomputed by feeding it again.
	keep := 5 + 8 - 1
	if err := s.Truncate(keep); err != nil {
		t.Fatal(err)
	}
	s.Forward(Chain([]int32{first[7]}))
	s.Logits([]int{0}, logits)
	s.CommitAll()
	again := gen(12)
	if !slices.Equal(again, first[8:]) {
		t.Errorf("after rollback: %v, first time %v", again, first[8:])
	}
}

func TestBatchValidation(t *testing.T) {
	m := openConformance(t, "stories260K.gguf")
	s, _ := m.NewState(8)
	cases := []struct {
		name string
		b    Batch
		want string
	}{
		{"empty", Batch{}, "empty"},
		{"token out of vocab", Chain([]int32{1, 99999}), "outside the vocabulary"},
		{"negative token", Chain([]int32{-1}), "outside the vocabulary"},
		{"context full", Chain(make([]int32, 9)), "context full"},
		{"parent after child", Batch{Tokens: []int32{1, 2}, Parent: []int32{1, -1}}, "parent"},
		{"length mismatch", Batch{Tokens: []int32{1, 2}, Parent: []int32{-1}}, "parents"},
	}
	for _, tc := range cases {
		err := s.Begin(tc.b)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want mention of %q", tc.name, err, tc.want)
		}
	}
	if err := s.RunLayers(1, 2, nil); err == nil {
		t.Error("RunLayers out of order accepted")
	}
}

func TestLayerHookAndTimings(t *testing.T) {
	m := openConformance(t, "stories260K.gguf")
	s, _ := m.NewState(16)
	if err := s.Begin(Chain(testPrompt[:3])); err != nil {
		t.Fatal(err)
	}
	var seen []int
	stop := errors.New("stop")
	err := s.RunLayers(0, m.Config.Layers, func(l int) error {
		seen = append(seen, l)
		if l == 2 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || !slices.Equal(seen, []int{0, 1, 2}) || s.NextLayer() != 3 {
		t.Fatalf("hook: err %v, seen %v, next %d", err, seen, s.NextLayer())
	}
	if err := s.Logits([]int{0}, make([]float32, m.Config.Vocab)); err == nil {
		t.Error("Logits before the last layer accepted")
	}
	if err := s.RunLayers(3, m.Config.Layers, nil); err != nil {
		t.Fatal(err)
	}
	for l, d := range s.LayerTimes {
		if d <= 0 {
			t.Errorf("layer %d time %v", l, d)
		}
	}
}

// writeModel copies a conformance file's metadata and tensors into a new
// file, letting edit change metadata and drop or retype tensors.
func rewriteModel(t *testing.T, src string, setMeta map[string]any, dropTensor, retype string) string {
	t.Helper()
	f, err := gguf.Open(filepath.Join(conformanceDir, src))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	path := filepath.Join(t.TempDir(), "edited.gguf")
	out, _ := os.Create(path)
	defer out.Close()
	w := gguf.NewWriter(out)
	for _, kv := range f.Meta.KVs {
		w.Set(kv.Key, kv.Value)
	}
	for k, v := range setMeta {
		w.Set(k, v)
	}
	var kept []*gguf.TensorInfo
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		if ti.Name == dropTensor {
			continue
		}
		typ := ti.Type
		if ti.Name == retype {
			typ = quant.IQ1_S
			if err := w.AddTensor(ti.Name, typ, 256, ti.Elements()/256); err != nil {
				t.Fatal(err)
			}
			kept = append(kept, nil)
			continue
		}
		w.AddTensor(ti.Name, typ, ti.Dims...)
		kept = append(kept, ti)
	}
	if err := w.WriteHeader(); err != nil {
		t.Fatal(err)
	}
	for i, ti := range kept {
		if ti == nil {
			w.Write(make([]byte, (f.Tensors[i].Elements()/256)*uint64(quant.IQ1_S.BlockBytes())))
			continue
		}
		w.Write(f.TensorData(ti))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadErrors(t *testing.T) {
	conformanceModels(t)
	cases := []struct {
		name        string
		meta        map[string]any
		drop, type5 string
		want        string
	}{
		{"unknown architecture", map[string]any{"general.architecture": "mamba"}, "", "", `architecture "mamba"`},
		{"missing tensor", nil, "blk.1.ffn_up.weight", "", `"blk.1.ffn_up.weight": missing`},
		{"wrong shape", map[string]any{"llama.feed_forward_length": uint32(100)}, "", "", "shape"},
		{"head count wrong type", map[string]any{"llama.attention.head_count": "eight"}, "", "", "head_count"},
		{"unsupported tensor type", nil, "", "blk.0.ffn_down.weight", `"blk.0.ffn_down.weight": type IQ1_S`},
		{"unknown rope scaling", map[string]any{"llama.rope.scaling.type": "yarn"}, "", "", "yarn"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := rewriteModel(t, "llama-tiny-q8_0.gguf", tc.meta, tc.drop, tc.type5)
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

// TestExtendMatchesWholeTree grows a tree level by level with Extend and
// checks every row's logits against the tree run in one pass.
func TestExtendMatchesWholeTree(t *testing.T) {
	m := openConformance(t, "qwen2-tiny-q8_0.gguf")
	V := m.Config.Vocab
	tree := Batch{
		Tokens: []int32{7, 100, 200, 300, 400, 500},
		Parent: []int32{-1, 0, 0, 1, 2, 2},
	}
	s, _ := m.NewState(64)
	logitsOf(t, s, Chain(testPrompt[:4]))
	s.CommitAll()
	whole := logitsOf(t, s, tree)
	s.Truncate(4)

	levels := []Batch{
		{Tokens: []int32{7}},
		{Tokens: []int32{100, 200}, Parent: []int32{0, 0}},
		{Tokens: []int32{300, 400, 500}, Parent: []int32{1, 2, 2}},
	}
	row := 0
	for i, lv := range levels {
		var got []float32
		if i == 0 {
			got = logitsOf(t, s, lv)
		} else {
			if err := s.Extend(lv); err != nil {
				t.Fatal(err)
			}
			if err := s.RunLayers(0, m.Config.Layers, nil); err != nil {
				t.Fatal(err)
			}
			rows := make([]int, len(lv.Tokens))
			for k := range rows {
				rows[k] = k
			}
			got = make([]float32, len(rows)*V)
			s.Logits(rows, got)
		}
		for k := range lv.Tokens {
			if !slices.Equal(got[k*V:(k+1)*V], whole[(row+k)*V:(row+k+1)*V]) {
				t.Errorf("level %d row %d: logits differ from the whole tree's", i, row+k)
			}
		}
		row += len(lv.Tokens)
	}
	if err := s.Commit([]int{0, 2, 5}); err != nil {
		t.Fatal(err)
	}
	if s.Len() != 7 {
		t.Errorf("Len after commit = %d", s.Len())
	}
	if err := s.Extend(Batch{Tokens: []int32{1}, Parent: []int32{-1}}); err == nil {
		t.Error("Extend after Commit accepted")
	}
}

// TestAbandonMidPass: a pass stopped midway and abandoned leaves the tree as
// it was before the pass, so later passes and commits match a run that never
// had it.
func TestAbandonMidPass(t *testing.T) {
	m := openConformance(t, "qwen2-tiny-q8_0.gguf")
	V := m.Config.Vocab
	half := m.Config.Layers / 2
	tree := Batch{Tokens: []int32{7, 100, 200, 300}, Parent: []int32{-1, 0, 0, 1}}
	s, _ := m.NewState(64)
	logitsOf(t, s, Chain(testPrompt[:4]))
	s.CommitAll()
	whole := logitsOf(t, s, tree)
	s.Truncate(4)

	// An abandoned first pass leaves nothing in flight.
	if err := s.Begin(Chain([]int32{9, 9})); err != nil {
		t.Fatal(err)
	}
	if err := s.RunLayers(0, half, nil); err != nil {
		t.Fatal(err)
	}
	s.Abandon()
	if err := s.Commit([]int{0}); err == nil {
		t.Error("Commit after an abandoned Begin accepted")
	}
	logitsOf(t, s, Batch{Tokens: []int32{7}})
	// An abandoned Extend keeps the earlier levels.
	for _, lv := range []Batch{
		{Tokens: []int32{100, 200}, Parent: []int32{0, 0}},
		{Tokens: []int32{555, 666, 777}, Parent: []int32{1, 2, 2}}, // abandoned
		{Tokens: []int32{300}, Parent: []int32{1}},
	} {
		if err := s.Extend(lv); err != nil {
			t.Fatal(err)
		}
		if lv.Tokens[0] == 555 {
			if err := s.RunLayers(0, half, nil); err != nil {
				t.Fatal(err)
			}
			s.Abandon()
			if err := s.Logits([]int{0}, make([]float32, V)); err == nil {
				t.Error("Logits after Abandon accepted")
			}
			continue
		}
		if err := s.RunLayers(0, m.Config.Layers, nil); err != nil {
			t.Fatal(err)
		}
	}
	got := make([]float32, V)
	if err := s.Logits([]int{0}, got); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, whole[3*V:4*V]) {
		t.Error("logits after an abandoned Extend differ from the whole tree's")
	}
	if err := s.Commit([]int{0, 1, 3}); err != nil {
		t.Fatal(err)
	}
	if s.Len() != 7 {
		t.Errorf("Len after commit = %d", s.Len())
	}
}

// slowSource is a layer source whose every Layer call waits an hour and
// every release a minute, on the test's clock: a streamed layer whose read
// is late.
type slowSource struct {
	inner LayerSource
	now   *time.Time
}

func (s slowSource) Layer(i int) (*Layer, error) {
	*s.now = s.now.Add(time.Hour)
	return s.inner.Layer(i)
}

func (s slowSource) ReleaseLayer(int) { *s.now = s.now.Add(time.Minute) }

// A layer's time is its compute: the wait for its weights is recorded
// apart, so that the elastic sensor, which scores the layer times a hook
// sees, does not read a slow disk as memory contention.
func TestLayerTimesExcludeWeightWait(t *testing.T) {
	m := openConformance(t, "stories260K.gguf")
	now := time.Unix(0, 0)
	m.Weights.Layers = slowSource{inner: m.Weights.Layers, now: &now}
	s, err := m.NewState(8)
	if err != nil {
		t.Fatal(err)
	}
	s.clock = func() time.Time { return now }
	if err := s.Begin(Chain([]int32{1, 2})); err != nil {
		t.Fatal(err)
	}
	var seen []time.Duration
	if err := s.RunLayers(0, m.Config.Layers, func(l int) error {
		seen = append(seen, s.LayerTimes[l])
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for l := range m.Config.Layers {
		if seen[l] != 0 || s.LayerTimes[l] != 0 {
			t.Errorf("layer %d: compute time %v (hook saw %v), want 0: the wait for its weights is not compute", l, s.LayerTimes[l], seen[l])
		}
		if want := time.Hour + time.Minute; s.LayerWaits[l] != want {
			t.Errorf("layer %d: weight wait %v, want %v", l, s.LayerWaits[l], want)
		}
	}
}
