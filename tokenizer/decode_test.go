package tokenizer

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// streamAll feeds ids one at a time and checks each chunk is valid UTF-8.
func streamAll(t *testing.T, tk *Tokenizer, ids []int32) string {
	t.Helper()
	d := NewDecoder(tk)
	var sb strings.Builder
	for i, id := range ids {
		s := d.Add(id)
		if !utf8.ValidString(s) {
			t.Fatalf("Add(%d) (token %d of %d) returned invalid UTF-8 %q", id, i, len(ids), s)
		}
		sb.WriteString(s)
	}
	s := d.Flush()
	if !utf8.ValidString(s) {
		t.Fatalf("Flush returned invalid UTF-8 %q", s)
	}
	sb.WriteString(s)
	return sb.String()
}

// perByteValid is s with each byte that is not part of valid UTF-8 replaced by U+FFFD.
func perByteValid(s string) string {
	var sb strings.Builder
	for _, r := range s {
		sb.WriteRune(r)
	}
	return sb.String()
}

func TestDecoderSplitsNoCharacter(t *testing.T) {
	text := "Hello 😀 世界! Ünïcödé ☃ 𝄞 and 👩‍👩‍👧 — done, I'm sure it's 'quoted' .\n"
	for _, vocab := range []string{
		"conformance/stories260K.gguf", // 512 tokens: almost everything is byte fallback
		"tokenizer/ggml-vocab-llama-spm.gguf",
		"tokenizer/ggml-vocab-gpt-2.gguf",
		"tokenizer/ggml-vocab-llama3.gguf",
		"conformance/qwen2-tiny-q8_0.gguf",
	} {
		t.Run(vocab, func(t *testing.T) {
			tk := loadGGUF(t, vocab)
			for _, addSpecial := range []bool{false, true} {
				ids, err := tk.Encode(text, addSpecial, false)
				if err != nil {
					t.Fatal(err)
				}
				split := 0
				for _, id := range ids {
					if b := tk.TokenBytes(id); len(b) > 0 && !utf8.Valid(b) {
						split++
					}
				}
				if tk.Model() == "llama" && split == 0 {
					t.Errorf("no token of %v is a partial character; the test does not exercise byte fallback", ids)
				}
				if got, want := streamAll(t, tk, ids), tk.Decode(ids); got != want {
					t.Errorf("addSpecial=%v: streamed %q, Decode %q", addSpecial, got, want)
				}
			}
		})
	}
}

// TestDecoderRandomIDs streams random token sequences, including tokens that
// are lone bytes of a multi-byte character and the spaces and apostrophes the
// BPE clean-up works on, and compares with Decode.
func TestDecoderRandomIDs(t *testing.T) {
	for _, vocab := range []string{"tokenizer/ggml-vocab-llama-spm.gguf", "tokenizer/ggml-vocab-gpt-2.gguf", "conformance/qwen2-tiny-q8_0.gguf"} {
		t.Run(vocab, func(t *testing.T) {
			tk := loadGGUF(t, vocab)
			// Favour short tokens made of the characters the clean-up looks at.
			var hot []int32
			for id := range int32(tk.VocabSize()) {
				b := tk.TokenBytes(id)
				if len(b) <= 3 && (bytes.ContainsAny(b, " '?!.,sdmtrevl") || !utf8.Valid(b)) {
					hot = append(hot, id)
				}
			}
			t.Logf("%d hot tokens", len(hot))
			rng := rand.New(rand.NewPCG(7, 7))
			for range 3000 {
				ids := make([]int32, rng.IntN(12))
				for i := range ids {
					if rng.IntN(4) == 0 {
						ids[i] = rng.Int32N(int32(tk.VocabSize()))
					} else {
						ids[i] = hot[rng.IntN(len(hot))]
					}
				}
				if got, want := streamAll(t, tk, ids), perByteValid(tk.Decode(ids)); got != want {
					t.Fatalf("ids %v: streamed %q, Decode %q", ids, got, want)
				}
			}
		})
	}
}

// TestCleanSpacesChunks checks the Decoder's cut rule: for any text A and
// continuation C, with p the cut the Decoder chooses on A, cleaning A[:p] and
// A[p:]+C separately equals cleaning A+C.
func TestCleanSpacesChunks(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	d := &Decoder{t: &Tokenizer{cleanSpaces: true}}
	for i := range 600000 {
		alpha := []byte(" '?!.,sdmtrevlxa")
		if i%2 == 1 {
			alpha = []byte(" ' 'reslx") // dense in " ' " and " 're"
		}
		b := make([]byte, rng.IntN(14))
		for i := range b {
			b[i] = alpha[rng.IntN(len(alpha))]
		}
		k := rng.IntN(len(b) + 1) // A = b[:k], C = b[k:]
		d.pending = append(d.pending[:0], b[:k]...)
		p := d.cut()
		whole := string(cleanSpaces(bytes.Clone(b)))
		parts := string(cleanSpaces(bytes.Clone(b[:p]))) + string(cleanSpaces(bytes.Clone(b[p:])))
		if whole != parts {
			t.Fatalf("%q + %q cut at %d: whole %q, parts %q", b[:k], b[k:], p, whole, parts)
		}
	}
}

