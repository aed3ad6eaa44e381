package tokenizer

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"shade/gguf"
	"shade/internal/testutil"
)

// byteLevelTokens returns the 256 GPT-2 byte characters as tokens, in byte order.
func byteLevelTokens() []string {
	toks := make([]string, 256)
	for b := range toks {
		toks[b] = byteText[b]
	}
	return toks
}

// smallBPE is a tiny byte-level vocab: every byte, a few merges, two control tokens.
func smallBPE(pre string) Vocab {
	toks := append(byteLevelTokens(), "Ġt", "he", "Ġthe", "<|endoftext|>", "<|im_end|>")
	types := make([]TokenType, len(toks))
	for i := range types {
		types[i] = TypeNormal
	}
	types[len(toks)-2], types[len(toks)-1] = TypeControl, TypeControl
	return Vocab{
		Model: "gpt2", Pre: pre, Tokens: toks, Types: types,
		Merges: []string{"Ġ t", "h e", "Ġt he"},
		BOS:    new(uint32(259)), EOS: new(uint32(259)),
	}
}

// smallSPM is a tiny SentencePiece vocab with byte fallback.
func smallSPM() Vocab {
	toks := []string{"<unk>", "<s>", "</s>"}
	types := []TokenType{TypeUnknown, TypeControl, TypeControl}
	for b := range 256 {
		toks = append(toks, fmt.Sprintf("<0x%02X>", b))
		types = append(types, TypeByte)
	}
	for _, s := range []string{"▁", "a", "b", "c", "▁a", "ab", "▁ab", "bc", "▁abc", "中", "文"} {
		toks = append(toks, s)
		types = append(types, TypeNormal)
	}
	scores := make([]float32, len(toks))
	for i := range scores {
		scores[i] = -float32(i)
	}
	return Vocab{Model: "llama", Tokens: toks, Types: types, Scores: scores}
}

