package synth_test

import (
	"bytes"
	"fmt"

	"shade/gguf"
	"shade/synth"
)

func ExampleWrite() {
	o, err := synth.Demo() // tiny llama, Q8_0, seed 1, the built-in 512-token vocabulary
	if err != nil {
		panic(err)
	}
	var buf bytes.Buffer
	if err := synth.Write(&buf, o); err != nil {
		panic(err)
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		panic(err)
	}
	emb, _ := f.Tensor("token_embd.weight")
	fmt.Println(len(f.Tensors), "tensors;", emb.Name, emb.Type, emb.Dims)
	// Output: 21 tensors; token_embd.weight Q8_0 [64 512]
}

func ExampleLookupShape() {
	s, err := synth.LookupShape("llama3-8b")
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s: %s, %d layers, dim %d, %.2fB parameters with its own vocabulary\n",
		s.Name, s.Arch, s.Layers, s.Dim, float64(s.Params(s.Vocab))/1e9)
	// Output: llama3-8b: llama, 32 layers, dim 4096, 8.03B parameters with its own vocabulary
}
