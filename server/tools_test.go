package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"shade/chat"
	"shade/engine"
	"shade/grammar"
)

const weatherSchema = `{"type": "object", "properties": {"city": {"type": "string", "maxLength": 20}, "days": {"type": "integer"}, "unit": {"enum": ["c", "f"]}}, "required": ["city", "unit"], "additionalProperties": false}`

var toolsJSON = `[{"type": "function", "function": {"name": "get_weather", "description": "The weather in a city.", "parameters": ` + weatherSchema + `}},
	{"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {"zone": {"type": "string", "maxLength": 8}}, "required": ["zone"]}}}]`

func mustParse(t *testing.T, src string) *chat.Template {
	t.Helper()
	tmpl, err := chat.Parse(src, "", "")
	if err != nil {
		t.Fatal(err)
	}
	return tmpl
}

func TestDecodeTools(t *testing.T) {
	lim := Limits{MaxTokens: 100, MaxStop: 4}
	ok := `{"messages": [{"role": "user", "content": "hi"},
		{"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
		{"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "sunny"}],
		"tools": ` + toolsJSON + `, "tool_choice": {"type": "function", "function": {"name": "get_time"}}, "parallel_tool_calls": false}`
	msgs, p, err := DecodeChat([]byte(ok), lim, "")
	if err != nil {
		t.Fatal(err)
	}
	want := []chat.Message{{Role: "user", Content: "hi"},
		{Role: "assistant", ToolCalls: []chat.ToolCall{{ID: "call_1", Type: "function", Function: chat.FunctionCall{Name: "get_weather", Arguments: `{"city": "Paris"}`}}}},
		{Role: "tool", Content: "sunny", ToolCallID: "call_1", Name: "get_weather"}}
	if fmt.Sprint(msgs) != fmt.Sprint(want) {
		t.Errorf("messages %+v\nwant %+v", msgs, want)
	}
	if len(p.tools.tools) != 2 || p.tools.choice != (chat.ToolChoice{Mode: "function", Name: "get_time"}) || p.tools.parallel || !p.tools.active() {
		t.Errorf("tools %+v", p.tools)
	}
	for _, c := range []struct{ body, param string }{
		{`{"messages": [{"role": "tool", "content": "x"}]}`, "messages[0].tool_call_id"},
		{`{"messages": [{"role": "user", "content": "x", "tool_calls": [{"function": {"name": "f"}}]}]}`, "messages[0].tool_calls"},
		{`{"messages": [{"role": "assistant", "tool_calls": [{"function": {"arguments": "{}"}}]}]}`, "messages[0].tool_calls[0].function.name"},
		{`{"messages": [{"role": "assistant", "tool_calls": {"x": 1}}]}`, "messages.tool_calls"},
		{`{"messages": [{"role": "user", "content": "x"}], "tool_choice": "always"}`, "tool_choice"},
		{`{"messages": [{"role": "user", "content": "x"}], "tool_choice": "required"}`, "tool_choice"},
		{`{"messages": [{"role": "user", "content": "x"}], "tools": ` + toolsJSON + `, "tool_choice": {"type": "function", "function": {"name": "nope"}}}`, "tool_choice"},
		{`{"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function", "function": {"name": "a b"}}]}`, "tools[0].function.name"},
		{`{"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "retrieval"}]}`, "tools[0].type"},
		{`{"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function", "function": {"name": "a", "parameters": [1]}}]}`, "tools[0].function.parameters"},
		{`{"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function", "function": {"name": "a"}}, {"type": "function", "function": {"name": "a"}}]}`, "tools[1].function.name"},
		{`{"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function", "function": {"name": "a", "strict": true}}]}`, "tools[0].function.strict"},
		{`{"messages": [{"role": "user", "content": "x"}], "tools": 3}`, "tools"},
	} {
		_, _, err := DecodeChat([]byte(c.body), lim, "")
		if err == nil || err.Param == nil || *err.Param != c.param || err.Status != http.StatusBadRequest {
			t.Errorf("%s: %+v, want a 400 naming %s", c.body, err, c.param)
		}
	}
}

