// Package testutil holds the helpers several packages' tests share:
// finding and copying the shared conformance models, opening a model,
// writing a GGUF file in memory and running a decoder to n tokens. It is
// imported by tests only; packages below model (gguf, quant, model itself)
// cannot use it, since it imports model.
package testutil

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"shade/gguf"
	"shade/model"
)

// ConformanceDir is the shared conformance pack (../shared/testdata/conformance
// beside the repository), wherever the test runs from.
func ConformanceDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "shared", "testdata", "conformance")
}

// Conformance is the path of a model of the conformance pack; the test is
// skipped when the pack is not there.
func Conformance(t testing.TB, name string) string {
	t.Helper()
	path := filepath.Join(ConformanceDir(), name)
	if _, err := os.Stat(path); err != nil {
		t.Skipf("%s not present: the shared conformance pack is needed", path)
	}
	return path
}

// CopyConformance copies a conformance model into a temporary directory,
// for tests that write beside it (calibrations) or cut it.
func CopyConformance(t testing.TB, name string) string {
	t.Helper()
	data, err := os.ReadFile(Conformance(t, name))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// OpenModel opens a model file with two threads, closed when the test
// ends; the test is skipped when the file is not there.
func OpenModel(t testing.TB, path string) *model.Model {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		t.Skipf("%s not present: the shared conformance pack is needed", path)
	}
	m, err := model.Open(path, 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// GGUF writes a file in memory with write (which sets metadata and adds
// tensors; the writer is closed after it) and parses it back.
func GGUF(t testing.TB, write func(w *gguf.Writer) error) *gguf.File {
	t.Helper()
	var buf bytes.Buffer
	w := gguf.NewWriter(&buf)
	if err := write(w); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// Stepper is a decoder: Start feeds a prompt, Step appends one step's
// tokens (spec.Decoder).
type Stepper interface {
	Start(prompt []int32) error
	Step(out []int32) ([]int32, error)
}

// Decode runs d from prompt until it has produced n tokens and returns
// the first n.
func Decode(t testing.TB, d Stepper, prompt []int32, n int) []int32 {
	t.Helper()
	if err := d.Start(prompt); err != nil {
		t.Fatal(err)
	}
	var out []int32
	for len(out) < n {
		var err error
		if out, err = d.Step(out); err != nil {
			t.Fatal(err)
		}
	}
	return out[:n]
}

// ConformanceModel opens a model of the conformance pack (OpenModel).
func ConformanceModel(t testing.TB, name string) *model.Model {
	t.Helper()
	return OpenModel(t, Conformance(t, name))
}
