package quant_test

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"shade/gguf"
	"shade/model"
	"shade/panelcache"
	"shade/par"
	"shade/quant"
)

// The panel cache's tests live here, beside the test panel kernel they
// need (panelexport_test.go): they check the bytes of mapped panels against
// packPanels and MatMul on them against the file's layout, bit for bit.

// cacheTensors are the tensors of the test models: three with panels (a
// Q4_K one, whose panels are larger than the tensor), one whose rows are
// not a whole number of panels, and a vector.
var cacheTensors = []struct {
	name       string
	typ        quant.Type
	rows, cols int
}{
	{"a.weight", quant.Q4_0, 64, 256},
	{"b.weight", quant.Q8_0, 48, 64},
	{"k.weight", quant.Q4_K, 24, 512},
	{"c.weight", quant.Q4_0, 24, 64},
	{"n.weight", quant.F32, 1, 64},
}

// writeModel writes a GGUF file of cacheTensors with random weights drawn
// from seed, and returns each tensor's bytes.
func writeModel(t *testing.T, path string, seed uint64) [][]byte {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 77))
	fd, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	w := gguf.NewWriter(fd)
	if err := w.Set("general.architecture", "test"); err != nil {
		t.Fatal(err)
	}
	var data [][]byte
	for _, ct := range cacheTensors {
		dims := []uint64{uint64(ct.cols), uint64(ct.rows)}
		if ct.typ == quant.F32 {
			dims = dims[:1]
			data = append(data, make([]byte, 4*ct.cols))
		} else {
			data = append(data, quant.RandomWeightsForTest(rng, ct.typ, ct.rows, ct.cols))
		}
		if err := w.AddTensor(ct.name, ct.typ, dims...); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.WriteHeader(); err != nil {
		t.Fatal(err)
	}
	for _, d := range data {
		if _, err := w.Write(d); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return data
}

// loaded is a test model opened as model.LoadWeights opens matrices.
type loaded struct {
	f     *gguf.File
	mats  []quant.Matrix // views of the mapping, repackable where they can be
	plain []quant.Matrix // the same weights in the heap, never repacked
}

func load(t *testing.T, path string, data [][]byte) *loaded {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	l := &loaded{f: f}
	for k, ct := range cacheTensors[:4] {
		ti, _ := f.Tensor(ct.name)
		m, err := quant.NewMatrix(ct.typ, ct.rows, ct.cols, f.TensorData(ti))
		if err != nil {
			t.Fatal(err)
		}
		l.mats = append(l.mats, quant.Repackable(m, f.ReleasePages))
		p, _ := quant.NewMatrix(ct.typ, ct.rows, ct.cols, bytes.Clone(data[k]))
		l.plain = append(l.plain, p)
	}
	return l
}

func (l *loaded) close() {
	for _, m := range l.mats {
		m.DropPanels()
	}
	l.f.Close()
}

// check holds every repackable matrix's panels to packPanels' bytes (when
// packed), and MatMul on l's matrices to MatMul in the file's layout.
func (l *loaded) check(t *testing.T, p *par.Pool, packed bool) {
	t.Helper()
	rng := rand.New(rand.NewPCG(3, 4))
	for k, m := range l.mats {
		if got := quant.PanelsForTest(m); m.PanelBytes() > 0 && packed {
			if want := quant.PackedForTest(l.plain[k]); !bytes.Equal(got, want) {
				t.Fatalf("%s: panels differ from packPanels' (%d and %d bytes)", cacheTensors[k].name, len(got), len(want))
			}
		} else if got != nil {
			t.Fatalf("%s: repacked (%d bytes), want not", cacheTensors[k].name, len(got))
		}
		for _, n := range []int{1, 5, 17} {
			x := quant.ActivationsForTest(rng, n*m.Cols)
			want, got := make([]float32, n*m.Rows), make([]float32, n*m.Rows)
			quant.MatMul(p, l.plain[k], x, n, want, nil)
			quant.MatMul(p, m, x, n, got, nil)
			for e := range got {
				if math.Float32bits(got[e]) != math.Float32bits(want[e]) {
					t.Fatalf("%s n=%d: output %d is %v, %v in the file's layout", cacheTensors[k].name, n, e, got[e], want[e])
				}
			}
		}
	}
}

// mapped reports whether path is mapped into this process.
func mapped(t *testing.T, path string) bool {
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skipf("no /proc/self/maps: %v", err)
	}
	return strings.Contains(string(maps), path)
}