func TestCleanSpaces(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{" ?", "?"},
		{"a , b . c ! d ?", "a, b. c! d?"},
		{"a ' b", "a'b"},
		{"a ' ' b", "a'' b"},
		{"I 'm you 're we 've it 's he 'd 'll 't", "I'm you're we've it's he 'd 'll 't"},
		{"  ?", " ?"},
	} {
		if got := string(cleanSpaces([]byte(c.in))); got != c.want {
			t.Errorf("cleanSpaces(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestDecodeLeadingSpace(t *testing.T) {
	tk := loadGGUF(t, "tokenizer/ggml-vocab-llama-spm.gguf")
	ids, err := tk.Encode("Hello world", false, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := tk.Decode(ids); got != "Hello world" {
		t.Errorf("Decode without BOS = %q, want %q", got, "Hello world")
	}
	// After BOS llama.cpp keeps the space: BOS uses up the one-space strip.
	ids, _ = tk.Encode("Hello world", true, false)
	if got := tk.Decode(ids); got != " Hello world" {
		t.Errorf("Decode with BOS = %q, want %q", got, " Hello world")
	}
	if got := streamAll(t, tk, ids); got != " Hello world" {
		t.Errorf("streamed with BOS = %q, want %q", got, " Hello world")
	}
}

func TestDecodeControlAndInvalid(t *testing.T) {
	tk := loadGGUF(t, "tokenizer/ggml-vocab-llama3.gguf")
	eot := int32(128009)
	if got := tk.Decode([]int32{9906, eot, -1, 1 << 30}); got != "Hello" {
		t.Errorf("Decode = %q, want control and out-of-range ids to give nothing", got)
	}
	if got := string(tk.TokenBytes(eot)); got != "<|eot_id|>" {
		t.Errorf("TokenBytes(eot) = %q", got)
	}
	if tk.TokenBytes(-1) != nil || tk.Piece(1<<30) != "" {
		t.Error("out-of-range ids should give nothing")
	}
	if got := tk.Piece(9906); got != "Hello" {
		t.Errorf("Piece(9906) = %q", got)
	}
	if got := tk.Piece(1917); got != "Ġworld" {
		t.Errorf("Piece(1917) = %q", got)
	}
}

func TestDecodeSpecial(t *testing.T) {
	tk := loadGGUF(t, "tokenizer/ggml-vocab-llama3.gguf")
	ids := []int32{128000, 9906, 1917, 128009}
	want := "<|begin_of_text|>Hello world<|eot_id|>"
	if got := tk.DecodeSpecial(ids); got != want {
		t.Errorf("DecodeSpecial = %q, want %q", got, want)
	}
	d := NewDecoder(tk)
	d.Special = true
	var sb strings.Builder
	for _, id := range ids {
		sb.WriteString(d.Add(id))
	}
	sb.WriteString(d.Flush())
	if sb.String() != want {
		t.Errorf("streamed with Special = %q, want %q", sb.String(), want)
	}
	if got := tk.Decode(ids); got != "Hello world" {
		t.Errorf("Decode = %q", got)
	}
}

// A continuation's first token keeps its leading space (llama.cpp's
// token_to_piece), so that the prompt's text and the continuation's read
// as one; a text of its own loses it (llama_detokenize).
func TestDecoderContinuation(t *testing.T) {
	tk := loadGGUF(t, "tokenizer/ggml-vocab-llama-spm.gguf")
	prompt, err := tk.Encode("Once upon a", true, false)
	if err != nil {
		t.Fatal(err)
	}
	whole, err := tk.Encode("Once upon a time there", true, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(whole) <= len(prompt) {
		t.Fatalf("tokens %v then %v", prompt, whole)
	}
	rest := whole[len(prompt):]
	for _, tc := range []struct {
		continuation bool
		want         string
	}{{true, " time there"}, {false, "time there"}} {
		d := NewDecoder(tk)
		d.Continuation = tc.continuation
		var sb strings.Builder
		for _, id := range rest {
			sb.WriteString(d.Add(id))
		}
		sb.WriteString(d.Flush())
		if sb.String() != tc.want {
			t.Errorf("continuation %v: %q, want %q", tc.continuation, sb.String(), tc.want)
		}
	}
	if got := tk.Decode(prompt) + " time there"; got != tk.Decode(whole) {
		t.Errorf("prompt + continuation %q, the whole text %q", got, tk.Decode(whole))
	}
}
