package synth

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"shade/gguf"
	"shade/quant"
)

// llamaQuantize is llama.cpp's quantizer in the shared test tree.
const llamaQuantize = "../../shared/llama.cpp/bin/llama-quantize"

// TestQuantizeMatchesLlamaQuantize writes an F32 model, has llama-quantize
// (--pure, no importance matrix: its reference quantizers) make Q3_K and
// Q5_K files of it, and requires quant.Quantize to give every block's bytes
// of every matrix. Skipped without the binary.
func TestQuantizeMatchesLlamaQuantize(t *testing.T) {
	bin, err := filepath.Abs(llamaQuantize)
	if err == nil {
		_, err = os.Stat(bin)
	}
	if err != nil {
		t.Skipf("llama-quantize not available: %v", err)
	}
	vocab := openVocab(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "f32.gguf")
	sh := tiny256
	sh.FFN = 768
	if err := WriteFile(src, Options{Shape: sh, Type: quant.F32, Vocab: vocab, Seed: 7}); err != nil {
		t.Fatal(err)
	}
	f32, err := gguf.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f32.Close()
	for _, typ := range []quant.Type{quant.Q3_K, quant.Q5_K, quant.Q2_K, quant.IQ4_XS, quant.Q4_1, quant.Q5_0, quant.Q5_1, quant.IQ4_NL, quant.Q4_0, quant.Q8_0, quant.Q4_K, quant.Q6_K} {
		dst := filepath.Join(dir, typ.String()+".gguf")
		if out, err := exec.Command(bin, "--pure", src, dst, typ.String()).CombinedOutput(); err != nil {
			t.Fatalf("llama-quantize %v: %v\n%s", typ, err, out)
		}
		q, err := gguf.Open(dst)
		if err != nil {
			t.Fatal(err)
		}
		matrices, bad := 0, 0
		for i := range q.Tensors {
			ti := &q.Tensors[i]
			if ti.Type != typ {
				continue
			}
			matrices++
			si, ok := f32.Tensor(ti.Name)
			if !ok {
				t.Fatalf("%s not in the F32 file", ti.Name)
			}
			x := make([]float32, ti.Elements())
			if err := quant.Dequantize(quant.F32, f32.TensorData(si), x); err != nil {
				t.Fatal(err)
			}
			want := q.TensorData(ti)
			got := make([]byte, len(want))
			if err := quant.Quantize(typ, x, got); err != nil {
				t.Fatal(err)
			}
			bs := typ.BlockBytes()
			for b := 0; b < len(got)/bs; b++ {
				if string(got[b*bs:(b+1)*bs]) != string(want[b*bs:(b+1)*bs]) {
					if bad++; bad <= 3 {
						t.Errorf("%v %s: block %d is not llama-quantize's", typ, ti.Name, b)
					}
				}
			}
		}
		q.Close()
		if matrices == 0 {
			t.Errorf("%v: llama-quantize wrote no %v matrix", typ, typ)
		}
		if bad > 0 {
			t.Errorf("%v: %d blocks differ", typ, bad)
		}
	}
}
