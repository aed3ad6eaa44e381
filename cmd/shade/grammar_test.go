package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"shade/grammar"
)

func TestRunGrammarFlags(t *testing.T) {
	model := sharedFile(t, "conformance/stories260K.gguf")
	dir := t.TempDir()
	schema := `{"type":"object","properties":{"who":{"type":"string","maxLength":10},"n":{"type":"integer"}},"required":["who","n"]}`
	files := map[string]string{"s.json": schema, "g.gbnf": `root ::= "The " ("cat" | "dog") "."`, "bad.json": `{"type":"string","pattern":"x"}`}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := shade(t, "run", "-m", model, "-p", "Once upon a time", "-n", "40", "--temp", "1", "--json-schema", filepath.Join(dir, "s.json"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if err := grammar.ValidateJSON([]byte(schema), []byte(strings.TrimSuffix(out, "\n"))); err != nil {
		t.Errorf("--json-schema output %q: %v", out, err)
	}
	code, out, errOut = shade(t, "run", "-m", model, "-p", "Once upon a time", "--grammar", filepath.Join(dir, "g.gbnf"))
	if code != 0 || (out != "The cat.\n" && out != "The dog.\n") {
		t.Errorf("--grammar: exit %d, output %q, %s", code, out, errOut)
	}
	code, _, errOut = shade(t, "run", "-m", model, "-p", "x", "--json-schema", filepath.Join(dir, "bad.json"))
	if code == 0 || !strings.Contains(errOut, `"pattern"`) {
		t.Errorf("unsupported schema: exit %d, %s", code, errOut)
	}
	code, _, errOut = shade(t, "run", "-m", model, "-p", "x", "--json-schema", filepath.Join(dir, "s.json"), "--grammar", filepath.Join(dir, "g.gbnf"))
	if code == 0 || !strings.Contains(errOut, "use one") {
		t.Errorf("both flags: exit %d, %s", code, errOut)
	}
}