func mustNew(t *testing.T, v Vocab) *Tokenizer {
	t.Helper()
	tk, err := New(v)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func TestSmallSPM(t *testing.T) {
	tk := mustNew(t, smallSPM())
	if !tk.AddBOS() || tk.AddEOS() || tk.BOS() != 1 || tk.EOS() != 2 || tk.UNK() != 0 {
		t.Errorf("SPM defaults: addBOS %v addEOS %v bos %d eos %d unk %d", tk.AddBOS(), tk.AddEOS(), tk.BOS(), tk.EOS(), tk.UNK())
	}
	id := func(s string) int32 { i, _ := tk.Lookup(s); return i }
	got, err := tk.Encode("abc ab€", true, false)
	if err != nil {
		t.Fatal(err)
	}
	// "▁abc▁ab€": higher scores (lower ids here) merge first, ties leftmost; € falls back to bytes.
	want := []int32{1, id("▁abc"), id("▁ab"), id("<0xE2>"), id("<0x82>"), id("<0xAC>")}
	if !slices.Equal(got, want) {
		t.Errorf("Encode = %v, want %v", got, want)
	}
	if s := tk.Decode(got); s != " abc ab€" {
		t.Errorf("Decode = %q", s)
	}
	if s := tk.Decode(got[1:]); s != "abc ab€" {
		t.Errorf("Decode without BOS = %q", s)
	}
}

func TestSpecialTokens(t *testing.T) {
	tk := mustNew(t, smallBPE("gpt-2"))
	eot, _ := tk.Lookup("<|endoftext|>")
	imEnd, _ := tk.Lookup("<|im_end|>")
	text := "the<|im_end|> the<|endoftext|>"
	parsed, err := tk.Encode(text, false, true)
	if err != nil {
		t.Fatal(err)
	}
	the, _ := tk.Lookup("Ġthe")
	he, _ := tk.Lookup("he")
	if want := []int32{'t', he, imEnd, the, eot}; !slices.Equal(parsed, want) {
		t.Errorf("parseSpecial: got %v, want %v", parsed, want)
	}
	plain, _ := tk.Encode(text, false, false)
	if slices.Contains(plain, imEnd) || slices.Contains(plain, eot) {
		t.Errorf("without parseSpecial: %v contains special tokens", plain)
	}
	if got := tk.Decode(parsed); got != "the the" {
		t.Errorf("Decode = %q, want control tokens dropped", got)
	}
	var raw []byte
	for _, id := range plain {
		raw = append(raw, tk.TokenBytes(id)...)
	}
	if string(raw) != text {
		t.Errorf("pieces of the unparsed text give %q", raw)
	}
	// Both are end of generation ("<|endoftext|>" is also EOS here).
	if !tk.IsEOG(eot) || !tk.IsEOG(imEnd) || tk.IsEOG(the) || tk.IsEOG(-1) {
		t.Errorf("IsEOG: eot %v im_end %v the %v", tk.IsEOG(eot), tk.IsEOG(imEnd), tk.IsEOG(the))
	}
	if tk.EOT() != imEnd { // first in llama.cpp's list of end-of-turn texts
		t.Errorf("EOT = %d, want %d", tk.EOT(), imEnd)
	}
	// gpt2 with pre "gpt-2" does not add BOS unless the file says so.
	if tk.AddBOS() {
		t.Error("gpt-2 vocab adds BOS by default")
	}
	if ids, _ := tk.Encode("x", true, false); len(ids) != 1 {
		t.Errorf("Encode with addSpecial = %v, want no BOS", ids)
	}
	v := smallBPE("gpt-2")
	v.AddBOS, v.AddEOS = new(true), new(true)
	tk2 := mustNew(t, v)
	if ids, _ := tk2.Encode("x", true, false); !slices.Equal(ids, []int32{259, 'x', 259}) {
		t.Errorf("Encode with add_bos/add_eos = %v", ids)
	}
	if ids, _ := tk2.Encode("", true, false); !slices.Equal(ids, []int32{259, 259}) {
		t.Errorf("Encode(\"\") with add_bos/add_eos = %v", ids)
	}
}

// Known llama.cpp tokenizations with special tokens.
func TestSpecialTokensReal(t *testing.T) {
	t.Run("llama3", func(t *testing.T) {
		tk := loadGGUF(t, "tokenizer/ggml-vocab-llama3.gguf")
		ids, err := tk.Encode("<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>", true, true)
		if err != nil {
			t.Fatal(err)
		}
		if want := []int32{128000, 128006, 882, 128007, 271, 13347, 128009}; !slices.Equal(ids, want) {
			t.Errorf("got %v, want %v", ids, want)
		}
		for _, c := range []struct {
			id  int32
			eog bool
		}{{128009, true}, {128008, true}, {128001, true}, {128000, false}, {128006, false}, {13347, false}} {
			if tk.IsEOG(c.id) != c.eog {
				t.Errorf("IsEOG(%d %q) = %v", c.id, tk.Piece(c.id), !c.eog)
			}
		}
		if tk.EOS() != 128009 || tk.EOT() != 128009 || tk.EOM() != 128008 || tk.BOS() != 128000 || !tk.AddBOS() {
			t.Errorf("bos %d eos %d eot %d eom %d addBOS %v", tk.BOS(), tk.EOS(), tk.EOT(), tk.EOM(), tk.AddBOS())
		}
	})
	t.Run("phi-3", func(t *testing.T) {
		tk := loadGGUF(t, "tokenizer/ggml-vocab-phi-3.gguf")
		// llama.cpp's Phi-3 attributes: special tokens swallow the whitespace after them.
		ids, err := tk.Encode("<|user|>\nHello<|end|>\n<|assistant|>", true, true)
		if err != nil {
			t.Fatal(err)
		}
		if want := []int32{1, 32010, 15043, 32007, 32001}; !slices.Equal(ids, want) {
			t.Errorf("got %v, want %v", ids, want)
		}
		if tk.EOT() != 32007 || !tk.IsEOG(32007) || !tk.IsEOG(32000) || !tk.IsEOG(2) || tk.IsEOG(32010) {
			t.Errorf("EOT %d, IsEOG(<|end|>) %v, IsEOG(<|endoftext|>) %v", tk.EOT(), tk.IsEOG(32007), tk.IsEOG(32000))
		}
	})
	t.Run("spm", func(t *testing.T) {
		tk := loadGGUF(t, "tokenizer/ggml-vocab-llama-spm.gguf")
		ids, _ := tk.Encode("Hello <s> x", true, true)
		// After a special token the text gets the space prefix again.
		if want := []int32{1, 15043, 29871, 1, 29871, 921}; !slices.Equal(ids, want) {
			t.Errorf("got %v, want %v", ids, want)
		}
		if !tk.IsEOG(2) || tk.IsEOG(1) {
			t.Error("IsEOG: </s> should end generation, <s> not")
		}
	})
}

func TestInvalidUTF8(t *testing.T) {
	for _, tk := range []*Tokenizer{mustNew(t, smallSPM()), mustNew(t, smallBPE("llama-bpe"))} {
		for _, c := range []struct {
			in  string
			off int
		}{{"ab\xffc", 2}, {"中\xe4\xb8", 3}, {"\xc0\x80", 0}, {"ok \xed\xa0\x80", 3}} {
			_, err := tk.Encode(c.in, true, true)
			var ue *InvalidUTF8Error
			if !errors.As(err, &ue) || ue.Offset != c.off || !errors.Is(err, ErrInvalidUTF8) {
				t.Errorf("%s Encode(%q) error = %v, want invalid UTF-8 at offset %d", tk.Model(), c.in, err, c.off)
			}
		}
	}
}

func TestNewErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*Vocab)
		want string
	}{
		{"unknown model", func(v *Vocab) { v.Model = "bert" }, `unknown tokenizer model "bert"`},
		{"no model", func(v *Vocab) { v.Model = "" }, "no tokenizer model"},
		{"unknown pre", func(v *Vocab) { v.Pre = "tekken" }, `unknown pre-tokenizer "tekken"`},
		{"scores length", func(v *Vocab) { v.Scores = make([]float32, 3) }, "3 scores for 261 tokens"},
		{"types length", func(v *Vocab) { v.Types = v.Types[:10] }, "10 token types for 261 tokens"},
		{"merge part", func(v *Vocab) { v.Merges = append(v.Merges, "Ġthe zz") }, `right part "zz" is not a token`},
		{"merge no space", func(v *Vocab) { v.Merges = append(v.Merges, "Ġthe") }, "no space"},
		{"no merges", func(v *Vocab) { v.Merges = nil }, "without merges"},
		{"duplicate", func(v *Vocab) { v.Tokens[260] = "he" }, `duplicate token "he"`},
		{"empty", func(v *Vocab) { v.Tokens, v.Types = nil, nil }, "empty vocabulary"},
		{"add_bos without bos", func(v *Vocab) {
			// The default BOS (11) is outside this vocab and 1<<31 is ignored.
			v.Tokens, v.Types, v.Merges = []string{"a", "b"}, nil, []string{"a b"}
			v.AddBOS, v.BOS = new(true), new(uint32(1<<31))
		}, "add_bos_token is true"},
		{"byte token", func(v *Vocab) { v.Types[5] = TypeByte }, "type byte"},
	} {
		v := smallBPE("gpt-2")
		v.Tokens = slices.Clone(v.Tokens)
		v.Types = slices.Clone(v.Types)
		c.edit(&v)
		_, err := New(v)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to mention %q", c.name, err, c.want)
		}
	}
	_, err := New(Vocab{Model: "rwkv", Tokens: []string{"a"}})
	if !errors.Is(err, ErrUnsupported) {
		t.Errorf("unknown model: %v does not wrap ErrUnsupported", err)
	}
}

