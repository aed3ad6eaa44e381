package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nikolalohinski/gonja/v2/exec"
)

// Tool is a function the model may call, as OpenAI's "tools" entries
// describe it.
type Tool struct {
	Type     string   `json:"type"` // "function"
	Function Function `json:"function"`
}

// Function is a tool's name, description and JSON-schema parameters.
type Function struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"` // a JSON schema (object), or empty
}

// ToolCall is one call an assistant made: OpenAI's tool_calls entry.
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"` // "function"
	Function FunctionCall `json:"function"`
}

// FunctionCall names the function called; Arguments is JSON text (an
// object), as OpenAI sends and returns it.
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Options are what a rendering may carry beyond the messages.
type Options struct {
	AddGenerationPrompt bool
	Tools               []Tool
	// Vars are extra template variables (llama.cpp's chat_template_kwargs),
	// such as tools_in_user_message or enable_thinking. They cannot replace
	// the variables Render itself sets.
	Vars map[string]any
	// Now is the time strftime_now and date_string tell templates
	// (default: time.Now).
	Now func() time.Time
}

// ToolFormat is how a model writes its tool calls.
type ToolFormat int

const (
	// Hermes is <tool_call>{"name": …, "arguments": {…}}</tool_call>, one
	// element per call: Qwen2.5, Qwen3, Hermes and the built-in fallback.
	Hermes ToolFormat = iota
	// Llama3JSON is Llama 3.1/3.2's {"name": …, "parameters": {…}} JSON, alone
	// in the reply (after <|python_tag|>, a control token that decodes to
	// no text, or bare).
	Llama3JSON
)

func (f ToolFormat) String() string {
	if f == Llama3JSON {
		return "llama3-json"
	}
	return "hermes"
}

// ToolFormat says how the model behind this template writes tool calls:
// picked from the template's own markup, or the built-in's family.
func (t *Template) ToolFormat() ToolFormat {
	switch {
	case t.builtin == Llama3:
		return Llama3JSON
	case t.builtin != "", !t.nativeTools():
		return Hermes // what withToolText tells the model to write
	case strings.Contains(t.src, "<tool_call>"):
		return Hermes
	case strings.Contains(t.src, "<|start_header_id|>"), strings.Contains(t.src, "<|python_tag|>"):
		return Llama3JSON
	}
	return Hermes
}

// nativeTools says whether the template renders tools itself; one that
// does not gets them described in its system message (see withToolText).
func (t *Template) nativeTools() bool {
	if t.builtin != "" {
		return true
	}
	return strings.Contains(t.src, "tools")
}

// --- template values ---------------------------------------------------

// keyOrders remembers the key order of the JSON objects handed to a
// template (Go maps have none), so that tojson writes them as the client
// sent them, as Python's json.dumps would. Entries live for one rendering.
var keyOrders sync.Map // uintptr (map pointer) → []string

type orderTable struct {
	keys []uintptr
	// live keeps the maps reachable until release: a map collected early
	// could give its address to another rendering's map.
	live []map[string]any
}

func (o *orderTable) release() {
	for _, k := range o.keys {
		keyOrders.Delete(k)
	}
	o.keys, o.live = nil, nil
}

// jsonValue decodes JSON text into template values (map[string]any,
// []any, string, int, float64, bool, nil), recording object key order.
func (o *orderTable) jsonValue(text []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.UseNumber()
	v, err := o.decodeValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON value")
	}
	return v, nil
}

// maxDepth bounds the nesting of JSON values a client hands to a template.
const maxDepth = 64

