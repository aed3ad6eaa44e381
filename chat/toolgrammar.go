package chat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"shade/grammar"
)

// ToolChoice says whether, and which, tools the model must call
// (OpenAI's tool_choice).
type ToolChoice struct {
	Mode string // "auto" (the default, ""), "none", "required" or "function"
	Name string // Mode "function": the function to call
}

// Forced says whether the reply must be a tool call.
func (c ToolChoice) Forced() bool { return c.Mode == "required" || c.Mode == "function" }

// maxParallel bounds the calls of one forced reply: a model with random
// weights under the grammar would otherwise call until its budget ends.
const maxParallel = 4

// ToolGrammar is the grammar of a reply that calls a tool as choice
// demands, written in format f as the model's template writes calls:
// the markers around {"name": one of the functions, "arguments": JSON
// valid for that function's parameters schema}; with parallel, up to
// maxParallel such calls. It is nil when choice forces nothing. A
// parameters schema the grammar engine does not support is an error
// (grammar.UnsupportedError), never dropped.
func ToolGrammar(f ToolFormat, tools []Tool, choice ToolChoice, parallel bool) (*grammar.Grammar, error) {
	if !choice.Forced() {
		return nil, nil
	}
	open, key, close, sep := "<tool_call>\n{\"name\": ", "arguments", "}\n</tool_call>", "\n"
	if f == Llama3JSON {
		open, key, close, sep = "{\"name\": ", "parameters", "}", "; "
	}
	if f == Llama3JSON {
		parallel = false // Llama 3.1's template takes one call per turn
	}
	b := grammar.NewBuilder()
	var alts []string
	for i, t := range tools {
		if choice.Mode == "function" && t.Function.Name != choice.Name {
			continue
		}
		schema := bytes.TrimSpace(t.Function.Parameters)
		if len(schema) == 0 {
			schema = []byte(`{"type": "object"}`)
		}
		var head struct {
			Type any `json:"type"`
		}
		if err := json.Unmarshal(schema, &head); err != nil {
			return nil, fmt.Errorf("chat: tool %q: parameters: %v", t.Function.Name, err)
		}
		if head.Type != nil && head.Type != "object" {
			return nil, fmt.Errorf("chat: tool %q: parameters must be an object schema (type \"object\"), not type %v", t.Function.Name, head.Type)
		}
		args, err := b.AddSchema(fmt.Sprintf("f%d", i), schema)
		if err != nil {
			return nil, fmt.Errorf("chat: tool %q: parameters: %w", t.Function.Name, err)
		}
		var name strings.Builder
		writePyString(&name, t.Function.Name)
		alts = append(alts, b.Rule(fmt.Sprintf("call%d", i),
			grammar.Literal(open+name.String()+", \""+key+"\": ")+" "+args+" "+grammar.Literal(close)))
	}
	if len(alts) == 0 {
		return nil, fmt.Errorf("chat: tool_choice names function %q, which is not among the tools", choice.Name)
	}
	call := b.Rule("call", strings.Join(alts, " | "))
	root := call
	if parallel && choice.Mode == "required" {
		root = b.Rule("calls", fmt.Sprintf("%s (%s %s){0,%d}", call, grammar.Literal(sep), call, maxParallel-1))
	}
	return b.Build(root)
}