// ggufOf writes metadata kvs to an in-memory GGUF file and parses it.
func ggufOf(t *testing.T, kvs map[string]any) *gguf.File {
	t.Helper()
	return testutil.GGUF(t, func(w *gguf.Writer) error {
		for k, v := range kvs {
			if err := w.Set(k, v); err != nil {
				return err
			}
		}
		return nil
	})
}

func TestFromGGUF(t *testing.T) {
	v := smallBPE("qwen2")
	types := make([]int32, len(v.Types))
	for i, x := range v.Types {
		types[i] = int32(x)
	}
	base := func() map[string]any {
		return map[string]any{
			"general.name":                    "tiny",
			"tokenizer.ggml.model":            "gpt2",
			"tokenizer.ggml.pre":              "qwen2",
			"tokenizer.ggml.tokens":           v.Tokens,
			"tokenizer.ggml.token_type":       types,
			"tokenizer.ggml.merges":           v.Merges,
			"tokenizer.ggml.bos_token_id":     uint32(259),
			"tokenizer.ggml.eos_token_id":     uint32(260),
			"tokenizer.ggml.padding_token_id": uint32(0xFFFFFFFF),
			"tokenizer.ggml.add_bos_token":    true,
		}
	}
	tk, err := FromGGUF(ggufOf(t, base()))
	if err != nil {
		t.Fatal(err)
	}
	if tk.Model() != "gpt2" || tk.Pre() != "qwen2" || tk.VocabSize() != 261 || tk.BOS() != 259 || tk.EOS() != 260 || tk.PAD() != NoToken || !tk.AddBOS() {
		t.Errorf("model %q pre %q n %d bos %d eos %d pad %d addBOS %v", tk.Model(), tk.Pre(), tk.VocabSize(), tk.BOS(), tk.EOS(), tk.PAD(), tk.AddBOS())
	}
	if ids, _ := tk.Encode(" the", true, false); !slices.Equal(ids, []int32{259, 258}) {
		t.Errorf("Encode = %v", ids)
	}
	for _, c := range []struct {
		name string
		edit func(map[string]any)
		want string
	}{
		{"missing model", func(m map[string]any) { delete(m, "tokenizer.ggml.model") }, "tokenizer.ggml.model"},
		{"missing tokens", func(m map[string]any) { delete(m, "tokenizer.ggml.tokens") }, "tokenizer.ggml.tokens"},
		{"mistyped tokens", func(m map[string]any) { m["tokenizer.ggml.tokens"] = []int32{1, 2} }, "tokenizer.ggml.tokens"},
		{"mistyped pre", func(m map[string]any) { m["tokenizer.ggml.pre"] = uint32(2) }, "tokenizer.ggml.pre"},
		{"mistyped bos", func(m map[string]any) { m["tokenizer.ggml.bos_token_id"] = "1" }, "tokenizer.ggml.bos_token_id"},
		{"mistyped add_bos", func(m map[string]any) { m["tokenizer.ggml.add_bos_token"] = uint8(1) }, "tokenizer.ggml.add_bos_token"},
		{"mistyped scores", func(m map[string]any) { m["tokenizer.ggml.scores"] = []string{"x"} }, "tokenizer.ggml.scores"},
		{"mistyped merges", func(m map[string]any) { m["tokenizer.ggml.merges"] = uint32(1) }, "tokenizer.ggml.merges"},
		{"unknown model", func(m map[string]any) { m["tokenizer.ggml.model"] = "t5" }, `"t5"`},
		{"unknown pre", func(m map[string]any) { m["tokenizer.ggml.pre"] = "chatglm-bpe" }, `"chatglm-bpe"`},
		{"types length", func(m map[string]any) { m["tokenizer.ggml.token_type"] = types[:5] }, "5 token types"},
	} {
		m := base()
		c.edit(m)
		_, err := FromGGUF(ggufOf(t, m))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to mention %s", c.name, err, c.want)
		}
	}
	// Integer scores are accepted, as in llama.cpp.
	m := base()
	m["tokenizer.ggml.scores"] = make([]int32, len(v.Tokens))
	if _, err := FromGGUF(ggufOf(t, m)); err != nil {
		t.Errorf("int32 scores: %v", err)
	}
}

