package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"shade/chat"
	"shade/grammar"
)

// toolFields are a chat request's tool fields (OpenAI's).
type toolFields struct {
	Tools             []toolDef        `json:"tools"`
	ToolChoice        *toolChoiceField `json:"tool_choice"`
	ParallelToolCalls *bool            `json:"parallel_tool_calls"`
	// ChatTemplateKwargs (llama-server's) are extra template variables,
	// such as tools_in_user_message or enable_thinking.
	ChatTemplateKwargs map[string]any `json:"chat_template_kwargs"`
}

type toolDef struct {
	Type     string `json:"type"`
	Function *struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
		Strict      *bool           `json:"strict"`
	} `json:"function"`
}

// toolChoiceField is "auto", "none", "required" or {"type": "function",
// "function": {"name": …}}.
type toolChoiceField chat.ToolChoice

func (c *toolChoiceField) UnmarshalJSON(b []byte) error {
	var mode string
	if err := json.Unmarshal(b, &mode); err == nil {
		switch mode {
		case "auto", "none", "required":
			*c = toolChoiceField{Mode: mode}
			return nil
		}
		return &fieldError{"tool_choice", fmt.Sprintf("tool_choice must be \"auto\", \"none\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": …}}, got %q", mode)}
	}
	var named struct {
		Type     string `json:"type"`
		Function *struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(b, &named); err != nil || named.Type != "function" || named.Function == nil || named.Function.Name == "" {
		return &fieldError{"tool_choice", "tool_choice must be \"auto\", \"none\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": …}}"}
	}
	*c = toolChoiceField{Mode: "function", Name: named.Function.Name}
	return nil
}

// messageTools are a message's tool fields: an assistant's calls, or the
// call a "tool" message answers.
type messageTools struct {
	ToolCalls  []toolCallField `json:"tool_calls"`
	ToolCallID *string         `json:"tool_call_id"`
	Name       *string         `json:"name"`
}

type toolCallField struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function *struct {
		Name      string  `json:"name"`
		Arguments *string `json:"arguments"`
	} `json:"function"`
}

// toolParams are a request's validated tools: what the template is shown
// and how the reply is read.
type toolParams struct {
	tools    []chat.Tool
	choice   chat.ToolChoice
	parallel bool
	vars     map[string]any // chat_template_kwargs
}

// active says whether the reply is read for tool calls.
func (t toolParams) active() bool { return len(t.tools) > 0 && t.choice.Mode != "none" }

// OpenAI's rule for function names; it also keeps markup out of them.
var functionName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// maxTools bounds the tools of one request (OpenAI: 128).
const maxTools = 128

func (f *toolFields) validateTools() (toolParams, *APIError) {
	t := toolParams{choice: chat.ToolChoice{Mode: "auto"}, parallel: true, vars: f.ChatTemplateKwargs}
	if f.ParallelToolCalls != nil {
		t.parallel = *f.ParallelToolCalls
	}
	if len(f.Tools) > maxTools {
		return t, badRequest("tools", "invalid_value", "at most %d tools are allowed, got %d", maxTools, len(f.Tools))
	}
	seen := map[string]bool{}
	for i, d := range f.Tools {
		param := fmt.Sprintf("tools[%d]", i)
		if d.Type != "function" {
			return t, badRequest(param+".type", "invalid_value", "%s.type must be \"function\", got %q", param, d.Type)
		}
		fn := d.Function
		if fn == nil {
			return t, badRequest(param+".function", "missing_required_parameter", "%s.function is required", param)
		}
		if !functionName.MatchString(fn.Name) {
			return t, badRequest(param+".function.name", "invalid_value", "%s.function.name must be 1 to 64 letters, digits, _ or -, got %q", param, fn.Name)
		}
		if seen[fn.Name] {
			return t, badRequest(param+".function.name", "invalid_value", "two tools are named %q", fn.Name)
		}
		seen[fn.Name] = true
		params := bytes.TrimSpace(fn.Parameters)
		if bytes.Equal(params, []byte("null")) {
			params = nil
		}
		if len(params) > 0 && params[0] != '{' {
			return t, badRequest(param+".function.parameters", "invalid_value", "%s.function.parameters must be a JSON schema object", param)
		}
		t.tools = append(t.tools, chat.Tool{Type: "function", Function: chat.Function{Name: fn.Name, Description: fn.Description, Parameters: params}})
	}
	if f.ToolChoice != nil {
		t.choice = chat.ToolChoice(*f.ToolChoice)
	}
	switch {
	case t.choice.Forced() && len(t.tools) == 0:
		return t, badRequest("tool_choice", "invalid_value", "tool_choice %s needs tools", t.choice.Mode)
	case t.choice.Mode == "function" && !seen[t.choice.Name]:
		return t, badRequest("tool_choice", "invalid_value", "tool_choice names function %q, which is not among the tools", t.choice.Name)
	}
	for i, d := range f.Tools {
		// strict promises arguments valid for the schema: only a forced
		// choice is constrained by the grammar, so that is where it holds.
		if s := d.Function.Strict; s != nil && *s && !t.choice.Forced() {
			return t, badRequest(fmt.Sprintf("tools[%d].function.strict", i), "invalid_value",
				"strict is only enforced with tool_choice \"required\" or a named function: a free (auto) reply is not constrained")
		}
	}
	return t, nil
}

