package engine

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"shade/sample"
)

const conformanceDir = "../../shared/testdata/conformance"

func load(t *testing.T, name string) *Engine {
	t.Helper()
	path := filepath.Join(conformanceDir, name)
	if _, err := os.Stat(path); err != nil {
		t.Skipf("%s not present: the shared conformance pack is needed", path)
	}
	e, err := Load(path, 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func TestGenerateStoriesGreedy(t *testing.T) {
	e := load(t, "stories260K.gguf")
	var ref struct {
		PromptTokens []int32 `json:"prompt_tokens"`
		Greedy       []int32 `json:"greedy_tokens"`
	}
	b, _ := os.ReadFile(filepath.Join(conformanceDir, "stories260K.ref.json"))
	json.Unmarshal(b, &ref)
	var chunks []string
	st, err := e.Generate(context.Background(), Request{Prompt: "Once upon a time", MaxTokens: len(ref.Greedy), Sampling: sample.Params{Temp: 0}},
		func(s string) error { chunks = append(chunks, s); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if st.PromptTokens != len(ref.PromptTokens) || st.GenTokens != len(ref.Greedy) {
		t.Fatalf("prompt %d generated %d tokens, want %d and %d", st.PromptTokens, st.GenTokens, len(ref.PromptTokens), len(ref.Greedy))
	}
	for i := range ref.Greedy {
		if st.Tokens[i] != ref.Greedy[i] {
			t.Fatalf("token %d = %d, llama.cpp %d", i, st.Tokens[i], ref.Greedy[i])
		}
	}
	text := strings.Join(chunks, "")
	if want := e.Tok.Decode(ref.Greedy); text != want {
		t.Errorf("streamed text %q\nwant %q", text, want)
	}
	for _, c := range chunks {
		if !utf8.ValidString(c) {
			t.Errorf("chunk %q is not valid UTF-8", c)
		}
	}
	if !strings.Contains(text, "Lily") {
		t.Errorf("story text %q does not read as the reference story", text)
	}
	if st.ResidentBytes <= 0 || st.GenTPS <= 0 || st.StopReason != "length" {
		t.Errorf("stats %+v", st)
	}
}

func TestGenerateSeededSampling(t *testing.T) {
	e := load(t, "stories260K.gguf")
	run := func(seed uint64) string {
		var sb strings.Builder
		p := sample.Defaults()
		p.Seed = seed
		_, err := e.Generate(context.Background(), Request{Prompt: "Once upon a time", MaxTokens: 40, Sampling: p},
			func(s string) error { sb.WriteString(s); return nil })
		if err != nil {
			t.Fatal(err)
		}
		return sb.String()
	}
	if a, b := run(1), run(1); a != b {
		t.Errorf("same seed, different text:\n%q\n%q", a, b)
	}
	if a, b := run(1), run(2); a == b {
		t.Errorf("different seeds, same text %q", a)
	}
}

func TestGenerateErrors(t *testing.T) {
	e := load(t, "stories260K.gguf")
	noop := func(string) error { return nil }
	_, err := e.Generate(context.Background(), Request{Prompt: strings.Repeat("once upon a time ", 100), Ctx: 64}, noop)
	if !errors.Is(err, ErrPromptTooLong) {
		t.Errorf("long prompt: err = %v", err)
	}
	_, err = e.Generate(context.Background(), Request{Prompt: "x", Sampling: sample.Params{TopP: 3}}, noop)
	if err == nil {
		t.Error("bad sampling params accepted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	st, err := e.Generate(ctx, Request{Prompt: "Once", MaxTokens: 100, Sampling: sample.Params{Temp: 0}, IgnoreEOS: true},
		func(string) error {
			if n++; n == 3 {
				cancel()
			}
			return nil
		})
	if !errors.Is(err, context.Canceled) || st.StopReason != "canceled" || st.GenTokens > 10 {
		t.Errorf("cancel: err %v, stats %+v", err, st)
	}
	// A full context stops generation cleanly.
	st, err = e.Generate(context.Background(), Request{Prompt: "Once", Ctx: 12, Sampling: sample.Params{Temp: 0}, IgnoreEOS: true}, noop)
	if err != nil || st.StopReason != "context" {
		t.Errorf("full context: err %v, stop %q", err, st.StopReason)
	}
}

// TestPerplexityMatchesLlamaCpp runs llama-perplexity's measurement on the
// conformance packs (the first one's files, and the more quantization types
// of types/) and holds each to llama.cpp's figure.
func TestPerplexityMatchesLlamaCpp(t *testing.T) {
	for _, dir := range []string{".", "types"} {
		t.Run(dir, func(t *testing.T) { testPerplexity(t, dir) })
	}
}

func testPerplexity(t *testing.T, dir string) {
	var refs []struct {
		Model  string  `json:"model"`
		Text   string  `json:"text"`
		Ctx    int     `json:"ctx"`
		PPL    float64 `json:"ppl"`
		Chunks int     `json:"chunks"` // 0 where the reference does not say
	}
	b, err := os.ReadFile(filepath.Join(conformanceDir, dir, "perplexity.json"))
	if err != nil {
		t.Skip("perplexity.json not present: the shared conformance pack is needed")
	}
	if err := json.Unmarshal(b, &refs); err != nil {
		t.Fatal(err)
	}
	for _, ref := range refs {
		t.Run(ref.Model, func(t *testing.T) {
			if testing.Short() && ref.Model != "stories260K.gguf" && dir == "." {
				t.Skip("long perplexity run: skipped with -short")
			}
			e := load(t, filepath.Join(dir, ref.Model))
			text, err := os.ReadFile(filepath.Join(conformanceDir, dir, ref.Text))
			if err != nil {
				t.Fatal(err)
			}
			res, err := e.Perplexity(context.Background(), string(text), ref.Ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			tol := 0.01
			if dir != "." || strings.Contains(ref.Model, "q4_") || strings.Contains(ref.Model, "_k") {
				tol = 0.03
			}
			if ref.Chunks > 0 && res.Chunks != ref.Chunks {
				t.Errorf("%d chunks, llama.cpp %d", res.Chunks, ref.Chunks)
			}
			if rel := math.Abs(res.PPL-ref.PPL) / ref.PPL; rel > tol {
				t.Errorf("PPL %.4f, llama.cpp %.4f (%.2f%% off, tolerance %.0f%%)", res.PPL, ref.PPL, 100*rel, 100*tol)
			} else {
				t.Logf("PPL %.4f, llama.cpp %.4f (%.3f%% off)", res.PPL, ref.PPL, 100*rel)
			}
		})
	}
}