func (o *orderTable) decodeValue(dec *json.Decoder, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("JSON nested deeper than %d levels", maxDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			m := map[string]any{}
			var keys []string
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				v, err := o.decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				if _, dup := m[k]; !dup {
					keys = append(keys, k)
				}
				m[k] = v
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			o.remember(m, keys)
			return m, nil
		case '[':
			l := []any{}
			for dec.More() {
				v, err := o.decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				l = append(l, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return l, nil
		}
		return nil, fmt.Errorf("unexpected %v", t)
	case json.Number:
		if i, err := strconv.Atoi(t.String()); err == nil {
			return i, nil
		}
		f, err := t.Float64()
		if err != nil {
			return nil, err
		}
		return f, nil
	}
	return tok, nil // string, bool, nil
}

// object builds a template object with the given key order.
func (o *orderTable) object(kv ...any) map[string]any {
	m := make(map[string]any, len(kv)/2)
	keys := make([]string, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		k := kv[i].(string)
		keys = append(keys, k)
		m[k] = kv[i+1]
	}
	o.remember(m, keys)
	return m
}

func (o *orderTable) remember(m map[string]any, keys []string) {
	p := reflect.ValueOf(m).Pointer()
	keyOrders.Store(p, keys)
	o.keys = append(o.keys, p)
	o.live = append(o.live, m)
}

// toolValue is a tool as templates see it: {"type", "function": {"name",
// "description", "parameters"}}, as Hugging Face passes them.
func (o *orderTable) toolValue(t Tool) (map[string]any, error) {
	kv := []any{"name", t.Function.Name}
	if t.Function.Description != "" {
		kv = append(kv, "description", t.Function.Description)
	}
	if len(bytes.TrimSpace(t.Function.Parameters)) > 0 {
		p, err := o.jsonValue(t.Function.Parameters)
		if err != nil {
			return nil, fmt.Errorf("chat: tool %q: parameters: %v", t.Function.Name, err)
		}
		kv = append(kv, "parameters", p)
	}
	typ := t.Type
	if typ == "" {
		typ = "function"
	}
	return o.object("type", typ, "function", o.object(kv...)), nil
}

// callValue is a tool call as templates see it. Arguments that are JSON
// become an object (Hugging Face templates write them with tojson);
// others stay text.
func (o *orderTable) callValue(c ToolCall) map[string]any {
	var args any = c.Function.Arguments
	if v, err := o.jsonValue([]byte(c.Function.Arguments)); err == nil {
		args = v
	}
	typ := c.Type
	if typ == "" {
		typ = "function"
	}
	fn := o.object("name", c.Function.Name, "arguments", args)
	if c.ID == "" {
		return o.object("type", typ, "function", fn)
	}
	return o.object("id", c.ID, "type", typ, "function", fn)
}

// messageValue is a message as templates see it: keys a message does not
// have are absent ('tool_calls' in message is how templates tell).
func (o *orderTable) messageValue(m Message) map[string]any {
	kv := []any{"role", m.Role, "content", m.Content}
	if len(m.ToolCalls) > 0 {
		calls := make([]any, len(m.ToolCalls))
		for i, c := range m.ToolCalls {
			calls[i] = o.callValue(c)
		}
		kv = append(kv, "tool_calls", calls)
	}
	if m.ToolCallID != "" {
		kv = append(kv, "tool_call_id", m.ToolCallID)
	}
	if m.Name != "" {
		kv = append(kv, "name", m.Name)
	}
	return o.object(kv...)
}

// --- tojson as Python writes it -----------------------------------------

// toJSON is the tojson filter of Hugging Face's chat templates:
// json.dumps(x, ensure_ascii=False, indent=indent), so ", " and ": "
// separators, keys in their original order, non-ASCII text as is.
func toJSON(_ *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	if in.IsError() {
		return in
	}
	indent := -1
	if v, ok := params.KwArgs["indent"]; ok && !v.IsNil() {
		if !v.IsInteger() {
			return exec.AsValue(errors.New("tojson: indent must be an integer"))
		}
		indent = min(max(v.Integer(), 0), 16)
	}
	if len(params.Args) > 0 {
		if !params.Args[0].IsInteger() {
			return exec.AsValue(errors.New("tojson: indent must be an integer"))
		}
		indent = min(max(params.Args[0].Integer(), 0), 16)
	}
	var b strings.Builder
	if err := writePyJSON(&b, in.Interface(), indent, 0); err != nil {
		return exec.AsValue(err)
	}
	return exec.AsSafeValue(b.String())
}

func writePyJSON(b *strings.Builder, v any, indent, level int) error {
	if level > 2*maxDepth {
		return errors.New("tojson: value nested too deeply")
	}
	if b.Len() > maxOutput {
		return fmt.Errorf("tojson: more than %d bytes", maxOutput)
	}
	newline := func(l int) {
		b.WriteByte('\n')
		b.WriteString(strings.Repeat(" ", indent*l))
	}
	seq := func(n int, open, close byte, item func(i int) error) error {
		if n == 0 {
			b.WriteByte(open)
			b.WriteByte(close)
			return nil
		}
		b.WriteByte(open)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
				if indent < 0 {
					b.WriteByte(' ')
				}
			}
			if indent >= 0 {
				newline(level + 1)
			}
			if err := item(i); err != nil {
				return err
			}
		}
		if indent >= 0 {
			newline(level)
		}
		b.WriteByte(close)
		return nil
	}
	switch t := v.(type) {
	case nil:
		b.WriteString("null")
		return nil
	case *exec.Value:
		return writePyJSON(b, t.Interface(), indent, level)
	case bool:
		b.WriteString(strconv.FormatBool(t))
		return nil
	case string:
		writePyString(b, t)
		return nil
	case float64:
		b.WriteString(pyFloat(t))
		return nil
	case float32:
		b.WriteString(pyFloat(float64(t)))
		return nil
	case map[string]any:
		keys := objectKeys(t)
		return seq(len(keys), '{', '}', func(i int) error {
			writePyString(b, keys[i])
			b.WriteString(": ")
			return writePyJSON(b, t[keys[i]], indent, level+1)
		})
	case exec.Dict:
		return writePyJSON(b, &t, indent, level)
	case *exec.Dict:
		return seq(len(t.Pairs), '{', '}', func(i int) error {
			writePyString(b, t.Pairs[i].Key.String())
			b.WriteString(": ")
			return writePyJSON(b, t.Pairs[i].Value, indent, level+1)
		})
	}
	r := reflect.ValueOf(v)
	switch r.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		b.WriteString(strconv.FormatInt(r.Int(), 10))
		return nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		b.WriteString(strconv.FormatUint(r.Uint(), 10))
		return nil
	case reflect.Slice, reflect.Array:
		return seq(r.Len(), '[', ']', func(i int) error {
			return writePyJSON(b, r.Index(i).Interface(), indent, level+1)
		})
	case reflect.Map:
		keys := make([]string, 0, r.Len())
		vals := map[string]any{}
		for it := r.MapRange(); it.Next(); {
			k := fmt.Sprint(it.Key().Interface())
			keys = append(keys, k)
			vals[k] = it.Value().Interface()
		}
		sort.Strings(keys)
		return seq(len(keys), '{', '}', func(i int) error {
			writePyString(b, keys[i])
			b.WriteString(": ")
			return writePyJSON(b, vals[keys[i]], indent, level+1)
		})
	case reflect.Pointer, reflect.Interface:
		if r.IsNil() {
			b.WriteString("null")
			return nil
		}
		return writePyJSON(b, r.Elem().Interface(), indent, level)
	}
	return fmt.Errorf("tojson: cannot write a %T", v)
}

