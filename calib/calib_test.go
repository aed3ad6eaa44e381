package calib

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type sample struct {
	A float64 `json:"a"`
	B []int   `json:"b"`
}

func TestSaveLoad(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "m.gguf")
	os.WriteFile(model, []byte("GGUF fake model bytes"), 0o644)
	var got sample
	if ok, err := Load(model, "cost", &got); ok || err != nil {
		t.Fatalf("Load before Save = %v, %v", ok, err)
	}
	want := sample{A: 1.5, B: []int{1, 2}}
	path, err := Save(model, "cost", want)
	if err != nil {
		t.Fatal(err)
	}
	if path != Path(model, "cost") {
		t.Errorf("saved to %s", path)
	}
	if _, err := Save(model, "cost", sample{A: 2.5}); err != nil { // replaces, same key
		t.Fatal(err)
	}
	if ok, err := Load(model, "cost", &got); !ok || err != nil || got.A != 2.5 {
		t.Fatalf("Load = %v, %v, %+v", ok, err, got)
	}
	f, err := readFile(path)
	if err != nil || len(f.Entries) != 1 {
		t.Fatalf("entries: %v, %v", f, err)
	}
	// Another model file (different bytes) has no entry.
	os.WriteFile(model, []byte("GGUF other bytes"), 0o644)
	if ok, err := Load(model, "cost", &got); ok || err != nil {
		t.Errorf("Load for a changed model = %v, %v", ok, err)
	}
	// A corrupt file is an error, not a panic.
	os.WriteFile(path, []byte("{not json"), 0o644)
	if _, err := Load(model, "cost", &got); err == nil {
		t.Error("corrupt calibration file accepted")
	}
	if _, err := Load(filepath.Join(dir, "missing.gguf"), "cost", &got); err == nil {
		t.Error("missing model accepted")
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"kind":"cost","entries":[{"key":{"model":"1:ab","cpu":"x"},"value":{"a":1}}]}`))
	f.Add([]byte(`{"entries":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fl, err := Parse(data, "fuzz")
		if err != nil {
			return
		}
		for _, e := range fl.Entries {
			var s sample
			_ = e.Key.String()
			_ = jsonUnmarshal(e.Value, &s)
		}
	})
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// TestKernelFreeKinds checks that a timing kind's entry is keyed by the
// kernel set and a kernel-free kind's is not, and that an unknown kind is
// refused rather than keyed some way.
func TestKernelFreeKinds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := os.WriteFile(path, []byte("GGUF model bytes"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		kind    string
		kernels bool
	}{{Cost, true}, {Contention, true}, {Pruner, false}, {Acceptance, false}} {
		if _, err := Save(path, tc.kind, 1); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(Path(path, tc.kind))
		if err != nil {
			t.Fatal(err)
		}
		f, err := Parse(data, tc.kind)
		if err != nil {
			t.Fatal(err)
		}
		if got := f.Entries[0].Key.Kernels != "" && f.Entries[0].Key.KernelRev != ""; got != tc.kernels {
			t.Errorf("%s: key %+v names the kernels and their revision: %v, want %v", tc.kind, f.Entries[0].Key, got, tc.kernels)
		}
		var v int
		if ok, err := Load(path, tc.kind, &v); !ok || err != nil || v != 1 {
			t.Errorf("%s: Load = %v, %v, value %d", tc.kind, ok, err, v)
		}
	}
	if _, err := Save(path, "bogus", 1); err == nil || !strings.Contains(err.Error(), "unknown kind") {
		t.Errorf("Save of an unknown kind: %v", err)
	}
	var v int
	if _, err := Load(path, "bogus", &v); err == nil {
		t.Error("Load of an unknown kind accepted")
	}
	if len(Kinds()) != 4 {
		t.Errorf("kinds %v", Kinds())
	}
}

// TestStaleKernels checks that a timing measured by another build's
// kernels (same model, CPU and kernel set, another revision) is not loaded
// and is reported as stale, until this build measures again.
func TestStaleKernels(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := os.WriteFile(path, []byte("GGUF model bytes"), 0o644); err != nil {
		t.Fatal(err)
	}
	if stale, err := Stale(path, Cost); stale || err != nil {
		t.Fatalf("Stale with no file = %v, %v", stale, err)
	}
	for _, kind := range []string{Cost, Pruner} {
		if _, err := Save(path, kind, 1); err != nil {
			t.Fatal(err)
		}
		// As an earlier build would have left it.
		data, err := os.ReadFile(Path(path, kind))
		if err != nil {
			t.Fatal(err)
		}
		f, err := Parse(data, kind)
		if err != nil {
			t.Fatal(err)
		}
		if kind == Cost {
			f.Entries[0].Key.KernelRev = "0123456789abcdef"
		}
		out, _ := json.Marshal(f)
		if err := os.WriteFile(Path(path, kind), out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var v int
	if ok, err := Load(path, Cost, &v); ok || err != nil {
		t.Errorf("Load of another build's timing = %v, %v", ok, err)
	}
	if stale, err := Stale(path, Cost); !stale || err != nil {
		t.Errorf("Stale = %v, %v; want true", stale, err)
	}
	// A kernel-free kind never goes stale with the kernels.
	if ok, err := Load(path, Pruner, &v); !ok || err != nil {
		t.Errorf("Load of a kernel-free kind = %v, %v", ok, err)
	}
	if stale, err := Stale(path, Pruner); stale || err != nil {
		t.Errorf("Stale of a kernel-free kind = %v, %v", stale, err)
	}
	// Measured again by this build: loaded, not stale, the old entry kept.
	if _, err := Save(path, Cost, 2); err != nil {
		t.Fatal(err)
	}
	if ok, err := Load(path, Cost, &v); !ok || err != nil || v != 2 {
		t.Errorf("Load after measuring again = %v, %v, %d", ok, err, v)
	}
	if stale, err := Stale(path, Cost); stale || err != nil {
		t.Errorf("Stale after measuring again = %v, %v", stale, err)
	}
}
