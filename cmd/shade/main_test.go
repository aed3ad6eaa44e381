package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"shade/gguf"
	"shade/quant"
)

const shared = "../../../shared/testdata"

func sharedFile(t *testing.T, rel string) string {
	t.Helper()
	p := filepath.Join(shared, rel)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("%s not present: the shared test data is needed", p)
	}
	return p
}

func shade(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code = runMain(context.Background(), args, &o, &e)
	return code, o.String(), e.String()
}

func TestRunStories(t *testing.T) {
	model := sharedFile(t, "conformance/stories260K.gguf")
	code, out, errOut := shade(t, "run", "-m", model, "-p", "Once upon a time", "-n", "40", "--temp", "0")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "Lily") {
		t.Errorf("stdout %q is not the reference story", out)
	}
	if !strings.Contains(errOut, "generated 40 tokens") || !strings.Contains(errOut, "resident") {
		t.Errorf("stats line %q", errOut)
	}
	code, _, errOut = shade(t, "run", "-m", model, "-p", "Once", "-n", "5", "--json", "--seed", "9")
	var st map[string]any
	if code != 0 || json.Unmarshal([]byte(errOut), &st) != nil || st["generated_tokens"] != 5.0 || st["seed"] != 9.0 {
		t.Errorf("--json stats: exit %d, %q", code, errOut)
	}
}

// Without -m, run tells a story with the model built into the binary: the
// first command a new user types shows what shade does.
func TestRunDefaultModel(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	var first string
	for i := range 2 { // the second run finds the file in the cache
		code, out, errOut := shade(t, "run", "-p", "Once upon a time", "-n", "48", "--temp", "0")
		if code != 0 || !strings.Contains(errOut, "stories260K") {
			t.Fatalf("run %d: exit %d, stderr %q", i, code, errOut)
		}
		if !utf8.ValidString(out) {
			t.Fatalf("run %d: stdout is not valid UTF-8: %q", i, out)
		}
		if i == 0 {
			first = out
		} else if out != first {
			t.Fatalf("greedy output differs between runs:\n%q\n%q", first, out)
		}
	}
	// English prose: mostly letters and spaces, sentences, and the words
	// of a TinyStories story.
	letters := 0
	for _, r := range first {
		if unicode.IsLetter(r) || r == ' ' {
			letters++
		}
	}
	if n := utf8.RuneCountInString(first); n < 100 || letters < n*8/10 {
		t.Errorf("stdout %q does not read as prose (%d of %d runes letters or spaces)", first, letters, n)
	}
	words := strings.Fields(strings.ToLower(first))
	common := 0
	for _, w := range words {
		switch strings.Trim(w, ".,!?\"'") {
		case "the", "a", "was", "she", "he", "to", "and", "there", "little", "named", "day", "one":
			common++
		}
	}
	if !strings.Contains(first, ".") || common < len(words)/5 {
		t.Errorf("stdout %q is not story text (%d of %d words common English ones)", first, common, len(words))
	}
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	corrupt := filepath.Join(dir, "corrupt.gguf")
	model := sharedFile(t, "conformance/llama-tiny-q8_0.gguf")
	b, _ := os.ReadFile(model)
	os.WriteFile(corrupt, b[:len(b)/2], 0o644)
	notGGUF := filepath.Join(dir, "text.gguf")
	os.WriteFile(notGGUF, []byte("hello, world"), 0o644)
	prompt := filepath.Join(dir, "bad.txt")
	os.WriteFile(prompt, []byte("caf\xe9"), 0o644)
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"run", "-m", corrupt, "-p", "x"}, 1, "past end of file"},
		{[]string{"inspect", corrupt}, 1, "past end of file"},
		{[]string{"run", "-m", notGGUF, "-p", "x"}, 1, "not a GGUF file"},
		{[]string{"run", "-m", filepath.Join(dir, "missing.gguf"), "-p", "x"}, 1, "no such file"},
		{[]string{"run", "-m", model, "-f", prompt}, 1, "UTF-8"},
		{[]string{"run", "-m", model, "-p", strings.Repeat("word ", 300), "--ctx", "64"}, 1, "prompt too long"},
		{[]string{"run", "-m", model, "-p", "x", "--top-p", "7"}, 1, "top-p"},
		{[]string{"run", "--bogus"}, 2, "flag provided but not defined"},
		{[]string{"inspect"}, 2, "Usage"},
		{[]string{"frobnicate"}, 2, "unknown command"},
		{[]string{"synth", "--shape", "nope", "-o", filepath.Join(dir, "x.gguf")}, 1, "llama3-8b"},
		{[]string{"synth", "--shape", "tiny", "--type", "IQ1_S", "-o", filepath.Join(dir, "x.gguf")}, 1, "IQ1_S"},
		{[]string{"perplexity", "-m", model, "-f", filepath.Join(dir, "missing.txt")}, 1, "no such file"},
	}
	for _, tc := range cases {
		code, _, errOut := shade(t, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("shade %s: exit %d (want %d), stderr %q (want %q)", strings.Join(tc.args, " "), code, tc.code, errOut, tc.want)
		}
	}
}