// orderedItems is the items filter: a mapping's (key, value) pairs in
// the order its keys were given (JSON objects), else sorted.
func orderedItems(_ *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	if in.IsError() {
		return in
	}
	if len(params.Args) > 0 || len(params.KwArgs) > 0 {
		return exec.AsValue(errors.New("items takes no arguments"))
	}
	switch {
	case in.IsNil():
		return exec.AsValue([]any{})
	case in.IsList():
		return in
	case !in.IsDict():
		return exec.AsValue(errors.New("items requires a mapping"))
	}
	var out []any
	if m, ok := in.Interface().(map[string]any); ok {
		for _, k := range objectKeys(m) {
			out = append(out, []any{k, m[k]})
		}
		return exec.AsValue(out)
	}
	for _, k := range in.Keys() { // sorted, or a Dict's own order
		v, _ := in.GetItem(k.Interface())
		out = append(out, []any{k.Interface(), v.Interface()})
	}
	return exec.AsValue(out)
}

// objectKeys are a map's keys in the order they were given, if known
// (keyOrders), else sorted.
func objectKeys(m map[string]any) []string {
	if o, ok := keyOrders.Load(reflect.ValueOf(m).Pointer()); ok {
		if keys := o.([]string); len(keys) == len(m) {
			return keys
		}
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func writePyString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if r < 0x20 {
				fmt.Fprintf(b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}

// pyFloat writes a float as Python's repr does for common values.
func pyFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == math.Trunc(f) && math.Abs(f) < 1e16:
		return strconv.FormatFloat(f, 'f', 1, 64)
	}
	a := math.Abs(f)
	if a >= 1e-4 && a < 1e16 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return strconv.FormatFloat(f, 'e', -1, 64)
}

// --- strftime_now ---------------------------------------------------------

// strftime formats t with the Python directives chat templates use.
func strftime(format string, t time.Time) string {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' || i+1 == len(format) {
			b.WriteByte(c)
			continue
		}
		i++
		switch format[i] {
		case 'd':
			fmt.Fprintf(&b, "%02d", t.Day())
		case 'e':
			fmt.Fprintf(&b, "%2d", t.Day())
		case 'm':
			fmt.Fprintf(&b, "%02d", int(t.Month()))
		case 'b', 'h':
			b.WriteString(t.Month().String()[:3])
		case 'B':
			b.WriteString(t.Month().String())
		case 'y':
			fmt.Fprintf(&b, "%02d", t.Year()%100)
		case 'Y':
			fmt.Fprintf(&b, "%d", t.Year())
		case 'a':
			b.WriteString(t.Weekday().String()[:3])
		case 'A':
			b.WriteString(t.Weekday().String())
		case 'H':
			fmt.Fprintf(&b, "%02d", t.Hour())
		case 'I':
			fmt.Fprintf(&b, "%02d", (t.Hour()+11)%12+1)
		case 'M':
			fmt.Fprintf(&b, "%02d", t.Minute())
		case 'S':
			fmt.Fprintf(&b, "%02d", t.Second())
		case 'p':
			if t.Hour() < 12 {
				b.WriteString("AM")
			} else {
				b.WriteString("PM")
			}
		case 'j':
			fmt.Fprintf(&b, "%03d", t.YearDay())
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			b.WriteByte(format[i])
		}
	}
	return b.String()
}

