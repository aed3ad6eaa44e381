package chat

import (
	"fmt"
	"strings"
	"testing"
)

// parsed is what a reply parses to: its content and its calls, with each
// call's streamed arguments joined.
type parsed struct {
	content  string
	calls    []ToolCall
	streamed []string
}

func parseIn(f ToolFormat, text string, chunk int) parsed {
	n := 0
	p := NewToolParser(f, func() string { n++; return fmt.Sprintf("call_%d", n) })
	var r parsed
	take := func(ds []Delta) {
		for _, d := range ds {
			if !d.Call {
				r.content += d.Content
				continue
			}
			for len(r.streamed) <= d.Index {
				r.streamed = append(r.streamed, "")
			}
			r.streamed[d.Index] += d.Arguments
		}
	}
	for len(text) > 0 {
		k := min(chunk, len(text))
		take(p.Add(text[:k]))
		text = text[k:]
	}
	take(p.Flush())
	r.calls = p.Calls()
	return r
}

func TestToolParser(t *testing.T) {
	type call struct{ name, args string }
	cases := []struct {
		name    string
		format  ToolFormat
		in      string
		content string
		calls   []call
	}{
		{"hermes one", Hermes, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>", "",
			[]call{{"get_weather", `{"city": "Paris"}`}}},
		{"hermes two with text", Hermes, "Let me look.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": [1, {\"y\": \"}\"}]}}\n</tool_call>\n<tool_call>\n{\"name\": \"b\", \"arguments\": {}}\n</tool_call>", "Let me look.\n",
			[]call{{"a", `{"x": [1, {"y": "}"}]}`}, {"b", `{}`}}},
		{"hermes arguments first", Hermes, `<tool_call>{"arguments": {"q": 1}, "name": "f"}</tool_call>`, "", []call{{"f", `{"q": 1}`}}},
		{"hermes arguments as a string", Hermes, `<tool_call>{"name": "f", "arguments": "{\"q\": 1}"}</tool_call>`, "", []call{{"f", `{"q": 1}`}}},
		{"hermes no arguments", Hermes, `<tool_call>{"name": "now"}</tool_call>`, "", []call{{"now", `{}`}}},
		{"hermes think then call", Hermes, "<think>\nhmm <tool\n</think>\n\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": \"b\"}}\n</tool_call>", "<think>\nhmm <tool\n</think>\n\n", []call{{"f", `{"a": "b"}`}}},
		{"hermes plain text", Hermes, "Paris is sunny < 30°C <tool", "Paris is sunny < 30°C <tool", nil},
		{"hermes not json", Hermes, "<tool_call>get_weather(Paris)</tool_call> ok", "<tool_call>get_weather(Paris)</tool_call> ok", nil},
		{"hermes not json then a call", Hermes, "<tool_call>0<tool_call>{\"name\": \"f\"}</tool_call> ok", "<tool_call>0 ok", []call{{"f", `{}`}}},
		{"hermes object without name", Hermes, `<tool_call>{"x": 1}</tool_call>`, `<tool_call>{"x": 1}</tool_call>`, nil},
		{"hermes cut in the arguments", Hermes, `<tool_call>{"name": "f", "arguments": {"a": "lo`, "", []call{{"f", `{"a": "lo`}}},
		{"hermes cut before the name", Hermes, `<tool_call>{"na`, `<tool_call>{"na`, nil},
		{"llama3 bare", Llama3JSON, `{"name": "get_weather", "parameters": {"city": "Paris", "unit": "c"}}`, "", []call{{"get_weather", `{"city": "Paris", "unit": "c"}`}}},
		{"llama3 python tag and two calls", Llama3JSON, "<|python_tag|>{\"name\": \"a\", \"parameters\": {}}; {\"type\": \"function\", \"name\": \"b\", \"parameters\": {\"n\": -1.5e3}}", "", []call{{"a", `{}`}, {"b", `{"n": -1.5e3}`}}},
		{"llama3 text", Llama3JSON, "The weather is {nice}.", "The weather is {nice}.", nil},
		{"llama3 other json", Llama3JSON, `{"name": "Bob", "age": 3}`, `{"name": "Bob", "age": 3}`, nil},
		{"llama3 call then text", Llama3JSON, `{"name": "a", "parameters": {"x": true}} and more`, " and more", []call{{"a", `{"x": true}`}}},
		{"llama3 leading space", Llama3JSON, "  \n{\"name\": \"a\", \"parameters\": {\"s\": \"\\\"}\"}}", "", []call{{"a", `{"s": "\"}"}`}}},
	}
	for _, c := range cases {
		for _, chunk := range []int{1, 2, 3, 7, 1 << 20} {
			r := parseIn(c.format, c.in, chunk)
			name := fmt.Sprintf("%s (chunks of %d)", c.name, chunk)
			if r.content != c.content {
				t.Errorf("%s: content %q, want %q", name, r.content, c.content)
			}
			if len(r.calls) != len(c.calls) {
				t.Errorf("%s: calls %+v, want %v", name, r.calls, c.calls)
				continue
			}
			for i, w := range c.calls {
				g := r.calls[i]
				if g.Function.Name != w.name || g.Function.Arguments != w.args || g.Type != "function" || g.ID != fmt.Sprintf("call_%d", i+1) {
					t.Errorf("%s: call %d is %+v, want %v", name, i, g, w)
				}
				if r.streamed[i] != g.Function.Arguments {
					t.Errorf("%s: call %d streamed %q, its arguments are %q", name, i, r.streamed[i], g.Function.Arguments)
				}
			}
		}
	}
}

// However the reply is cut into pieces, it parses the same, and the
// streamed arguments add up to each call's arguments.
func FuzzToolParser(f *testing.F) {
	for _, s := range []string{
		"<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": [1, \"]\"]}}\n</tool_call>",
		`{"name": "a", "parameters": {}}; {"name": "b", "parameters": {"x": "y"}}`,
		`<tool_call>{"name": "f", "arguments": "{}"}`, "text <tool_ca", `{"a": {"b": }`, `<tool_call>{]]}}</tool_call>`,
	} {
		f.Add(s, uint8(1), false)
		f.Add(s, uint8(5), true)
	}
	f.Fuzz(func(t *testing.T, in string, chunk uint8, llama bool) {
		format := Hermes
		if llama {
			format = Llama3JSON
		}
		whole := parseIn(format, in, len(in)+1)
		cut := parseIn(format, in, int(chunk%16)+1)
		if whole.content != cut.content || fmt.Sprint(whole.calls) != fmt.Sprint(cut.calls) {
			t.Fatalf("whole: %q %v\ncut:   %q %v", whole.content, whole.calls, cut.content, cut.calls)
		}
		for i, c := range cut.calls {
			if cut.streamed[i] != c.Function.Arguments {
				t.Fatalf("call %d streamed %q, arguments %q", i, cut.streamed[i], c.Function.Arguments)
			}
		}
		if len(whole.calls) == 0 && whole.content != in {
			t.Fatalf("no call, content %q of %q", whole.content, in)
		}
		if len(whole.content) > len(in) || !strings.Contains(in, strings.TrimSpace(whole.content)) && len(whole.calls) == 0 {
			t.Fatalf("content %q of %q", whole.content, in)
		}
	})
}

// The parser's cost per reply, fed a token-sized piece at a time.
func BenchmarkToolParser(b *testing.B) {
	reply := "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": [1, 2, 3], \"note\": \"" +
		strings.Repeat("x", 400) + "\"}}\n</tool_call>\n" + strings.Repeat("Some more text after it. ", 20)
	b.SetBytes(int64(len(reply)))
	for b.Loop() {
		p := NewToolParser(Hermes, func() string { return "call_1" })
		for i := 0; i < len(reply); i += 4 {
			p.Add(reply[i:min(i+4, len(reply))])
		}
		p.Flush()
	}
}