// messageToolFields checks message i's tool fields and copies them to msg.
func messageToolFields(i int, m messageTools, msg *chat.Message) *APIError {
	param := fmt.Sprintf("messages[%d]", i)
	if len(m.ToolCalls) > 0 && msg.Role != "assistant" {
		return badRequest(param+".tool_calls", "invalid_value", "%s has tool_calls but its role is %q: only assistant messages make calls", param, msg.Role)
	}
	for j, c := range m.ToolCalls {
		p := fmt.Sprintf("%s.tool_calls[%d]", param, j)
		if c.Type != "" && c.Type != "function" {
			return badRequest(p+".type", "invalid_value", "%s.type must be \"function\", got %q", p, c.Type)
		}
		if c.Function == nil || c.Function.Name == "" {
			return badRequest(p+".function.name", "missing_required_parameter", "%s.function.name is required", p)
		}
		args := "{}"
		if c.Function.Arguments != nil {
			args = *c.Function.Arguments
		}
		msg.ToolCalls = append(msg.ToolCalls, chat.ToolCall{ID: c.ID, Type: "function", Function: chat.FunctionCall{Name: c.Function.Name, Arguments: args}})
	}
	if msg.Role == "tool" {
		if m.ToolCallID == nil || *m.ToolCallID == "" {
			return badRequest(param+".tool_call_id", "missing_required_parameter", "%s is a tool message: tool_call_id is required", param)
		}
		msg.ToolCallID = *m.ToolCallID
	}
	if m.Name != nil {
		msg.Name = *m.Name
	}
	return nil
}

// toolGrammar is the grammar that enforces a forced tool choice (nil if
// none is forced); an unsupported schema feature is a 400 naming it.
func (s *Server) toolGrammar(t toolParams) (*grammar.Grammar, *APIError) {
	g, err := chat.ToolGrammar(s.tmpl.ToolFormat(), t.tools, t.choice, t.parallel)
	if err != nil {
		var ue *grammar.UnsupportedError
		if errors.As(err, &ue) {
			return nil, badRequest("tools", "unsupported_schema", "%v: tool_choice %s enforces the parameters schema and cannot enforce %q", err, t.choice.Mode, ue.Feature)
		}
		return nil, badRequest("tools", "invalid_value", "%v", err)
	}
	return g, nil
}

// toolReader reads a reply for tool calls, as it streams or whole.
type toolReader struct {
	p   *chat.ToolParser
	one bool // parallel_tool_calls false: a reply's later calls are dropped
}

// calls are the reply's calls, the first only if one is set.
func (t *toolReader) calls() []chat.ToolCall {
	c := t.p.Calls()
	if t.one && len(c) > 1 {
		c = c[:1]
	}
	return c
}

func (s *Server) toolReader(g generation) *toolReader {
	if !g.p.tools.active() {
		return nil
	}
	return &toolReader{p: chat.NewToolParser(s.tmpl.ToolFormat(), func() string { return "call_" + randomID() }), one: !g.p.tools.parallel}
}

// toolDelta is a streamed tool-call chunk's delta, as OpenAI writes it.
func toolDelta(d chat.Delta) map[string]any {
	fn := map[string]any{"arguments": d.Arguments}
	c := map[string]any{"index": d.Index, "function": fn}
	if d.ID != "" {
		c["id"], c["type"] = d.ID, "function"
		fn["name"] = d.Name
	}
	return map[string]any{"tool_calls": []any{c}}
}

// reason is the finish reason of a reply that made calls.
func (t *toolReader) reason(r string) string {
	if t != nil && len(t.calls()) > 0 && r == "stop" {
		return "tool_calls"
	}
	return r
}

// message is the whole reply's message: its content (null when it is
// only calls) and its tool_calls.
func (t *toolReader) message(text string) map[string]any {
	var content strings.Builder
	for _, d := range append(t.p.Add(text), t.p.Flush()...) {
		content.WriteString(d.Content)
	}
	m := map[string]any{"role": "assistant", "content": content.String()}
	if calls := t.calls(); len(calls) > 0 {
		m["tool_calls"] = calls
		if strings.TrimSpace(content.String()) == "" {
			m["content"] = nil
		}
	}
	return m
}

// stream sends a piece of streamed text as content and tool-call chunks
// (chunk makes a content chunk, send sends one); final flushes the reader.
func (t *toolReader) stream(piece string, final bool, chunk func(string) map[string]any, send func(any) bool) bool {
	ds := t.p.Add(piece)
	if final {
		ds = append(ds, t.p.Flush()...)
	}
	for _, d := range ds {
		if d.Call && t.one && d.Index > 0 {
			continue
		}
		c := chunk(d.Content)
		if d.Call {
			c["choices"].([]any)[0].(map[string]any)["delta"] = toolDelta(d)
		}
		if !send(c) {
			return false
		}
	}
	return true
}