var (
	tinyMu   sync.Mutex
	tinyEngs = map[string]*engine.Engine{}
)

// tiny loads a conformance model (random weights) once for the package.
func tiny(t *testing.T, name string) *engine.Engine {
	t.Helper()
	path := filepath.Join(conformanceDir, name)
	if _, err := os.Stat(path); err != nil {
		t.Skipf("%s not present: the shared conformance pack is needed", path)
	}
	tinyMu.Lock()
	defer tinyMu.Unlock()
	if e := tinyEngs[name]; e != nil {
		return e
	}
	e, err := engine.Load(path, 2)
	if err != nil {
		t.Fatal(err)
	}
	tinyEngs[name] = e
	return e
}

type toolResp struct {
	Choices []struct {
		Message struct {
			Content   *string         `json:"content"`
			ToolCalls []chat.ToolCall `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
}

// streamedCalls reassembles the tool calls of a stream's deltas, checking
// that each call's first delta carries its id, type and name.
func streamedCalls(t *testing.T, evs []map[string]any) []chat.ToolCall {
	var calls []chat.ToolCall
	for _, e := range evs {
		for _, c := range e["choices"].([]any) {
			d, _ := c.(map[string]any)["delta"].(map[string]any)
			tcs, _ := d["tool_calls"].([]any)
			for _, tc := range tcs {
				tc := tc.(map[string]any)
				i := int(tc["index"].(float64))
				fn := tc["function"].(map[string]any)
				if i == len(calls) {
					id, _ := tc["id"].(string)
					name, _ := fn["name"].(string)
					if id == "" || tc["type"] != "function" || name == "" {
						t.Fatalf("first delta of call %d: %v", i, tc)
					}
					calls = append(calls, chat.ToolCall{ID: id, Type: "function", Function: chat.FunctionCall{Name: name}})
				} else if i != len(calls)-1 {
					t.Fatalf("delta for call %d after call %d", i, len(calls)-1)
				}
				args, _ := fn["arguments"].(string)
				calls[i].Function.Arguments += args
			}
		}
	}
	return calls
}

// With tool_choice required or a named function, whatever the weights
// (random ones: the tiny conformance models; stories260K, which never saw
// a tool), the reply is calls whose arguments validate against their
// function's schema, whole and streamed alike, in each model's format.
// By default greedy on the two random-weight vocabularies;
// SHADE_TOOLS_LONG=1 adds stories260K and sampled replies.
func TestForcedToolCallsValidate(t *testing.T) {
	schemas := map[string]string{"get_weather": weatherSchema, "get_time": `{"type": "object", "properties": {"zone": {"type": "string", "maxLength": 8}}, "required": ["zone"]}`}
	models, temps := []string{"llama3-tiny-q4_0.gguf", "qwen2-tiny-q8_0.gguf"}, []string{"0"}
	if !testing.Short() && os.Getenv("SHADE_TOOLS_LONG") != "" {
		models, temps = append(models, "stories260K.gguf"), append(temps, "1.5", "0.8")
	}
	for _, name := range models {
		e := tiny(t, name)
		s := New(e, Options{})
		ts := httptest.NewServer(s.Handler())
		for _, choice := range []string{`"required"`, `{"type": "function", "function": {"name": "get_weather"}}`} {
			for _, temp := range temps {
				body := `{"messages": [{"role": "user", "content": "Weather in Paris?"}], "tools": ` + toolsJSON +
					`, "tool_choice": ` + choice + `, "temperature": ` + temp + `, "seed": 3, "max_tokens": 120`
				label := fmt.Sprintf("%s %s temp %s (%s)", name, choice, temp, s.tmpl.ToolFormat())
				resp, b := post(t, ts.URL+"/v1/chat/completions", body+"}")
				if resp.StatusCode != 200 {
					t.Fatalf("%s: %d %s", label, resp.StatusCode, b)
				}
				var r toolResp
				if err := json.Unmarshal(b, &r); err != nil {
					t.Fatal(err)
				}
				m := r.Choices[0].Message
				if len(m.ToolCalls) == 0 || r.Choices[0].FinishReason != "tool_calls" {
					t.Fatalf("%s: no calls: %s", label, b)
				}
				for _, c := range m.ToolCalls {
					if strings.HasPrefix(choice, "{") && c.Function.Name != "get_weather" {
						t.Errorf("%s: called %s", label, c.Function.Name)
					}
					if err := grammar.ValidateJSON([]byte(schemas[c.Function.Name]), []byte(c.Function.Arguments)); err != nil {
						t.Errorf("%s: arguments %s: %v", label, c.Function.Arguments, err)
					}
					if !strings.HasPrefix(c.ID, "call_") || c.Type != "function" {
						t.Errorf("%s: call %+v", label, c)
					}
				}
				t.Logf("%s: %d calls, first %s(%s)", label, len(m.ToolCalls), m.ToolCalls[0].Function.Name, m.ToolCalls[0].Function.Arguments)
				if temp != "0" {
					continue
				}
				// Streamed: the same calls (greedy), as deltas.
				resp, b = post(t, ts.URL+"/v1/chat/completions", body+`, "stream": true}`)
				evs := mustEvents(t, b)
				calls := streamedCalls(t, evs)
				_, reason := streamText(evs)
				if len(calls) != len(m.ToolCalls) || reason != "tool_calls" {
					t.Fatalf("%s: streamed %+v (%s), whole %+v", label, calls, reason, m.ToolCalls)
				}
				for i := range calls {
					if calls[i].Function != m.ToolCalls[i].Function {
						t.Errorf("%s: streamed call %d %+v, whole %+v", label, i, calls[i].Function, m.ToolCalls[i].Function)
					}
				}
			}
		}
		ts.Close()
		s.Close()
	}
}

// A conversation that went through a call continues: the tool's result
// is rendered and the model answers; tool_choice none shows no tools.
func TestToolFollowUp(t *testing.T) {
	_, url := start(t, Options{})
	body := `{"messages": [{"role": "user", "content": "Weather in Paris?"},
		{"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\", \"unit\": \"c\"}"}}]},
		{"role": "tool", "tool_call_id": "call_1", "content": "sunny, 21 C"}],
		"tools": ` + toolsJSON + `, "max_tokens": 8, "temperature": 0}`
	for _, b := range []string{body, strings.Replace(body, `"max_tokens"`, `"tool_choice": "none", "max_tokens"`, 1)} {
		resp, out := post(t, url+"/v1/chat/completions", b)
		var r toolResp
		if resp.StatusCode != 200 || json.Unmarshal(out, &r) != nil || r.Choices[0].Message.Content == nil {
			t.Fatalf("%d %s", resp.StatusCode, out)
		}
		// Streamed, the reply (no call: this model writes text) is the same content.
		_, sb := post(t, url+"/v1/chat/completions", strings.TrimSuffix(b, "}")+`, "stream": true}`)
		evs := mustEvents(t, sb)
		text, reason := streamText(evs)
		if text != *r.Choices[0].Message.Content || reason != r.Choices[0].FinishReason || len(streamedCalls(t, evs)) != 0 {
			t.Errorf("streamed %q (%s), whole %q (%s)", text, reason, *r.Choices[0].Message.Content, r.Choices[0].FinishReason)
		}
	}
	// parallel_tool_calls false keeps a reply's first call, whole and streamed.
	tr := &toolReader{p: chat.NewToolParser(chat.Hermes, func() string { return "call_x" }), one: true}
	two := "<tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call><tool_call>{\"name\": \"b\", \"arguments\": {}}</tool_call>"
	var sent []map[string]any
	if !tr.stream(two, true, func(string) map[string]any {
		return map[string]any{"choices": []any{map[string]any{"delta": map[string]any{}}}}
	}, func(v any) bool {
		var m map[string]any // as a client reads it
		b, _ := json.Marshal(v)
		json.Unmarshal(b, &m)
		sent = append(sent, m)
		return true
	}) {
		t.Fatal("send failed")
	}
	if calls := streamedCalls(t, sent); len(calls) != 1 || calls[0].Function.Name != "a" || len(tr.calls()) != 1 || tr.reason("stop") != "tool_calls" {
		t.Errorf("one call: streamed %+v, calls %+v", calls, tr.calls())
	}
	// chat_template_kwargs reach the template; what Render sets itself stays.
	s := New(stories(t), Options{Template: mustParse(t, `{{ greeting }}{{ messages | length }}{{ add_generation_prompt }}`)})
	ts := httptest.NewServer(s.Handler())
	defer func() { ts.Close(); s.Close() }()
	resp, out := post(t, ts.URL+"/v1/chat/completions", `{"messages": [{"role": "user", "content": "x"}], "max_tokens": 2,
		"chat_template_kwargs": {"greeting": "hello", "messages": [], "add_generation_prompt": false}}`)
	if resp.StatusCode != 200 {
		t.Fatalf("chat_template_kwargs: %d %s", resp.StatusCode, out)
	}
	msgs, p, _ := DecodeChat([]byte(`{"messages": [{"role": "user", "content": "x"}], "chat_template_kwargs": {"greeting": "hello", "messages": []}}`), Limits{MaxTokens: 8}, "")
	if got, err := s.tmpl.RenderWith(msgs, chat.Options{AddGenerationPrompt: true, Vars: p.tools.vars}); err != nil || got.Text != "hello1True" {
		t.Errorf("kwargs rendered %q %v", got.Text, err)
	}
	// A schema feature the grammar cannot enforce is refused, named.
	bad := `{"messages": [{"role": "user", "content": "x"}], "tool_choice": "required", "tools": [{"type": "function", "function": {"name": "a", "parameters": {"type": "object", "properties": {"s": {"type": "string", "pattern": "^a+$"}}}}}]}`
	resp, out = post(t, url+"/v1/chat/completions", bad)
	if resp.StatusCode != 400 || !strings.Contains(string(out), "pattern") {
		t.Errorf("unsupported schema: %d %s", resp.StatusCode, out)
	}
}

// Any request body: decoding, rendering with every built-in and a
// tool-aware Jinja template, and the forced-choice grammar end in a value
// or an error, never a panic.
func FuzzChatTools(f *testing.F) {
	f.Add(`{"messages": [{"role": "user", "content": "x"}, {"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": "{\"a\": [1, {\"b\": null}]}"}}]}, {"role": "tool", "tool_call_id": "c", "content": "r"}], "tools": ` + toolsJSON + `, "tool_choice": "required"}`)
	f.Add(`{"messages": [{"role": "tool", "tool_call_id": "c", "content": null}], "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"x": {"$ref": "#"}}}}}], "tool_choice": {"type": "function", "function": {"name": "f"}}}`)
	f.Add(`{"messages": [{"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "f", "arguments": "{oops"}}]}], "parallel_tool_calls": false}`)
	jin, err := chat.Parse(`{% for t in tools %}{{ t | tojson(indent=2) }}{% for k, v in t.function.parameters | items %}{{ k }}{% endfor %}{% endfor %}`+
		`{% for m in messages %}{{ m.role }}{% if 'tool_calls' in m %}{% for c in m.tool_calls %}{{ c.function.arguments | tojson }}{% endfor %}{% endif %}{{ m.content }}{% endfor %}`, "<s>", "</s>")
	if err != nil {
		f.Fatal(err)
	}
	var tmpls []*chat.Template
	for _, name := range []string{chat.Llama2, chat.Llama3, chat.ChatML} {
		b, _ := chat.Builtin(name, "<s>", "</s>")
		tmpls = append(tmpls, b)
	}
	tmpls = append(tmpls, jin)
	f.Fuzz(func(t *testing.T, body string) {
		msgs, p, aerr := DecodeChat([]byte(body), Limits{MaxTokens: 64, MaxStop: 4}, "")
		if aerr != nil {
			return
		}
		for _, tmpl := range tmpls {
			tmpl.RenderWith(msgs, chat.Options{AddGenerationPrompt: true, Tools: p.tools.tools})
			chat.ToolGrammar(tmpl.ToolFormat(), p.tools.tools, p.tools.choice, p.tools.parallel)
		}
	})
}
