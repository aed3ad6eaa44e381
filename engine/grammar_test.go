package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"shade/grammar"
	"shade/sample"
	"shade/speculate"
)

var grammarSchemas = []string{
	`{"type":"object","properties":{"name":{"type":"string","maxLength":12},"age":{"type":"integer"},"pets":{"type":"array","items":{"enum":["cat","dog"]},"maxItems":3}},"required":["name","age","pets"],"additionalProperties":false}`,
	`{"$defs":{"t":{"type":"object","properties":{"v":{"type":"boolean"},"kids":{"type":"array","items":{"$ref":"#/$defs/t"},"maxItems":2}},"required":["v"]}},"$ref":"#/$defs/t"}`,
	`{"type":"object"}`,
}

// TestGrammarOutputValidatesWithAnyWeights generates under JSON schemas
// with the trained stories260K and random-weight models of three
// vocabularies (SentencePiece, Llama-3 and GPT-2 byte-level BPE), greedy
// and sampled, with budgets from the tightest to roomy: every output must
// parse and validate against its schema.
func TestGrammarOutputValidatesWithAnyWeights(t *testing.T) {
	models := []string{"stories260K.gguf", "llama3-tiny-q4_0.gguf", "qwen2-tiny-q8_0.gguf"}
	if testing.Short() {
		models = models[:2]
	}
	for _, name := range models {
		e := load(t, name)
		for si, schema := range grammarSchemas {
			g, err := grammar.FromJSONSchema([]byte(schema))
			if err != nil {
				t.Fatal(err)
			}
			shortest := g.NewMatcher(grammar.TokenizerVocab(e.Tok)).Remaining()
			budgets := []int{shortest, shortest + 7, 120}
			params := []sample.Params{{Temp: 0}, {Temp: 1.5, Seed: 11}, {Temp: 1, TopK: 5, RepeatPenalty: 1.3, Seed: 3}}
			if e.Tok.VocabSize() > 1000 {
				// Sampling without top-k sorts the whole vocabulary every
				// step: fewer and cheaper combinations there.
				budgets, params = []int{shortest, 120}, []sample.Params{{Temp: 1.5, TopK: 64, Seed: 11}, params[2]}
			}
			for _, maxTok := range budgets {
				for _, p := range params {
					t.Run(fmt.Sprintf("%s/schema%d/max%d/temp%v", name, si, maxTok, p.Temp), func(t *testing.T) {
						var text strings.Builder
						st, err := e.Generate(context.Background(), Request{Prompt: "Once upon a time", MaxTokens: maxTok, Sampling: p, Grammar: g},
							func(s string) error { text.WriteString(s); return nil })
						if err != nil {
							t.Fatal(err)
						}
						if err := grammar.ValidateJSON([]byte(schema), []byte(text.String())); err != nil {
							t.Fatalf("output %q (%d tokens, %s): %v", text.String(), st.GenTokens, st.StopReason, err)
						}
						var raw []byte
						for _, tok := range st.Tokens {
							raw = append(raw, e.Tok.TokenBytes(tok)...)
						}
						if st.StopReason != "eos" {
							t.Errorf("a complete output stopped with %q", st.StopReason)
						}
						if string(raw) != text.String() {
							t.Fatalf("text %q is not the tokens' bytes %q", text.String(), raw)
						}
					})
				}
			}
		}
	}
}

// TestGrammarSpeculativeGreedyEqualsPlain: constrained greedy output is
// the same token for token in every speculative mode.
func TestGrammarSpeculativeGreedyEqualsPlain(t *testing.T) {
	e := load(t, "stories260K.gguf")
	if err := e.LoadDraft(conformanceDir + "/stories260K-f16.gguf"); err != nil {
		t.Fatal(err)
	}
	noop := func(string) error { return nil }
	for _, src := range []string{
		grammarSchemas[0],
		`root ::= (" " [a-z]+){3,30} "."`,
	} {
		var g *grammar.Grammar
		var err error
		if strings.HasPrefix(src, "{") {
			g, err = grammar.FromJSONSchema([]byte(src))
		} else {
			g, err = grammar.Parse(src)
		}
		if err != nil {
			t.Fatal(err)
		}
		req := Request{Prompt: "Once upon a time", MaxTokens: 60, Sampling: sample.Params{Temp: 0}, Grammar: g}
		plain, err := e.Generate(context.Background(), req, noop)
		if err != nil {
			t.Fatal(err)
		}
		for _, cfg := range []speculate.Config{
			{Mode: speculate.ModeChain, DraftMax: 5},
			{Mode: speculate.ModeTree, DraftMax: 8, TreeWidth: 2, TreeDepth: 4},
			{Mode: speculate.ModeNgram},
			{Mode: speculate.ModeAuto},
			{Mode: speculate.ModeFlash},
		} {
			r := req
			r.Spec = cfg
			st, err := e.Generate(context.Background(), r, noop)
			if err != nil {
				t.Fatalf("%v: %v", cfg.Mode, err)
			}
			if !slices.Equal(st.Tokens, plain.Tokens) {
				t.Errorf("%v: tokens differ from plain constrained decoding\n got %v\nwant %v", cfg.Mode, st.Tokens, plain.Tokens)
			}
			if (cfg.Mode == speculate.ModeChain || cfg.Mode == speculate.ModeTree) && st.Spec.Accepted == 0 {
				t.Errorf("%v: no draft token accepted (%d drafted)", cfg.Mode, st.Spec.Drafted)
			}
			t.Logf("%.20q %v: %d tokens, acceptance %.2f", src, cfg.Mode, st.GenTokens, st.Spec.AcceptanceRate())
		}
	}
}
