package weights

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"shade/gguf"
	"shade/model"
	"shade/quant"
	"shade/synth"
)

// testShape is small enough to write in milliseconds, with enough layers
// for budgets to fall between them.
var testShape = synth.Shape{Name: "stream-test", Arch: "llama", Dim: 256, Layers: 6, Heads: 4, KVHeads: 2, HeadDim: 64,
	FFN: 512, ContextLen: 512, RopeBase: 10000, RMSEps: 1e-5}

var (
	modelOnce sync.Map // shape name → path
)

// writeModel writes a synthetic model once per test binary.
func writeModel(t testing.TB, shape synth.Shape, typ quant.Type) string {
	t.Helper()
	key := shape.Name + typ.String()
	if p, ok := modelOnce.Load(key); ok {
		return p.(string)
	}
	vocab, err := synth.DemoVocab()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(sharedDir(t), key+".gguf")
	if err := synth.WriteFile(path, synth.Options{Shape: shape, Type: typ, Vocab: vocab, Seed: 7}); err != nil {
		t.Fatal(err)
	}
	modelOnce.Store(key, path)
	return path
}

var dirOnce struct {
	sync.Once
	dir string
}

// sharedDir is a directory that lives as long as the test binary (the
// models are reused across tests; TestMain removes it).
func sharedDir(t testing.TB) string {
	dirOnce.Do(func() {
		d, err := mkdirTemp()
		if err != nil {
			t.Fatal(err)
		}
		dirOnce.dir = d
	})
	return dirOnce.dir
}

