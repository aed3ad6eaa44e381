package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"shade/gguf"
)

const testdata = "../../shared/testdata"

// loadGGUF builds the tokenizer of a GGUF file under testdata, skipping the
// test when the file is absent. Tokenizers are cached across tests.
func loadGGUF(t testing.TB, rel string) *Tokenizer {
	t.Helper()
	path := filepath.Join(testdata, rel)
	if _, err := os.Stat(path); err != nil {
		t.Skipf("test data %s not present (%v); it ships in the shared testdata checkout", path, err)
	}
	cacheMu.Lock()
	defer cacheMu.Unlock()
	if tk, ok := cache[path]; ok {
		return tk
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tk, err := FromGGUF(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	cache[path] = tk
	return tk
}

var (
	cacheMu sync.Mutex
	cache   = map[string]*Tokenizer{}
)

// vectorCase is one case of a llama.cpp ggml-vocab-*.gguf.inp/.out pair.
type vectorCase struct {
	text string
	ids  []int32
}

func loadVectors(t *testing.T, vocab string) []vectorCase {
	t.Helper()
	base := filepath.Join(testdata, "tokenizer", vocab)
	inp, err := os.ReadFile(base + ".inp")
	if err != nil {
		t.Skipf("tokenizer vectors %s.inp not present: %v", base, err)
	}
	out, err := os.ReadFile(base + ".out")
	if err != nil {
		t.Skipf("tokenizer vectors %s.out not present: %v", base, err)
	}
	const sep = "\n__ggml_vocab_test__\n"
	texts := strings.Split(string(inp), sep)
	if texts[len(texts)-1] == "" {
		texts = texts[:len(texts)-1]
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(texts) {
		t.Fatalf("%s: %d inputs but %d output lines", base, len(texts), len(lines))
	}
	cases := make([]vectorCase, len(texts))
	for i, text := range texts {
		cases[i].text = text
		for _, f := range strings.Fields(lines[i]) {
			n, err := strconv.ParseInt(f, 10, 32)
			if err != nil {
				t.Fatalf("%s.out line %d: %v", base, i+1, err)
			}
			cases[i].ids = append(cases[i].ids, int32(n))
		}
	}
	return cases
}

func TestVectors(t *testing.T) {
	for _, vocab := range []string{"ggml-vocab-llama-spm.gguf", "ggml-vocab-phi-3.gguf", "ggml-vocab-gpt-2.gguf", "ggml-vocab-llama3.gguf"} {
		t.Run(vocab, func(t *testing.T) {
			cases := loadVectors(t, vocab)
			tk := loadGGUF(t, filepath.Join("tokenizer", vocab))
			for i, c := range cases {
				got, err := tk.Encode(c.text, false, false)
				if err != nil {
					t.Errorf("case %d %q: %v", i, c.text, err)
					continue
				}
				if !slices.Equal(got, c.ids) {
					t.Errorf("case %d %q:\n got %v\nwant %v", i, c.text, got, c.ids)
				}
				// Decoding gives the text back: exactly for the pieces; through
				// Decode after llama.cpp's space clean-up where the vocab has it.
				var raw []byte
				for _, id := range c.ids {
					raw = append(raw, tk.TokenBytes(id)...)
				}
				want := c.text
				if tk.Model() == "llama" && want != "" {
					want = " " + want // the prefixed space
				}
				if string(raw) != want {
					t.Errorf("case %d: pieces give %q, want %q", i, raw, want)
				}
				want = c.text
				if tk.cleanSpaces {
					want = string(cleanSpaces([]byte(want)))
				}
				if dec := tk.Decode(c.ids); dec != want {
					t.Errorf("case %d: Decode gives %q, want %q", i, dec, want)
				}
			}
		})
	}
}

// refJSON is the part of a conformance NAME.ref.json used here.
type refJSON struct {
	Model        string  `json:"model"`
	Prompt       string  `json:"prompt"`
	PromptTokens []int32 `json:"prompt_tokens"`
}

func TestConformancePrompts(t *testing.T) {
	refs, _ := filepath.Glob(filepath.Join(testdata, "conformance", "*.ref.json"))
	if len(refs) == 0 {
		t.Skipf("no conformance references under %s/conformance", testdata)
	}
	for _, ref := range refs {
		name := strings.TrimSuffix(filepath.Base(ref), ".ref.json")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(ref)
			if err != nil {
				t.Fatal(err)
			}
			var r refJSON
			if err := json.Unmarshal(data, &r); err != nil {
				t.Fatalf("%s: %v", ref, err)
			}
			tk := loadGGUF(t, filepath.Join("conformance", name+".gguf"))
			got, err := tk.Encode(r.Prompt, true, false)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, r.PromptTokens) {
				t.Errorf("model %s (pre %q) prompt %q:\n got %v\nwant %v", tk.Model(), tk.Pre(), r.Prompt, got, r.PromptTokens)
			}
		})
	}
}
