package grammar

import (
	"math/bits"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"shade/gguf"
	"shade/tokenizer"
)

const sharedTestdata = "../../shared/testdata"

var (
	tokMu    sync.Mutex
	tokCache = map[string]*tokenizer.Tokenizer{}
)

// loadTokenizer opens a vocabulary of the shared test data (skipping the
// test when it is absent).
func loadTokenizer(t testing.TB, rel string) *tokenizer.Tokenizer {
	t.Helper()
	path := filepath.Join(sharedTestdata, rel)
	if _, err := os.Stat(path); err != nil {
		t.Skipf("%s not present: %v", path, err)
	}
	tokMu.Lock()
	defer tokMu.Unlock()
	if tk, ok := tokCache[path]; ok {
		return tk
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tk, err := tokenizer.FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	tokCache[path] = tk
	return tk
}

func maskIDs(mask []uint64) []int32 {
	var ids []int32
	for w, word := range mask {
		for word != 0 {
			b := bits.TrailingZeros64(word)
			ids = append(ids, int32(w*64+b))
			word &^= 1 << b
		}
	}
	return ids
}

// TestMaskMatchesBruteForce checks the trie walk against asking the
// matcher about every token of real vocabularies, along random paths.
func TestMaskMatchesBruteForce(t *testing.T) {
	schema := []byte(testSchemas[1])
	for _, name := range []string{"tokenizer/ggml-vocab-llama3.gguf", "tokenizer/ggml-vocab-llama-spm.gguf", "conformance/stories260K.gguf"} {
		t.Run(filepath.Base(name), func(t *testing.T) {
			tk := loadTokenizer(t, name)
			v := TokenizerVocab(tk)
			g, err := FromJSONSchema(schema)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(3, 4))
			steps := 12
			if testing.Short() {
				steps = 4
			}
			for walk := 0; walk < 3; walk++ {
				m := g.NewMatcher(v)
				var text []byte
				for step := 0; step < steps && !m.Done(); step++ {
					mask := m.Mask()
					if m.Err() != nil {
						t.Fatal(m.Err())
					}
					for id := int32(0); id < int32(v.Size()); id++ {
						want := m.Allows(id)
						got := mask[id>>6]&(1<<(id&63)) != 0
						if got != want {
							t.Fatalf("after %q: token %d (%q): mask %v, Allows %v", text, id, tk.TokenBytes(id), got, want)
						}
						if got && tk.IsControl(id) && !tk.IsEOG(id) {
							t.Fatalf("control token %d allowed", id)
						}
					}
					ids := maskIDs(mask)
					tok := ids[rng.IntN(len(ids))]
					m.Accept(tok)
					text = append(text, tk.TokenBytes(tok)...)
				}
			}
		})
	}
}

// TestPartialUTF8 checks a character split across tokens: the grammar
// allows a token that ends mid-character only when a completion exists.
func TestPartialUTF8(t *testing.T) {
	v := testVocab("\xe6\x97", "\xa5", "\xe6")
	g := MustParse(`root ::= "日" | "é"`)
	m := g.NewMatcher(v)
	ids := maskIDs(m.Mask())
	want := map[string]bool{"\xe6\x97": true, "\xe6": true, "\xc3": true}
	for _, id := range ids {
		if !want[string(v.text[id])] {
			t.Errorf("token %q allowed at the start", v.text[id])
		}
	}
	m.Accept(256) // "\xe6\x97"
	ids = maskIDs(m.Mask())
	if len(ids) != 2 { // "\xa5" as a byte and as the extra token
		t.Errorf("after the first two bytes: %d tokens allowed, want 2", len(ids))
	}
	m.Accept(257)
	if !m.Accepting() || m.Err() != nil {
		t.Errorf("日 in two tokens: accepting %v, err %v", m.Accepting(), m.Err())
	}
	// Only the EOS is left.
	if ids := maskIDs(m.Mask()); len(ids) != 1 || ids[0] != int32(v.Size()-1) {
		t.Errorf("after a complete match: %v allowed, want only the EOS", ids)
	}
}

// TestCloneIndependent: a clone advances without moving the original.
func TestCloneIndependent(t *testing.T) {
	v := testVocab()
	m := MustParse(`root ::= "ab" | "ac"`).NewMatcher(v)
	m.Accept('a')
	c := m.Clone()
	c.Accept('b')
	if !c.Accepting() || m.Accepting() {
		t.Fatal("clone and original share their position")
	}
	m.Accept('c')
	if !m.Accepting() || m.Err() != nil {
		t.Fatal(m.Err())
	}
	m.Accept('x')
	if m.Err() == nil {
		t.Fatal("a refused token left no error")
	}
}