type cacheFixture struct {
	dir, model string
	data       [][]byte
	p          *par.Pool
	warnings   []string
}

func newFixture(t *testing.T) *cacheFixture {
	quant.UseTestPanelKernel(t)
	fx := &cacheFixture{dir: filepath.Join(t.TempDir(), "panels"), model: filepath.Join(t.TempDir(), "m.gguf"), p: par.New(2)}
	t.Cleanup(fx.p.Close)
	fx.data = writeModel(t, fx.model, 1)
	return fx
}

func (fx *cacheFixture) opts() panelcache.Options {
	return panelcache.Options{Mode: panelcache.Cache, Dir: fx.dir, MinBytes: -1, Warn: func(s string) { fx.warnings = append(fx.warnings, s) }}
}

// install opens the model and installs its panels, checking them; the
// caller closes the model.
func (fx *cacheFixture) install(t *testing.T, o panelcache.Options) (*loaded, panelcache.Result) {
	t.Helper()
	fx.warnings = nil
	l := load(t, fx.model, fx.data)
	r := panelcache.Install(fx.p, l.f, l.mats, o)
	l.check(t, fx.p, r.Source != panelcache.SourceNone)
	if r.Warning != "" && (len(fx.warnings) != 1 || fx.warnings[0] != r.Warning) {
		t.Fatalf("warning %q, Warn was given %q", r.Warning, fx.warnings)
	}
	return l, r
}

func wantSource(t *testing.T, r panelcache.Result, want panelcache.Source, warned bool) {
	t.Helper()
	if r.Source != want || (r.Warning != "") != warned {
		t.Fatalf("source %q warning %q; want %q, warning %v", r.Source, r.Warning, want, warned)
	}
}

// TestPanelCacheRoundTrip builds a cache file, maps it in a second load,
// and checks both against packPanels and the file's layout; the mapping
// goes when the last matrix drops its panels, and dropping one (a layer a
// streamer takes over) leaves the others computing on theirs.
func TestPanelCacheRoundTrip(t *testing.T) {
	fx := newFixture(t)
	l, r := fx.install(t, fx.opts())
	wantSource(t, r, panelcache.SourceBuilt, false)
	panelBytes := int64(l.mats[0].PanelBytes() + l.mats[1].PanelBytes() + l.mats[2].PanelBytes())
	if l.mats[2].PanelBytes() <= len(l.mats[2].Data) {
		t.Fatalf("the Q4_K tensor has %d bytes of panels, want more than its %d", l.mats[2].PanelBytes(), len(l.mats[2].Data))
	}
	if r.Bytes != panelBytes {
		t.Fatalf("%d bytes of panels, want %d", r.Bytes, panelBytes)
	}
	st, err := os.Stat(r.Path)
	if err != nil || st.Size() != r.FileBytes || r.FileBytes < panelBytes {
		t.Fatalf("cache file %s: %v, size %v; Result says %d bytes for %d of panels", r.Path, err, st, r.FileBytes, panelBytes)
	}
	file, err := os.ReadFile(r.Path)
	if err != nil {
		t.Fatal(err)
	}
	for k, m := range l.mats {
		if m.PanelBytes() > 0 && !bytes.Contains(file, quant.PackedForTest(l.plain[k])) {
			t.Errorf("%s: its panels are not in the cache file", cacheTensors[k].name)
		}
	}
	l.close()
	if mapped(t, r.Path) {
		t.Fatalf("%s still mapped after every matrix dropped its panels", r.Path)
	}

	l, r2 := fx.install(t, fx.opts())
	defer l.close()
	wantSource(t, r2, panelcache.SourceHit, false)
	if r2.Path != r.Path || r2.Bytes != r.Bytes {
		t.Fatalf("hit %+v after build %+v", r2, r)
	}
	l.mats[0].DropPanels()
	if !mapped(t, r.Path) {
		t.Fatal("mapping gone while a matrix still computes on it")
	}
	if quant.PanelsForTest(l.mats[0]) != nil || quant.PanelsForTest(l.mats[1]) == nil || quant.PanelsForTest(l.mats[2]) == nil {
		t.Fatal("dropping a's panels dropped the wrong ones")
	}
	m := l.mats[0] // repacked again, in memory, at its next product
	quant.MatMul(fx.p, m, make([]float32, m.Cols), 1, make([]float32, m.Rows), nil)
	l.check(t, fx.p, true)
	if again := panelcache.Install(fx.p, l.f, l.mats, fx.opts()); again.Source != panelcache.SourceNone {
		t.Fatalf("installing repacked matrices again: %+v", again)
	}
	entries, _ := os.ReadDir(fx.dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp") {
			t.Errorf("temporary file %s left", e.Name())
		}
	}
}

