package synth

import (
	"path/filepath"
	"testing"

	"shade/quant"
)

// TestWriteLegacyTypes writes the tiny shapes in the legacy 32-value types
// and IQ4_NL and checks the files as TestWriteTinyShapes does.
func TestWriteLegacyTypes(t *testing.T) {
	vocab := openVocab(t)
	dir := t.TempDir()
	for _, s := range tinyShapes() {
		for _, typ := range []quant.Type{quant.Q4_1, quant.Q5_0, quant.Q5_1, quant.IQ4_NL} {
			path := filepath.Join(dir, s.Name+"-"+typ.String()+".gguf")
			if err := WriteFile(path, Options{Shape: s, Type: typ, Vocab: vocab, Seed: 7}); err != nil {
				t.Fatalf("%s %v: %v", s.Name, typ, err)
			}
			checkFile(t, path, s, typ, vocab)
		}
	}
}