func TestInspect(t *testing.T) {
	model := sharedFile(t, "conformance/qwen3-tiny-q8_0.gguf")
	code, out, errOut := shade(t, "inspect", model)
	if code != 0 {
		t.Fatal(errOut)
	}
	for _, want := range []string{"qwen3", "head dim 32", "q/k norm", "blk.0.attn_q_norm.weight", "Q8_0", "gpt2", "\ntypes         Q8_0: Q8_0 "} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect output lacks %q", want)
		}
	}
	code, out, _ = shade(t, "inspect", "--json", model)
	var r inspectReport
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil || r.Config == nil || r.Config.HeadDim != 32 || r.TensorCount != len(r.Tensors) || r.TensorCount == 0 ||
		r.FileType != "Q8_0" || r.TensorsByType["Q8_0"] == 0 || len(r.NotComputed) != 0 {
		t.Errorf("inspect --json: exit %d, %+v", code, r)
	}
}

// TestInspectNotComputed: a file holding a tensor type shade has no kernels
// for is inspected, and inspect says which type would make loading refuse it.
func TestInspectNotComputed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "iq2.gguf")
	var buf bytes.Buffer
	w := gguf.NewWriter(&buf)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(w.Set("general.architecture", "llama"))
	must(w.Set("general.file_type", uint32(19)))
	must(w.AddTensor("blk.0.ffn_down.weight", quant.IQ2_XXS, 256, 2))
	must(w.AddTensor("blk.0.ffn_norm.weight", quant.F32, 256))
	must(w.WriteHeader())
	_, err := w.Write(make([]byte, 2*quant.IQ2_XXS.BlockBytes()+256*4))
	must(err)
	must(w.Close())
	must(os.WriteFile(path, buf.Bytes(), 0o644))
	code, out, errOut := shade(t, "inspect", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if want := "types         IQ2_XXS: F32 1 tensor, IQ2_XXS 1; shade does not compute IQ2_XXS"; !strings.Contains(out, want) {
		t.Errorf("inspect output lacks %q:\n%s", want, out)
	}
	code, out, _ = shade(t, "inspect", "--json", path)
	var r inspectReport
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil || !slices.Equal(r.NotComputed, []string{"IQ2_XXS"}) || r.FileType != "IQ2_XXS" {
		t.Errorf("inspect --json: exit %d, file type %q, not computed %v", code, r.FileType, r.NotComputed)
	}
}

func TestSynthThenInspectAndRun(t *testing.T) {
	vocab := sharedFile(t, "tokenizer/ggml-vocab-llama3.gguf")
	out := filepath.Join(t.TempDir(), "tiny.gguf")
	code, _, errOut := shade(t, "synth", "--shape", "tiny", "--type", "Q4_0", "--vocab", vocab, "-o", out, "--quiet")
	if code != 0 {
		t.Fatal(errOut)
	}
	code, stdout, _ := shade(t, "inspect", out)
	if code != 0 || !strings.Contains(stdout, "128256 tokens") || !strings.Contains(stdout, "llama-bpe") {
		t.Errorf("inspect of the synthesized file:\n%s", stdout)
	}
	if code, _, errOut = shade(t, "run", "-m", out, "-p", "Hello world", "-n", "8"); code != 0 {
		t.Errorf("run on the synthesized file: %s", errOut)
	}
}

