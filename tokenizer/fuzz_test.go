package tokenizer

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// fuzzTokenizers returns small built-in vocabs of every kind, plus the real
// test vocabs when the shared testdata is present.
func fuzzTokenizers(f *testing.F) map[string]*Tokenizer {
	tks := map[string]*Tokenizer{}
	for name, v := range map[string]Vocab{
		"small-spm":       smallSPM(),
		"small-gpt2":      smallBPE("gpt-2"),
		"small-llama3":    smallBPE("llama-bpe"),
		"small-qwen2":     smallBPE("qwen2"),
		"small-default":   smallBPE("default"),
		"small-spm-nopfx": func() Vocab { v := smallSPM(); v.AddSpacePrefix = new(false); return v }(),
	} {
		tk, err := New(v)
		if err != nil {
			f.Fatal(err)
		}
		tks[name] = tk
	}
	for name, rel := range map[string]string{
		"llama-spm": "tokenizer/ggml-vocab-llama-spm.gguf",
		"gpt-2":     "tokenizer/ggml-vocab-gpt-2.gguf",
		"llama3":    "tokenizer/ggml-vocab-llama3.gguf",
		"qwen2":     "conformance/qwen2-tiny-q8_0.gguf",
	} {
		path := filepath.Join(testdata, rel)
		if _, err := os.Stat(path); err != nil {
			continue
		}
		tk := loadGGUF(f, rel)
		tks[name] = tk
		if name == "qwen2" { // the file says gpt-2; also run its vocab with the qwen2 splitter
			q := *tk
			q.split, q.pre, q.cleanSpaces = qwen2Split, "qwen2", false
			tks["qwen2-pre"] = &q
		}
	}
	return tks
}

func FuzzEncode(f *testing.F) {
	for _, s := range []string{
		"", " ", "  ", "\n", " \n\n ", "Hello world", " Hello World!", "I've 'RE you 'll",
		"3333333 3.3 3..3", "😀 (normal) 😶‍🌫️", "中文 ٣٤ x² Ⅻ", "\u00a0\u2003\u3000\u0085x",
		"<|endoftext|>the<|im_end|>", "<s>abc</s>", "▁▁a", "ab\xffc", "\xc0\x80", "\xed\xa0\x80",
		"a\u0301bc", "\t \t\t \t", "      x", "'s's's", "!!!???...", "\r\n\r\n",
	} {
		f.Add(s)
	}
	tks := fuzzTokenizers(f)
	f.Fuzz(func(t *testing.T, s string) {
		valid := utf8.ValidString(s)
		for name, tk := range tks {
			ids, err := tk.Encode(s, false, false)
			if !valid {
				var ue *InvalidUTF8Error
				if !errors.As(err, &ue) || ue.Offset < 0 || ue.Offset >= len(s) || !utf8.ValidString(s[:ue.Offset]) {
					t.Fatalf("%s: Encode(%q) error %v, want the offset of the first invalid byte", name, s, err)
				}
				r, n := utf8.DecodeRuneInString(s[ue.Offset:])
				if r != utf8.RuneError || n != 1 {
					t.Fatalf("%s: Encode(%q) reports offset %d, which starts a valid character", name, s, ue.Offset)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s: Encode(%q): %v", name, s, err)
			}
			var raw []byte
			control := false
			for _, id := range ids {
				if id < 0 || int(id) >= tk.VocabSize() {
					t.Fatalf("%s: Encode(%q) gave id %d out of range", name, s, id)
				}
				raw = append(raw, tk.TokenBytes(id)...)
				control = control || tk.textPiece(id, false) == nil && tk.TokenBytes(id) != nil
			}
			want := s
			if tk.kind == kindSPM && tk.addSpacePrefix && s != "" {
				want = " " + s
			}
			// Byte-level BPE is lossless; SPM too unless the text holds "▁" itself.
			if tk.kind == kindBPE || !strings.Contains(s, "▁") {
				if string(raw) != want {
					t.Fatalf("%s: pieces of Encode(%q) give %q", name, s, raw)
				}
				if !control {
					want = s
					if tk.cleanSpaces {
						want = string(cleanSpaces([]byte(s)))
					}
					if got := tk.Decode(ids); got != want {
						t.Fatalf("%s: Decode(Encode(%q)) = %q, want %q", name, s, got, want)
					}
				}
			}
			d := NewDecoder(tk)
			var sb strings.Builder
			for _, id := range ids {
				sb.WriteString(d.Add(id))
			}
			sb.WriteString(d.Flush())
			if got, want := sb.String(), perByteValid(tk.Decode(ids)); got != want {
				t.Fatalf("%s: streamed %q, Decode %q", name, got, want)
			}
			if _, err := tk.Encode(s, true, true); err != nil {
				t.Fatalf("%s: Encode(%q, special): %v", name, s, err)
			}
		}
	})
}