// EncodeLiteral: without spans it is Encode with special tokens parsed;
// a span over all the text is Encode without; a control token's text
// touching a span byte is text, one outside it is the token; bad spans
// are errors.
func TestEncodeLiteral(t *testing.T) {
	tk := loadGGUF(t, "tokenizer/ggml-vocab-llama3.gguf")
	text := "<|start_header_id|>user<|end_header_id|>\n\nhi <|eot_id|> there<|eot_id|>"
	eq := func(what string, got []int32, err error, want []int32) {
		t.Helper()
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%s: %v %v, want %v", what, got, err, want)
		}
	}
	parsed, _ := tk.Encode(text, true, true)
	plain, _ := tk.Encode(text, true, false)
	got, err := tk.EncodeLiteral(text, true, nil)
	eq("no spans", got, err, parsed)
	got, err = tk.EncodeLiteral(text, true, []Span{{0, len(text)}})
	eq("all literal", got, err, plain)
	user := strings.Index(text, "hi")
	end := strings.LastIndex(text, "<|eot_id|>")
	got, err = tk.EncodeLiteral(text, true, []Span{{user, end}})
	eot, _ := tk.Lookup("<|eot_id|>")
	if err != nil || slices.Index(got, eot) != len(got)-1 {
		t.Errorf("content span: %v %v: want only the last <|eot_id|> as a token", got, err)
	}
	// One byte of the span inside the token's text is enough to keep it text.
	got, _ = tk.EncodeLiteral(text, true, []Span{{end + 3, end + 4}})
	if slices.Contains(got[len(got)-3:], eot) {
		t.Errorf("a literal byte inside <|eot_id|> left it a token: %v", got)
	}
	for _, bad := range [][]Span{{{-1, 2}}, {{3, 2}}, {{0, len(text) + 1}}, {{4, 8}, {2, 3}}, {{0, 5}, {4, 6}}} {
		if _, err := tk.EncodeLiteral(text, true, bad); err == nil {
			t.Errorf("spans %v accepted", bad)
		}
	}
}

