package panelcache

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"shade/gguf"
	"shade/quant"
)

// The cache against real matrices and kernels is tested in quant
// (panelcache_test.go there); these are the file's own checks.

func TestParseMode(t *testing.T) {
	for _, m := range []Mode{Cache, Memory, Off} {
		if got, err := ParseMode(m.String()); err != nil || got != m {
			t.Errorf("ParseMode(%q) = %v, %v", m.String(), got, err)
		}
	}
	for _, s := range []string{"", "Cache", "disk", "on"} {
		if _, err := ParseMode(s); err == nil {
			t.Errorf("ParseMode(%q) accepted", s)
		}
	}
}

func TestCachePath(t *testing.T) {
	dir := "/c"
	a, b := cachePath(dir, "/models/x y.gguf"), cachePath(dir, "/other/x y.gguf")
	if a == b || filepath.Dir(a) != dir || !strings.HasPrefix(filepath.Base(a), "x_y-") || !strings.HasSuffix(a, ".panels") {
		t.Errorf("cache paths %q and %q", a, b)
	}
	if cachePath(dir, "/models/x y.gguf") != a {
		t.Error("cache path not stable")
	}
	t.Setenv("SHADE_PANEL_CACHE", "/somewhere")
	if d := DefaultDir(); d != "/somewhere" {
		t.Errorf("DefaultDir with $SHADE_PANEL_CACHE = %q", d)
	}
}

// TestHeaderRoundTrip reads back a marshaled header, and refuses it with
// any byte changed, for another key, another size, or cut short.
func TestHeaderRoundTrip(t *testing.T) {
	h := &header{total: 3 * dataAlign, entries: []entry{
		{tensor: 2, typ: quant.Q4_0, rows: 16, cols: 64, off: dataAlign, size: 576, piece: 576, sum: 7},
		{tensor: 5, typ: quant.Q8_0, rows: 32, cols: 32, off: 2 * dataAlign, size: 1088, piece: 544, sum: 9},
	}}
	copy(h.key[:], "key of the model file.........")
	b := h.marshal()
	if len(b) != h.size() {
		t.Fatalf("%d header bytes, size says %d", len(b), h.size())
	}
	path := filepath.Join(t.TempDir(), "h")
	read := func(b []byte, size int64, key [32]byte) (*header, error) {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		return readHeader(f, size, key)
	}
	got, err := read(b, h.total, h.key)
	if err != nil || got.total != h.total || len(got.entries) != 2 || got.entries[1] != h.entries[1] {
		t.Fatalf("read back %+v, %v", got, err)
	}
	for i := range b {
		c := append([]byte(nil), b...)
		c[i] ^= 0x10
		if _, err := read(c, h.total, h.key); err == nil {
			t.Fatalf("byte %d changed: accepted", i)
		}
	}
	other := h.key
	other[0] ^= 1
	if _, err := read(b, h.total, other); !errors.Is(err, errStale) {
		t.Errorf("another key: %v, want errStale", err)
	}
	if _, err := read(b, h.total-1, h.key); err == nil {
		t.Error("a shorter file: accepted")
	}
	if _, err := read(b[:50], h.total, h.key); err == nil {
		t.Error("a cut header: accepted")
	}
}

// TestNoSpace fakes a full file system: the load repacks in memory and
// says why, and leaves no file behind.
func TestNoSpace(t *testing.T) {
	saved, savedStat := panelsInUse, statfs
	defer func() { panelsInUse, statfs = saved, savedStat }()
	panelsInUse = func() bool { return true }
	statfs = func(path string, st *unix.Statfs_t) error {
		err := unix.Statfs(path, st)
		st.Bavail = 1
		return err
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "m.gguf")
	fd, _ := os.Create(path)
	w := gguf.NewWriter(fd)
	w.Set("general.architecture", "test")
	w.AddTensor("w", quant.Q4_0, 64, 32)
	w.WriteHeader()
	rng := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 32*2*18)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	w.Write(data)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	fd.Close()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ti, _ := f.Tensor("w")
	m, _ := quant.NewMatrix(quant.Q4_0, 32, 64, f.TensorData(ti))
	m = quant.Repackable(m, nil)
	cache := filepath.Join(dir, "panels")
	r := Install(nil, f, []quant.Matrix{m}, Options{Dir: cache, MinBytes: -1})
	if r.Source != SourceMemory || !strings.Contains(r.Warning, "free") {
		t.Fatalf("%+v; want memory and a warning about free space", r)
	}
	left, _ := filepath.Glob(filepath.Join(cache, "*.panels"))
	tmp, _ := filepath.Glob(filepath.Join(cache, "*.tmp*"))
	if left = append(left, tmp...); len(left) != 0 { // the lock file may stay
		t.Errorf("left %v", left)
	}
	if m.Repacked() && !quant.PanelsInUse() {
		t.Error("repacked without panel kernels")
	}
}
