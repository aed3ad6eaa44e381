package tokenizer_test

import (
	"fmt"
	"log"

	"shade/gguf"
	"shade/tokenizer"
)

func ExampleFromGGUF() {
	f, err := gguf.Open("model.gguf")
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	tk, err := tokenizer.FromGGUF(f)
	if err != nil {
		log.Fatal(err)
	}
	ids, err := tk.Encode("The quick brown fox", true, false)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(ids, tk.Decode(ids))
}

func ExampleNewDecoder() {
	// A toy SentencePiece vocab: control tokens, the 256 byte-fallback
	// tokens, and the pieces that merge into "▁hi".
	tokens := []string{"<unk>", "<s>", "</s>"}
	types := []tokenizer.TokenType{tokenizer.TypeUnknown, tokenizer.TypeControl, tokenizer.TypeControl}
	for b := range 256 {
		tokens = append(tokens, fmt.Sprintf("<0x%02X>", b))
		types = append(types, tokenizer.TypeByte)
	}
	for _, s := range []string{"▁", "h", "i", "▁h", "▁hi"} {
		tokens = append(tokens, s)
		types = append(types, tokenizer.TypeNormal)
	}
	tk, err := tokenizer.New(tokenizer.Vocab{Model: "llama", Tokens: tokens, Types: types})
	if err != nil {
		log.Fatal(err)
	}

	ids, err := tk.Encode("hi hi 😀", false, false)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(ids)

	// The emoji has no token: it arrives as four byte tokens, and the
	// decoder holds the bytes back until the character is complete.
	d := tokenizer.NewDecoder(tk)
	for _, id := range ids {
		fmt.Printf("%q ", d.Add(id))
	}
	fmt.Printf("%q\n", d.Flush())
	// Output:
	// [263 263 259 243 162 155 131]
	// "hi" " hi" " " "" "" "" "😀" ""
}
