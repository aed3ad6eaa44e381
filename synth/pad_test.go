package synth

import (
	"testing"

	"shade/tokenizer"
)

func TestPadVocab(t *testing.T) {
	v, err := DemoVocab()
	if err != nil {
		t.Fatal(err)
	}
	p, err := PadVocab(v, 2000)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.FromGGUF(p)
	if err != nil {
		t.Fatal(err)
	}
	orig, _ := tokenizer.FromGGUF(v)
	if tok.VocabSize() != 2000 {
		t.Fatalf("padded vocabulary has %d tokens", tok.VocabSize())
	}
	text := "Once upon a time, a cat sat."
	a, _ := tok.Encode(text, true, false)
	b, _ := orig.Encode(text, true, false)
	if len(a) != len(b) {
		t.Fatalf("padding changed the encoding: %v vs %v", a, b)
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("padding changed the encoding: %v vs %v", a, b)
		}
	}
	if same, _ := PadVocab(v, 10); same != v {
		t.Error("a vocabulary already large enough was rebuilt")
	}
}