// TestPanelCacheStale changes the model file under its cache file in the
// ways a file changes (a newer time; new content in place with the old
// time put back; a new file renamed over it): each rebuilds, and the
// panels are the new content's.
func TestPanelCacheStale(t *testing.T) {
	fx := newFixture(t)
	l, r := fx.install(t, fx.opts())
	wantSource(t, r, panelcache.SourceBuilt, false)
	l.close()
	for k, change := range []func(){
		func() {
			later := time.Now().Add(time.Hour)
			os.Chtimes(fx.model, later, later)
		},
		func() {
			st, _ := os.Stat(fx.model)
			fx.data = writeModel(t, fx.model, 2) // same size, same inode
			os.Chtimes(fx.model, st.ModTime(), st.ModTime())
		},
		func() {
			tmp := fx.model + ".new"
			fx.data = writeModel(t, tmp, 3)
			os.Rename(tmp, fx.model)
		},
	} {
		change()
		l, r := fx.install(t, fx.opts())
		l.close()
		if r.Source != panelcache.SourceBuilt || r.Warning != "" {
			t.Fatalf("change %d: %+v; want the cache rebuilt without a warning", k, r)
		}
		l, r = fx.install(t, fx.opts())
		l.close()
		wantSource(t, r, panelcache.SourceHit, false)
	}
	if entries, _ := os.ReadDir(fx.dir); len(entries) != 2 { // the file and its lock
		t.Errorf("cache directory holds %d files, want one cache file and its lock", len(entries))
	}
}

// TestPanelCacheCorrupt damages the cache file (panel bytes, header,
// truncated, not one at all): the load warns once, rebuilds it and
// computes right; where it cannot rebuild it repacks in memory.
func TestPanelCacheCorrupt(t *testing.T) {
	fx := newFixture(t)
	l, r := fx.install(t, fx.opts())
	l.close()
	path := r.Path
	for _, tc := range []struct {
		name   string
		damage func(b []byte) []byte
	}{
		{"panel byte", func(b []byte) []byte { b[len(b)-100] ^= 1; return b }},
		{"header byte", func(b []byte) []byte { b[70] ^= 0x40; return b }},
		{"magic", func(b []byte) []byte { copy(b, "XXXX"); return b }},
		{"truncated", func(b []byte) []byte { return b[:len(b)-1000] }},
		{"header only", func(b []byte) []byte { return b[:40] }},
		{"empty", func(b []byte) []byte { return nil }},
	} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, tc.damage(b), 0o644); err != nil {
			t.Fatal(err)
		}
		l, r := fx.install(t, fx.opts())
		l.close()
		if r.Source != panelcache.SourceBuilt || !strings.Contains(r.Warning, "rebuilt") {
			t.Fatalf("%s: %+v; want a warning and the cache rebuilt", tc.name, r)
		}
		l, r = fx.install(t, fx.opts())
		l.close()
		wantSource(t, r, panelcache.SourceHit, false)
	}
	// A directory where the cache file should be: nothing to map, nothing
	// to rename over it.
	os.Remove(path)
	os.Mkdir(path, 0o755)
	l, r = fx.install(t, fx.opts())
	l.close()
	wantSource(t, r, panelcache.SourceMemory, true)
}

// TestPanelCacheUnwritable points the cache where no directory can be made:
// the panels are repacked in memory with one warning.
func TestPanelCacheUnwritable(t *testing.T) {
	fx := newFixture(t)
	file := filepath.Join(t.TempDir(), "a-file")
	os.WriteFile(file, nil, 0o644)
	for _, dir := range []string{filepath.Join(file, "panels"), file} {
		o := fx.opts()
		o.Dir = dir
		l, r := fx.install(t, o)
		l.close()
		wantSource(t, r, panelcache.SourceMemory, true)
		if !strings.Contains(r.Warning, "repacking in memory") {
			t.Fatalf("warning %q", r.Warning)
		}
	}
}

