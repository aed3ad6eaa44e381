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

func ExampleDraftOf() {
	o, err := synth.Demo()
	if err != nil {
		panic(err)
	}
	o.TailFrom, o.TailScale = 1, 0.1 // layer 1 adds a tenth of what it would
	var target bytes.Buffer
	if err := synth.Write(&target, o); err != nil {
		panic(err)
	}
	tf, err := gguf.Parse(target.Bytes())
	if err != nil {
		panic(err)
	}
	var draft bytes.Buffer
	if err := synth.DraftOf(&draft, tf, 1); err != nil {
		panic(err)
	}
	df, err := gguf.Parse(draft.Bytes())
	if err != nil {
		panic(err)
	}
	name, _ := df.Meta.String("general.name")
	layers, _ := df.Meta.Int("llama.block_count")
	fmt.Printf("%s\n%d layer, %d tensors of %d\n", name, layers, len(df.Tensors), len(tf.Tensors))
	// Output:
	// tiny (synthetic, random weights; layers 1+ scaled by 0.1) (self-speculative draft: first 1 of 2 layers)
	// 1 layer, 12 tensors of 21
}