// MinTokens never exceeds the real count, for every vocabulary kind.
func TestMinTokens(t *testing.T) {
	texts := []string{"", "a", "Hello world", strings.Repeat(" ", 300), strings.Repeat("=", 500),
		"<|eot_id|>   <s> </s>  x", strings.Repeat("ab ", 200), "😀 中文 \t\n x"}
	for _, rel := range []string{"tokenizer/ggml-vocab-llama3.gguf", "tokenizer/ggml-vocab-llama-spm.gguf",
		"tokenizer/ggml-vocab-phi-3.gguf", "conformance/stories260K.gguf", "conformance/qwen2-tiny-q8_0.gguf"} {
		tk := loadGGUF(t, rel)
		for _, s := range texts {
			for _, special := range []bool{false, true} {
				ids, err := tk.Encode(s, false, special)
				if err != nil {
					t.Fatal(err)
				}
				if m := tk.MinTokens(s); m > len(ids) {
					t.Errorf("%s: MinTokens(%.20q) = %d > %d tokens", rel, s, m, len(ids))
				}
			}
		}
		if m := tk.MinTokens(strings.Repeat("x", 1<<20)); m < 1<<20/tk.maxCover || m == 0 {
			t.Errorf("%s: MinTokens of 1 MiB = %d", rel, m)
		}
	}
}