// TestPanelCacheModes checks memory, off, the size floor and a CPU
// without panel kernels: no cache file in any of them.
func TestPanelCacheModes(t *testing.T) {
	fx := newFixture(t)
	for _, tc := range []struct {
		name string
		o    panelcache.Options
		want panelcache.Source
	}{
		{"memory", panelcache.Options{Mode: panelcache.Memory, Dir: fx.dir}, panelcache.SourceMemory},
		{"off", panelcache.Options{Mode: panelcache.Off, Dir: fx.dir}, panelcache.SourceNone},
		{"under the floor", panelcache.Options{Mode: panelcache.Cache, Dir: fx.dir}, panelcache.SourceMemory},
	} {
		l, r := fx.install(t, tc.o)
		l.close()
		if r.Source != tc.want || r.Warning != "" || r.Path != "" {
			t.Errorf("%s: %+v, want source %q and no file", tc.name, r, tc.want)
		}
	}
	quant.UseRepack(false)
	defer quant.UseRepack(true)
	l, r := fx.install(t, fx.opts())
	l.close()
	wantSource(t, r, panelcache.SourceNone, false)
	if _, err := os.Stat(fx.dir); err == nil {
		t.Errorf("cache directory made with no panels to put in it")
	}
}

// TestPanelCacheConcurrent has several loads (own files, own descriptors:
// to the lock they are processes) build the same cache at once: one
// builds, the others wait and map its file.
func TestPanelCacheConcurrent(t *testing.T) {
	fx := newFixture(t)
	const n = 4
	var wg sync.WaitGroup
	res := make([]panelcache.Result, n)
	ls := make([]*loaded, n)
	for i := range n {
		ls[i] = load(t, fx.model, fx.data)
	}
	o := fx.opts()
	o.Warn = nil
	for i := range n {
		// A pool runs one loop at a time: each loader has its own, as
		// each process would.
		p := par.New(2)
		t.Cleanup(p.Close)
		wg.Go(func() { res[i] = panelcache.Install(p, ls[i].f, ls[i].mats, o) })
	}
	wg.Wait()
	built := 0
	for i := range n {
		ls[i].check(t, fx.p, true)
		ls[i].close()
		if res[i].Warning != "" || res[i].Source != panelcache.SourceBuilt && res[i].Source != panelcache.SourceHit {
			t.Errorf("load %d: %+v", i, res[i])
		}
		if res[i].Source == panelcache.SourceBuilt {
			built++
		}
	}
	if built != 1 {
		t.Errorf("%d loads built the cache, want 1: %v", built, fmt.Sprint(res))
	}
}

// TestModelPanelCache loads a conformance model through model.Open and
// Model.Repack in each mode: the logits are the file layout's bit for bit,
// the second cached load is a hit, PanelStats says so, and Close unmaps
// the cache file.
func TestModelPanelCache(t *testing.T) {
	path := "../../shared/testdata/conformance/llama3-tiny-q4_0.gguf"
	if _, err := os.Stat(path); err != nil {
		t.Skipf("%s: %v", path, err)
	}
	quant.UseTestPanelKernel(t)
	dir := t.TempDir()
	logits := func(o panelcache.Options) ([]float32, panelcache.Result) {
		m, err := model.Open(path, 2)
		if err != nil {
			t.Fatal(err)
		}
		m.Panels = &o
		n := m.Repack()
		r := m.PanelStats()
		if n != r.Bytes || (n > 0) != (o.Mode != panelcache.Off) {
			t.Fatalf("%v: Repack %d bytes, stats %+v", o.Mode, n, r)
		}
		s, err := m.NewState(16)
		if err != nil {
			t.Fatal(err)
		}
		var out []float32
		for _, tok := range []int32{1, 450, 4996} {
			row := make([]float32, m.Config.Vocab)
			if err := s.Forward(model.Chain([]int32{tok})); err != nil {
				t.Fatal(err)
			}
			if err := s.Logits([]int{0}, row); err != nil {
				t.Fatal(err)
			}
			if err := s.CommitAll(); err != nil {
				t.Fatal(err)
			}
			out = append(out, row...)
		}
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		if r.Path != "" && mapped(t, r.Path) {
			t.Fatalf("%s mapped after Close", r.Path)
		}
		return out, r
	}
	want, r := logits(panelcache.Options{Mode: panelcache.Off})
	wantSource(t, r, panelcache.SourceNone, false)
	for _, tc := range []struct {
		mode panelcache.Mode
		want panelcache.Source
	}{{panelcache.Memory, panelcache.SourceMemory}, {panelcache.Cache, panelcache.SourceBuilt}, {panelcache.Cache, panelcache.SourceHit}} {
		got, r := logits(panelcache.Options{Mode: tc.mode, Dir: dir, MinBytes: -1})
		wantSource(t, r, tc.want, false)
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%v (%s): logit %d is %v, %v in the file's layout", tc.mode, r.Source, i, got[i], want[i])
			}
		}
	}
}