func TestPerplexityJSON(t *testing.T) {
	model := sharedFile(t, "conformance/stories260K.gguf")
	text := sharedFile(t, "text/gpl-3.txt")
	code, out, errOut := shade(t, "perplexity", "-m", model, "-f", text, "--ctx", "128", "--json")
	var r struct {
		PPL    float64 `json:"ppl"`
		Chunks int     `json:"chunks"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil {
		t.Fatalf("exit %d, %q %q", code, out, errOut)
	}
	if r.Chunks != 173 || r.PPL < 104 || r.PPL > 106.5 {
		t.Errorf("PPL %v over %d chunks, llama.cpp 105.3245 over 173", r.PPL, r.Chunks)
	}
	if !strings.Contains(errOut, "chunk 173/173") {
		t.Errorf("no progress on stderr: %q", errOut)
	}
}

func TestBenchJSON(t *testing.T) {
	model := sharedFile(t, "conformance/stories260K.gguf")
	code, out, errOut := shade(t, "bench", "-m", model, "--batches", "1,4", "--reps", "2", "--decode-tokens", "2", "--bw-mib", "16", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r struct {
		DecodeTokPerS float64   `json:"decode_tok_per_s"`
		RooflineFrac  float64   `json:"roofline_fraction"`
		Probes        []float64 `json:"bandwidth_probes_gb_per_s"`
		Bandwidth     struct {
			GBps float64 `json:"gb_per_s"`
		} `json:"bandwidth"`
		Forward []struct {
			Batch   int     `json:"batch"`
			TokPerS float64 `json:"tok_per_s"`
		} `json:"forward"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.DecodeTokPerS <= 0 || r.Bandwidth.GBps <= 0 || r.RooflineFrac <= 0 || len(r.Forward) != 2 || r.Forward[1].Batch != 4 || r.Forward[1].TokPerS <= 0 {
		t.Errorf("report %+v", r)
	}
	// One probe before each of the 2 decode repetitions and one after the last.
	if len(r.Probes) != 3 || !slices.Contains(r.Probes, r.Bandwidth.GBps) {
		t.Errorf("bandwidth %v from probes %v", r.Bandwidth.GBps, r.Probes)
	}
	if code, _, errOut := shade(t, "bench", "-m", model, "--batches", "0"); code != 1 || !strings.Contains(errOut, "batch size") {
		t.Errorf("bad --batches: exit %d, %q", code, errOut)
	}
}

// TestBenchDepth checks --depth: the cache is filled in ubatches before
// decode and the batches, the report says how deep, and decode's bytes per
// token count the keys and values of that context (5 layers × K and V × 4
// heads × 8 dims × 2 bytes a token on stories260K, for the depth plus half
// the timed steps); a depth past the model's context is refused.
func TestBenchDepth(t *testing.T) {
	model := sharedFile(t, "conformance/stories260K.gguf")
	code, out, errOut := shade(t, "bench", "-m", model, "--depth", "700", "--ubatch", "256", "--batches", "1,4", "--reps", "1",
		"--decode-tokens", "2", "--bw-mib", "16", "--prompt", "0", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r struct {
		Depth           int     `json:"depth"`
		BytesPerToken   int64   `json:"decode_bytes_per_token"`
		KVBytesPerToken int64   `json:"decode_kv_bytes_per_token"`
		DecodeTokPerS   float64 `json:"decode_tok_per_s"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if want := int64(5 * 2 * 4 * 8 * 2 * (700 + 1)); r.Depth != 700 || r.KVBytesPerToken != want || r.BytesPerToken <= want || r.DecodeTokPerS <= 0 {
		t.Errorf("report %+v, want depth 700 and %d bytes of keys and values a token", r, want)
	}
	if !strings.Contains(errOut, "depth: 700 tokens") {
		t.Errorf("no depth progress on stderr: %q", errOut)
	}
	code, _, errOut = shade(t, "bench", "-m", model, "--depth", "2040", "--batches", "1,16", "--reps", "1", "--bw-mib", "16", "--prompt", "0")
	if code != 1 || !strings.Contains(errOut, "context of 2048") {
		t.Errorf("depth past the context: exit %d, %q", code, errOut)
	}
}

func TestRunSpeculative(t *testing.T) {
	model := sharedFile(t, "conformance/stories260K.gguf")
	draft := sharedFile(t, "conformance/stories260K-f16.gguf")
	_, plain, _ := shade(t, "run", "-m", model, "-p", "Once upon a time", "-n", "48", "--temp", "0")
	for _, mode := range []string{"chain", "tree", "ngram", "auto"} {
		code, out, errOut := shade(t, "run", "-m", model, "--draft", draft, "--spec", mode, "-p", "Once upon a time", "-n", "48", "--temp", "0", "--stats", "--compare-ar")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", mode, code, errOut)
		}
		if out != plain {
			t.Errorf("%s: output %q differs from plain decoding %q", mode, out, plain)
		}
		for _, want := range []string{"speculation " + mode, "accepted", "speedup"} {
			if !strings.Contains(errOut, want) {
				t.Errorf("%s: stats lack %q: %s", mode, want, errOut)
			}
		}
	}
	bad := sharedFile(t, "conformance/llama-tiny-q8_0.gguf")
	if code, _, errOut := shade(t, "run", "-m", model, "--draft", bad, "-p", "x"); code != 1 || !strings.Contains(errOut, "vocabulary differs") {
		t.Errorf("mismatched draft: exit %d, %q", code, errOut)
	}
	if code, _, errOut := shade(t, "run", "-m", model, "--spec", "tree", "-p", "x"); code != 1 || !strings.Contains(errOut, "needs a draft") {
		t.Errorf("tree without draft: exit %d, %q", code, errOut)
	}
}

func TestBenchSpec(t *testing.T) {
	model := sharedFile(t, "conformance/stories260K.gguf")
	draft := sharedFile(t, "conformance/stories260K-f16.gguf")
	code, out, errOut := shade(t, "bench", "spec", "-m", model, "--draft", draft, "-n", "24", "--modes", "chain,tree,ngram,auto", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep struct {
		Results []struct {
			Mode       string  `json:"mode"`
			TokPerS    float64 `json:"tok_per_s"`
			Speedup    float64 `json:"speedup_vs_ar"`
			Acceptance float64 `json:"acceptance"`
			Lossless   bool    `json:"same_output_as_ar"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 5 || rep.Results[0].Mode != "off" || rep.Results[0].Speedup != 1 {
		t.Fatalf("results %+v", rep.Results)
	}
	for _, r := range rep.Results {
		if !r.Lossless || r.TokPerS <= 0 {
			t.Errorf("%s: %+v", r.Mode, r)
		}
	}
	if rep.Results[1].Acceptance < 0.9 { // chain with a draft equal to the target up to F16 rounding
		t.Errorf("chain acceptance %.2f", rep.Results[1].Acceptance)
	}
}

func TestCPUProfile(t *testing.T) {
	model := sharedFile(t, "conformance/stories260K.gguf")
	prof := filepath.Join(t.TempDir(), "cpu.prof")
	t.Setenv("SHADE_CPUPROFILE", prof)
	if code, _, errOut := shade(t, "run", "-m", model, "-p", "Once upon a time", "-n", "8", "--temp", "0"); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	// A profile is gzip-compressed protobuf: it starts with gzip's magic.
	b, err := os.ReadFile(prof)
	if err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Fatalf("profile %s: %d bytes, %v", prof, len(b), err)
	}
	t.Setenv("SHADE_CPUPROFILE", filepath.Join(t.TempDir(), "missing", "cpu.prof"))
	if code, _, errOut := shade(t, "inspect", model); code != 1 || !strings.Contains(errOut, "SHADE_CPUPROFILE") {
		t.Fatalf("unwritable profile: exit %d, %q", code, errOut)
	}
}
