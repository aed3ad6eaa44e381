// Package testutil holds the helpers several packages' tests share:
// finding and copying the shared conformance models, opening a model,
// writing a GGUF file in memory, running a decoder to n tokens and testing
// the distribution of its first token. It is
// imported by tests only; packages below model (gguf, quant, model itself)
// cannot use it, since it imports model.
package testutil

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"shade/cost"
	"shade/gguf"
	"shade/model"
	"shade/sample"
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

// FirstTokenDistribution is the probability of each token under p at the
// first position after prompt, as the target's own sampler gives it.
func FirstTokenDistribution(t testing.TB, target *model.Model, p sample.Params, prompt []int32) []float64 {
	t.Helper()
	st, err := target.NewState(64)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Forward(model.Chain(prompt)); err != nil {
		t.Fatal(err)
	}
	logits := make([]float32, target.Config.Vocab)
	if err := st.Logits([]int{len(prompt) - 1}, logits); err != nil {
		t.Fatal(err)
	}
	sm, err := sample.New(p)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float64, target.Config.Vocab)
	for _, c := range sm.Distribution(logits) {
		want[c.ID] = float64(c.P)
	}
	return want
}

// FirstTokenCounts starts d from prompt n times and counts the first
// token each first step produces, over a vocabulary of vocab tokens.
func FirstTokenCounts(t testing.TB, d Stepper, prompt []int32, n, vocab int) []float64 {
	t.Helper()
	counts := make([]float64, vocab)
	for range n {
		if err := d.Start(prompt); err != nil {
			t.Fatal(err)
		}
		out, err := d.Step(nil)
		if err != nil {
			t.Fatal(err)
		}
		counts[out[0]]++
	}
	return counts
}

// ChiSquare is the chi-square statistic of counts of n draws against the
// probabilities p and its degrees of freedom, tokens expected fewer than
// 5 times pooled into one bin.
func ChiSquare(counts, p []float64, n int) (float64, int) {
	var chi2, poolObs, poolExp float64
	bins := 0
	for i, pi := range p {
		exp := pi * float64(n)
		if exp < 5 {
			poolObs += counts[i]
			poolExp += exp
			continue
		}
		d := counts[i] - exp
		chi2 += d * d / exp
		bins++
	}
	if poolExp > 0 {
		d := poolObs - poolExp
		chi2 += d * d / math.Max(poolExp, 1)
		bins++
	}
	return chi2, bins - 1
}

// ChiSquareCritical is the 0.999 quantile of the chi-square distribution
// with df degrees of freedom (Wilson–Hilferty).
func ChiSquareCritical(df int) float64 {
	k := float64(df)
	z := 3.090
	x := 1 - 2/(9*k) + z*math.Sqrt(2/(9*k))
	return k * x * x * x
}

// ToyCost is a cost model where a verify pass costs compute per row on
// every layer plus, for its streamed layers, a read of io seconds paid
// once; a draft pass costs draft seconds for one row, four times that for 64.
func ToyCost(layers, streamed int, io, perRow, draft float64) *cost.Model {
	m := &cost.Model{
		Batches: []int{1, 64}, Layers: layers, LayerBytes: 1 << 20, DiskBps: float64(1<<20) / max(io, 1e-12),
		DraftPass:   []float64{draft, 4 * draft},
		TargetLayer: []float64{perRow, 64 * perRow},
		TargetHead:  []float64{perRow, 8 * perRow},
		Direct:      true, StreamedLayers: streamed,
	}
	if io == 0 {
		m.DiskBps = 0
	}
	return m
}