// --- tools for templates and built-ins without them --------------------

// hermesToolText is the system-prompt block that describes tools in the
// Hermes / Qwen2.5 way, for formats that have no markup of their own.
func hermesToolText(tools []Tool) (string, error) {
	var o orderTable
	defer o.release()
	var b strings.Builder
	b.WriteString("# Tools\n\nYou may call one or more functions to assist with the user query.\n\n" +
		"You are provided with function signatures within <tools></tools> XML tags:\n<tools>")
	for _, t := range tools {
		v, err := o.toolValue(t)
		if err != nil {
			return "", err
		}
		b.WriteByte('\n')
		if err := writePyJSON(&b, v, -1, 0); err != nil {
			return "", err
		}
	}
	b.WriteString("\n</tools>\n\nFor each function call, return a json object with function name and arguments " +
		"within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>")
	return b.String(), nil
}

// hermesCallText is a call as Hermes-format models write it.
func hermesCallText(c ToolCall) string {
	return "<tool_call>\n" + callJSON(c, "arguments") + "\n</tool_call>"
}

// llama3CallText is a call as Llama 3.1/3.2 write it.
func llama3CallText(c ToolCall) string { return callJSON(c, "parameters") }

// callJSON is {"name": …, argsKey: …} as Python's json.dumps writes it,
// the arguments as the JSON they hold (as text if they hold none).
func callJSON(c ToolCall, argsKey string) string {
	var o orderTable
	defer o.release()
	var args any = c.Function.Arguments
	if v, err := o.jsonValue([]byte(c.Function.Arguments)); err == nil {
		args = v
	}
	var b strings.Builder
	writePyJSON(&b, o.object("name", c.Function.Name, argsKey, args), -1, 0)
	return b.String()
}

// withToolText rewrites a conversation for a template that knows no
// tools: their description joins the system message, calls become the
// assistant's text and results become user turns, all in Hermes markup.
func withToolText(msgs []Message, tools []Tool) ([]Message, error) {
	var out []Message
	if len(tools) > 0 {
		desc, err := hermesToolText(tools)
		if err != nil {
			return nil, err
		}
		if len(msgs) > 0 && msgs[0].Role == "system" {
			out = append(out, Message{Role: "system", Content: msgs[0].Content + "\n\n" + desc})
			msgs = msgs[1:]
		} else {
			out = append(out, Message{Role: "system", Content: desc})
		}
	}
	for _, m := range msgs {
		switch {
		case m.Role == "tool":
			text := "<tool_response>\n" + m.Content + "\n</tool_response>"
			if n := len(out); n > 0 && out[n-1].Role == "user" && strings.HasSuffix(out[n-1].Content, "</tool_response>") {
				out[n-1].Content += "\n" + text
				continue
			}
			out = append(out, Message{Role: "user", Content: text})
		case len(m.ToolCalls) > 0:
			parts := []string{}
			if m.Content != "" {
				parts = append(parts, m.Content)
			}
			for _, c := range m.ToolCalls {
				parts = append(parts, hermesCallText(c))
			}
			out = append(out, Message{Role: m.Role, Content: strings.Join(parts, "\n")})
		default:
			out = append(out, Message{Role: m.Role, Content: m.Content})
		}
	}
	return out, nil
}

// untrustedToolText lists the client's text in tools and calls, which
// becomes prompt markup: Tokens refuses it if it spells special tokens.
func untrustedToolText(msgs []Message, tools []Tool) []string {
	var out []string
	for _, t := range tools {
		out = append(out, t.Function.Name, t.Function.Description, string(t.Function.Parameters))
	}
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			out = append(out, c.ID, c.Function.Name, c.Function.Arguments)
		}
		out = append(out, m.ToolCallID, m.Name)
	}
	return slices.DeleteFunc(out, func(s string) bool { return s == "" })
}

// appendStrings adds the strings in v (a template variable from the
// client: chat_template_kwargs) to out, for the special-token check.
func appendStrings(out []string, v any, depth int) []string {
	if depth > maxDepth {
		return out
	}
	switch t := v.(type) {
	case string:
		if t != "" {
			out = append(out, t)
		}
	case map[string]any:
		for k, x := range t {
			out = appendStrings(append(out, k), x, depth+1)
		}
	case []any:
		for _, x := range t {
			out = appendStrings(out, x, depth+1)
		}
	}
	return out
}
