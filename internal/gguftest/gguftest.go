// Package gguftest makes edited copies of GGUF files for tests: a model
// with one tensor's values replaced (all NaN, say) or metadata changed,
// built at test time from a shared file instead of being committed.
package gguftest

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"

	"shade/gguf"
)

// Rewrite copies src into a new file in t.TempDir() named name, with the
// metadata in meta set (added or replaced) and each tensor's bytes passed
// through edit (nil: unchanged; edit may change the copy it is given). It
// returns the new file's path.
func Rewrite(t testing.TB, src, name string, meta map[string]any, edit func(ti *gguf.TensorInfo, data []byte)) string {
	t.Helper()
	f, err := gguf.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	path := filepath.Join(t.TempDir(), name)
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	w := gguf.NewWriter(out)
	for _, kv := range f.Meta.KVs {
		if _, ok := meta[kv.Key]; !ok {
			w.Set(kv.Key, kv.Value)
		}
	}
	for k, v := range meta {
		w.Set(k, v)
	}
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		if err := w.AddTensor(ti.Name, ti.Type, ti.Dims...); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.WriteHeader(); err != nil {
		t.Fatal(err)
	}
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		data := append([]byte(nil), f.TensorData(ti)...)
		if edit != nil {
			edit(ti, data)
		}
		if _, err := w.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// FillF32 returns an edit for Rewrite that sets every value of the F32
// tensor named name to v.
func FillF32(name string, v float32) func(*gguf.TensorInfo, []byte) {
	return func(ti *gguf.TensorInfo, data []byte) {
		if ti.Name != name {
			return
		}
		bits := math.Float32bits(v)
		for i := 0; i+4 <= len(data); i += 4 {
			binary.LittleEndian.PutUint32(data[i:], bits)
		}
	}
}