func openModel(t testing.TB, path string) *model.Model {
	t.Helper()
	m, err := model.Open(path, 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// script runs a fixed sequence of passes (a prompt, decode steps, a tree)
// and returns every logit it computed.
func script(t testing.TB, m *model.Model) []float32 {
	t.Helper()
	s, err := m.NewState(64)
	if err != nil {
		t.Fatal(err)
	}
	var out []float32
	v := m.Config.Vocab
	logits := func(rows ...int) {
		buf := make([]float32, len(rows)*v)
		if err := s.Logits(rows, buf); err != nil {
			t.Fatal(err)
		}
		out = append(out, buf...)
	}
	prompt := []int32{1, 17, 99, 3, 250, 7, 42}
	if err := s.Forward(model.Chain(prompt)); err != nil {
		t.Fatal(err)
	}
	logits(0, 3, 6)
	if err := s.CommitAll(); err != nil {
		t.Fatal(err)
	}
	for _, tok := range []int32{5, 300, 11} {
		if err := s.Forward(model.Chain([]int32{tok})); err != nil {
			t.Fatal(err)
		}
		logits(0)
		if err := s.CommitAll(); err != nil {
			t.Fatal(err)
		}
	}
	tree := model.Batch{Tokens: []int32{8, 9, 10, 11}, Parent: []int32{-1, 0, 0, 1}}
	if err := s.Forward(tree); err != nil {
		t.Fatal(err)
	}
	logits(0, 1, 2, 3)
	return out
}

func TestStreamerMatchesResident(t *testing.T) {
	path := writeModel(t, testShape, quant.Q8_0)
	m := openModel(t, path)
	want := script(t, m)
	total := m.WeightBytes()
	for _, budget := range []string{"0%", "30%", "60%", "90%"} {
		for _, ra := range []int{0, 1, 3} {
			t.Run(fmt.Sprintf("%s/read-ahead-%d", budget, ra), func(t *testing.T) {
				b, err := ParseBudget(budget, total)
				if err != nil {
					t.Fatal(err)
				}
				plan, st, err := Apply(m, 0, b, Options{ReadAhead: ra, ChunkBytes: 64 << 10})
				if err != nil {
					t.Fatal(err)
				}
				if st == nil {
					t.Fatalf("budget %s: no layer streams (%s)", budget, plan.String())
				}
				defer st.Close()
				if budget == "0%" && len(plan.Streamed) != testShape.Layers {
					t.Fatalf("0%%: %d layers streamed", len(plan.Streamed))
				}
				got := script(t, m)
				if !slices.Equal(got, want) {
					t.Fatalf("logits differ from the resident model's")
				}
				// The resident passes repacked every layer (where the CPU
				// computes on row panels); a streamed layer's copy is gone.
				for i := range plan.Layers {
					l, _ := st.orig.Layer(i)
					for _, lm := range l.Matrices() {
						if lm.M.Repacked() && !plan.Resident[i] {
							t.Fatalf("streamed layer %d keeps %s in row panels", i, lm.Name)
						}
					}
				}
				s := st.Stats()
				passes := int64(5)
				// Read-ahead wraps into a next pass that never comes: up to
				// ReadAhead+1 layers more than the passes used.
				used := passes * int64(len(plan.Streamed))
				if s.Passes != passes || s.LayersRead < used || s.LayersRead > used+int64(ra)+1 {
					t.Fatalf("stats: %d passes, %d layers read; want %d, %d (+ read-ahead)", s.Passes, s.LayersRead, passes, used)
				}
				if s.BytesRead < passes*plan.StreamedBytes || s.ReadGBps <= 0 {
					t.Fatalf("stats: %d bytes read (%.2f GB/s); want %d", s.BytesRead, s.ReadGBps, passes*plan.StreamedBytes)
				}
				if s.Resets > 1 { // only the very first call may find nothing in flight
					t.Fatalf("%d pipeline resets in passes that ran in order", s.Resets)
				}
			})
		}
	}
	if _, ok := m.Weights.Layers.(*Streamer); ok {
		t.Fatal("Close left the streamer installed")
	}
	if got := script(t, m); !slices.Equal(got, want) {
		t.Fatal("the resident model changed after streaming")
	}
}

func TestStreamerVariants(t *testing.T) {
	shapes := []synth.Shape{
		{Name: "stream-qwen2", Arch: "qwen2", Dim: 128, Layers: 4, Heads: 4, KVHeads: 2, HeadDim: 32, FFN: 256,
			ContextLen: 512, RopeBase: 10000, RMSEps: 1e-6, QKVBias: true},
		{Name: "stream-qwen3", Arch: "qwen3", Dim: 128, Layers: 4, Heads: 4, KVHeads: 2, HeadDim: 64, FFN: 256,
			ContextLen: 512, RopeBase: 10000, RMSEps: 1e-6, QKNorm: true},
	}
	for _, sh := range shapes {
		for _, typ := range []quant.Type{quant.Q4_0, quant.F16} {
			t.Run(sh.Name+"/"+typ.String(), func(t *testing.T) {
				m := openModel(t, writeModel(t, sh, typ))
				want := script(t, m)
				_, st, err := Apply(m, 0, 0, Options{ReadAhead: 2})
				if err != nil {
					t.Fatal(err)
				}
				defer st.Close()
				if got := script(t, m); !slices.Equal(got, want) {
					t.Fatal("logits differ from the resident model's")
				}
			})
		}
	}
}

func TestAllResidentNeedsNoStreamer(t *testing.T) {
	m := openModel(t, writeModel(t, testShape, quant.Q8_0))
	b, _ := ParseBudget("100%", m.WeightBytes())
	plan, st, err := Apply(m, 0, b, DefaultOptions())
	if err != nil || st != nil || !plan.AllResident() {
		t.Fatalf("100%%: streamer %v, plan %s, err %v", st, plan.String(), err)
	}
	// The draft's bytes count against the budget.
	plan, st, err = Apply(m, 1, b, DefaultOptions())
	if err != nil || st == nil || len(plan.Streamed) != 1 {
		t.Fatalf("100%% with a draft: streamed %v, err %v", plan.Streamed, err)
	}
	st.Close()
	if _, _, err := Apply(m, 0, 0, DefaultOptions()); err != nil {
		t.Fatal(err)
	}
	defer m.Weights.Layers.(*Streamer).Close()
	if _, _, err := Apply(m, 0, 0, DefaultOptions()); err == nil {
		t.Fatal("streaming a streamed model twice was accepted")
	}
}

// TestStreamerAbandonedPass: a pass that stops midway (a hook error), then
// passes of two States taking turns, all give the resident logits.
func TestStreamerAbandonedPass(t *testing.T) {
	m := openModel(t, writeModel(t, testShape, quant.Q8_0))
	want := script(t, m)
	for _, ra := range []int{0, 1, 3} {
		t.Run(fmt.Sprintf("read-ahead-%d", ra), func(t *testing.T) {
			_, st, err := Apply(m, 0, 0, Options{ReadAhead: ra})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			other, err := m.NewState(64)
			if err != nil {
				t.Fatal(err)
			}
			stop := errors.New("stop")
			for _, at := range []int{0, 2, 4} {
				if err := other.Begin(model.Chain([]int32{3, 4})); err != nil {
					t.Fatal(err)
				}
				err := other.RunLayers(0, testShape.Layers, func(l int) error {
					if l == at {
						return stop
					}
					return nil
				})
				if !errors.Is(err, stop) {
					t.Fatalf("hook error lost: %v", err)
				}
			}
			resets := st.Stats().Resets
			if resets < 2 {
				t.Fatalf("%d pipeline resets after abandoned passes", resets)
			}
			if got := script(t, m); !slices.Equal(got, want) {
				t.Fatal("logits after abandoned passes differ")
			}
			// Two States taking turns pass by pass.
			a, _ := m.NewState(64)
			b, _ := m.NewState(64)
			for range 3 {
				for _, s := range []*model.State{a, b} {
					if err := s.Forward(model.Chain([]int32{5})); err != nil {
						t.Fatal(err)
					}
					if err := s.CommitAll(); err != nil {
						t.Fatal(err)
					}
				}
			}
			la, lb := make([]float32, m.Config.Vocab), make([]float32, m.Config.Vocab)
			a.Forward(model.Chain([]int32{6}))
			a.Logits([]int{0}, la)
			b.Forward(model.Chain([]int32{6}))
			b.Logits([]int{0}, lb)
			if !slices.Equal(la, lb) {
				t.Fatal("two States with the same tokens disagree")
			}
		})
	}
}

// faultReader fails one read, chosen by count, with an error or a short read.
type faultReader struct {
	r      io.ReaderAt
	failAt int64 // 1-based read to fail; 0: none
	short  bool
	n      atomic.Int64
}

func (f *faultReader) ReadAt(p []byte, off int64) (int, error) {
	if k := f.n.Add(1); k == f.failAt {
		if f.short {
			n, _ := f.r.ReadAt(p[:len(p)/2], off)
			return n, nil // a broken device: short, and no error
		}
		return 0, errors.New("input/output error")
	}
	return f.r.ReadAt(p, off)
}

func TestStreamerReadErrors(t *testing.T) {
	m := openModel(t, writeModel(t, testShape, quant.Q8_0))
	want := script(t, m)
	for _, short := range []bool{false, true} {
		for _, ra := range []int{0, 2} {
			t.Run(fmt.Sprintf("short-%v/read-ahead-%d", short, ra), func(t *testing.T) {
				var fr *faultReader
				_, st, err := Apply(m, 0, 0, Options{ReadAhead: ra, WrapReader: func(r io.ReaderAt) io.ReaderAt {
					fr = &faultReader{r: r, short: short}
					return fr
				}})
				if err != nil {
					t.Fatal(err)
				}
				defer st.Close()
				fr.failAt = fr.n.Load() + 3 // the prompt pass's third layer
				s, _ := m.NewState(64)
				err = s.Forward(model.Chain([]int32{1, 2, 3}))
				if err == nil {
					t.Fatal("a failed read went unnoticed")
				}
				for _, part := range []string{"streaming layer", filepath.Base(st.path), "at offset"} {
					if !strings.Contains(err.Error(), part) {
						t.Fatalf("error %q does not say %q", err, part)
					}
				}
				if short && (!strings.Contains(err.Error(), "short read") || !errors.Is(err, gguf.ErrModelFileChanged)) {
					t.Fatalf("error %q does not say it was a short read of a changed file", err)
				}
				if st.Stats().ReadErrors != 1 {
					t.Fatalf("%d read errors counted", st.Stats().ReadErrors)
				}
				if got := script(t, m); !slices.Equal(got, want) {
					t.Fatal("the passes after a read error differ")
				}
			})
		}
	}
}

func TestMeasureDisk(t *testing.T) {
	path := writeModel(t, testShape, quant.Q8_0)
	r, err := MeasureDisk(path, DiskOptions{Bytes: 2 << 20, Readers: []int{1, 3}, ChunkBytes: 256 << 10, Reps: 2})
	if err != nil {
		t.Fatal(err)
	}
	if r.GBps <= 0 || len(r.ByReaders) != 2 || r.Bytes != 2<<20 || (r.Readers != 1 && r.Readers != 3) {
		t.Fatalf("%+v", r)
	}
	if _, err := MeasureDisk(path, DiskOptions{Offset: 1 << 40}); err == nil {
		t.Fatal("a range past the end of the file was measured")
	}
}

func TestNewStreamerRejects(t *testing.T) {
	m := openModel(t, writeModel(t, testShape, quant.Q8_0))
	plan := NewPlan(PlanInput{LayerBytes: m.Weights.LayerBytes, GlobalBytes: m.Weights.GlobalBytes})
	if _, err := NewStreamer(m, plan, Options{ReadAhead: -1}); err == nil {
		t.Error("a negative read-ahead was accepted")
	}
	short := NewPlan(PlanInput{LayerBytes: m.Weights.LayerBytes[:2]})
	if _, err := NewStreamer(m, short, Options{}); err == nil {
		t.Error("a plan for another layer count was accepted")
	}
	st, err := NewStreamer(m, plan, Options{ReadAhead: 64})
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Stats().ReadAhead; got != len(plan.Streamed) {
		t.Errorf("read-ahead %d not capped at the %d streamed layers", got, len(plan.Streamed))
	}
	st.Close()
	if _, err := st.Layer(0); err == nil {
		t.Error("Layer after Close succeeded")
	}
	if err := st.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestStreamerPrereadsNextPass checks that once a pass is done with its
// last streamed layer, every layer buffer (not all but the one the pass
// held last) fills with the next pass's first layers, with no Layer call:
// that is the reading a caller's drafting between passes hides.
func TestStreamerPrereadsNextPass(t *testing.T) {
	m := openModel(t, writeModel(t, testShape, quant.Q8_0))
	for _, ra := range []int{1, 2, 3} {
		t.Run(fmt.Sprintf("read-ahead-%d", ra), func(t *testing.T) {
			_, st, err := Apply(m, 0, 0, Options{ReadAhead: ra, ChunkBytes: 64 << 10})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if got, want := st.PrereadLayers(), ra+1; got != want {
				t.Fatalf("PrereadLayers %d, want %d", got, want)
			}
			s, err := m.NewState(16)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Forward(model.Chain([]int32{1, 2, 3})); err != nil {
				t.Fatal(err)
			}
			want := int64(testShape.Layers + ra + 1)
			deadline := time.Now().Add(10 * time.Second)
			for st.Stats().LayersRead < want && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			if got := st.Stats().LayersRead; got != want {
				t.Fatalf("%d layers read after one pass of %d streamed layers; want %d (every buffer holds a next-pass layer)", got, testShape.Layers, want)
			}
			before := st.Stats().LayersReady
			if err := s.Forward(model.Chain([]int32{4})); err != nil {
				t.Fatal(err)
			}
			if r := st.Stats().Resets; r > 1 {
				t.Fatalf("%d pipeline resets", r)
			}
			// The second pass found its first layers read already.
			if got := st.Stats().LayersReady - before; got < int64(ra+1) {
				t.Fatalf("%d layers ready in the pass after the pre-read, want ≥ %d", got, ra+1)
			}
		})
	}
	m0 := openModel(t, writeModel(t, testShape, quant.Q8_0))
	_, st, err := Apply(m0, 0, 0, Options{ReadAhead: 0})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if n := st.PrereadLayers(); n != 0 {
		t.Fatalf("no read-ahead: PrereadLayers %d, want 0", n)
	}
}

// gateReader holds every read, once holding, until its gate is closed.
type gateReader struct {
	r       io.ReaderAt
	holding atomic.Bool
	gate    chan struct{}
}

func (g *gateReader) ReadAt(p []byte, off int64) (int, error) {
	if g.holding.Load() {
		<-g.gate
	}
	return g.r.ReadAt(p, off)
}

// TestStreamerIOWaiting: IOWaiting is true exactly while a pass is blocked
// on a streamed layer's read.
func TestStreamerIOWaiting(t *testing.T) {
	m := openModel(t, writeModel(t, testShape, quant.Q8_0))
	g := &gateReader{gate: make(chan struct{})}
	_, st, err := Apply(m, 0, 0, Options{ReadAhead: 1, ChunkBytes: 64 << 10,
		WrapReader: func(r io.ReaderAt) io.ReaderAt { g.r = r; return g }})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if st.IOWaiting() {
		t.Fatal("waiting before any pass")
	}
	g.holding.Store(true)
	s, err := m.NewState(16)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Forward(model.Chain([]int32{1, 2})) }()
	deadline := time.Now().Add(10 * time.Second)
	for !st.IOWaiting() && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if !st.IOWaiting() {
		t.Fatal("a pass blocked on a held read: IOWaiting stayed false")
	}
	close(g.gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if st.IOWaiting() {
		t.Fatal("waiting after the pass")
	}
}
