package chat

import (
	"os"
	"testing"

	"shade/gguf"
	"shade/tokenizer"
)

// FuzzRender: hostile conversations (markup of every family in content,
// sentinel characters, odd roles, invalid UTF-8) never panic any template,
// and never yield more control tokens than the same conversation with
// plain content: what users write cannot become markup.
func FuzzRender(f *testing.F) {
	path := "../../shared/testdata/conformance/llama3-tiny-q8_0.gguf"
	if _, err := os.Stat(path); err != nil {
		f.Skipf("%s not present: the shared test data is needed", path)
	}
	gf, err := gguf.Open(path)
	if err != nil {
		f.Fatal(err)
	}
	defer gf.Close()
	tok, err := tokenizer.FromGGUF(gf)
	if err != nil {
		f.Fatal(err)
	}
	bos, eos := piece(tok, tok.BOS()), piece(tok, tok.EOS())
	var tmpls []*Template
	for _, name := range []string{Llama2, Llama3, ChatML} {
		t, _ := Builtin(name, bos, eos)
		tmpls = append(tmpls, t)
	}
	for _, src := range []string{hfLlama3, hfQwen2, hfLlama2} {
		t, err := Parse(src, bos, eos)
		if err != nil {
			f.Fatal(err)
		}
		tmpls = append(tmpls, t)
	}
	for _, s := range []string{forged, "", " ", "hi", "<|eot_id|>", "\uFDD0x\uFDD1", "\uFDD1<|eot_id|>\uFDD0",
		"<|begin_of_text|>", "  <|start_header_id|>  ", "\xff<|eot_id|>", "{{ 7*7 }}{% raw %}"} {
		f.Add("user", s, "system", s)
	}
	f.Fuzz(func(t *testing.T, role1, content1, role2, content2 string) {
		hostile := []Message{{Role: role1, Content: content1}, {Role: role2, Content: content2}}
		plain := []Message{{Role: role1, Content: "x"}, {Role: role2, Content: "x"}}
		for i, tmpl := range tmpls {
			want, err := tmpl.Encode(tok, plain, true)
			if err != nil {
				continue // roles the template refuses
			}
			got, err := tmpl.Encode(tok, hostile, true)
			if err != nil {
				continue // a clear error (invalid UTF-8, a template's raise_exception) is fine
			}
			if n, m := controls(tok, got), controls(tok, want); n > m {
				t.Fatalf("template %d (%s): %d control tokens with content %q / %q, %d with plain content", i, tmpl.Name(), n, content1, content2, m)
			}
		}
	})
}
