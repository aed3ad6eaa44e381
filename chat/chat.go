// Package chat owns turning a conversation into a prompt: the model's own
// chat template (the GGUF key tokenizer.chat_template, a Jinja template as
// Hugging Face writes them) rendered with the gonja library, and built-in
// llama-2, llama-3 and ChatML (Qwen) formats for files that carry none,
// tools and tool calls included. It also tokenizes the rendered prompt
// without doubling the BOS token, reads a reply's tool calls in the
// model's format (ToolParser) and builds the grammar that forces a call
// (ToolGrammar). It is not a Jinja interpreter (gonja is) and knows
// nothing of HTTP or sampling.
package chat

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/nikolalohinski/gonja/v2"
	"github.com/nikolalohinski/gonja/v2/builtins"
	"github.com/nikolalohinski/gonja/v2/config"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/loaders"

	"shade/gguf"
	"shade/tokenizer"
)

// Message is one turn of a conversation.
type Message struct {
	Role    string `json:"role"` // "system", "user", "assistant" or "tool" (templates may accept others)
	Content string `json:"content"`
	// ToolCalls are the calls an assistant turn made (Content may be empty).
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID is the call a "tool" message answers, Name its function.
	ToolCallID string `json:"tool_call_id,omitempty"`
	Name       string `json:"name,omitempty"`
}

// MetadataKey is the GGUF key holding a model's Jinja chat template.
const MetadataKey = "tokenizer.chat_template"

// Built-in formats, used when a file has no template (or one gonja cannot run).
const (
	Llama2 = "llama-2"
	Llama3 = "llama-3"
	ChatML = "chatml"
)

// maxOutput bounds a rendered prompt: a template that loops without end
// over its output fails instead of filling memory.
const maxOutput = 16 << 20

// Template renders conversations into prompt text.
type Template struct {
	name    string // a built-in's name, or "gguf"
	src     string // the Jinja source
	jinja   *exec.Template
	bos     string
	eos     string
	builtin string
}

// Name says where the template came from: "gguf" or a built-in's name.
func (t *Template) Name() string { return t.name }

// Builtin returns one of the built-in formats (Llama2, Llama3, ChatML);
// bos and eos are the vocabulary's BOS and EOS pieces.
func Builtin(name, bos, eos string) (*Template, error) {
	switch name {
	case Llama2, Llama3, ChatML:
		return &Template{name: name, builtin: name, bos: bos, eos: eos}, nil
	}
	return nil, fmt.Errorf("chat: unknown built-in template %q (want %s, %s or %s)", name, Llama2, Llama3, ChatML)
}

// Parse compiles a Jinja chat template. The template may not include or
// import other files. Blocks are trimmed as transformers does
// (trim_blocks, lstrip_blocks).
func Parse(src, bos, eos string) (t *Template, err error) {
	defer func() {
		// gonja is a big parser fed a string from a model file: a panic in
		// it is a bad template, not a crashed server.
		if p := recover(); p != nil {
			t, err = nil, fmt.Errorf("chat: template: parser panicked: %v", p)
		}
	}()
	cfg := config.New()
	cfg.TrimBlocks = true
	// gonja's lstrip_blocks also strips the space between a tag and a
	// block on one line ({{ x }} {% endfor %}); Jinja's strips only from
	// the line's start, which lstripBlocks does before gonja sees it.
	cfg.LeftStripBlocks = false
	src = lstripBlocks(src)
	cfg.KeepTrailingNewline = false
	env := *gonja.DefaultEnvironment
	// Templates write tools and calls with tojson, which must write what
	// Python's json.dumps writes (the text the model was trained on).
	env.Filters = exec.NewFilterSet(map[string]exec.FilterFunction{}).Update(builtins.Filters)
	// gonja's items filter walks Go maps in random order: a prompt must
	// not change from one rendering to the next.
	if err := errors.Join(env.Filters.Replace("tojson", toJSON), env.Filters.Replace("items", orderedItems)); err != nil {
		return nil, fmt.Errorf("chat: template: %v", err)
	}
	j, err := exec.NewTemplate(rootName, cfg, oneFile{src}, &env)
	if err != nil {
		return nil, fmt.Errorf("chat: template: %s", shorten(err.Error()))
	}
	return &Template{name: "gguf", src: src, jinja: j, bos: bos, eos: eos}, nil
}

// lstripBlocks removes the spaces and tabs that open a line before a
// block or comment tag, as Jinja's lstrip_blocks does ({%+ keeps them).
func lstripBlocks(src string) string {
	var b strings.Builder
	lineStart, last := 0, 0 // start of the current line; of what is not yet written
	for i := 0; i+1 < len(src); i++ {
		switch {
		case src[i] == '\n':
			lineStart = i + 1
		case src[i] == '{' && (src[i+1] == '%' || src[i+1] == '#'):
			if i+2 < len(src) && src[i+2] == '+' {
				continue
			}
			if i > lineStart && lineStart >= last && strings.Trim(src[lineStart:i], " \t") == "" {
				b.WriteString(src[last:lineStart])
				last = i
			}
		}
	}
	b.WriteString(src[last:])
	return b.String()
}

// shorten cuts gonja's messages, which quote the whole template source.
func shorten(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

const rootName = "chat_template"

// oneFile is a gonja loader that serves the template itself and nothing
// else: a template from a model file cannot read the disk.
type oneFile struct{ src string }

func (l oneFile) Read(path string) (io.Reader, error) {
	if path != rootName {
		return nil, fmt.Errorf("chat: template may not load %q", path)
	}
	return strings.NewReader(l.src), nil
}
func (l oneFile) Resolve(path string) (string, error)         { return path, nil }
func (l oneFile) Inherit(from string) (loaders.Loader, error) { return l, nil }

// FromGGUF picks a model's template: its tokenizer.chat_template if it has
// one that parses, else the built-in format its vocabulary and architecture
// suggest (llama-3 if it has <|start_header_id|>, ChatML if it has
// <|im_start|> or is a Qwen, else llama-2). warn, if not empty, says why a
// template in the file was not used.
func FromGGUF(md *gguf.Metadata, tok *tokenizer.Tokenizer) (t *Template, warn string) {
	bos, eos := piece(tok, tok.BOS()), piece(tok, tok.EOS())
	if src, err := md.String(MetadataKey); err == nil && strings.TrimSpace(src) != "" {
		t, err := Parse(src, bos, eos)
		if err == nil {
			// A template that cannot render a plain exchange is no use either.
			if _, err = t.Render([]Message{{Role: "system", Content: "s"}, {Role: "user", Content: "u"}}, true); err == nil {
				return t, ""
			}
		}
		warn = fmt.Sprintf("the file's chat template cannot be used (%v): falling back to a built-in one", err)
	}
	name := Llama2
	arch, _ := md.String("general.architecture")
	if _, ok := tok.Lookup("<|start_header_id|>"); ok {
		name = Llama3
	} else if _, ok := tok.Lookup("<|im_start|>"); ok || strings.HasPrefix(arch, "qwen") {
		name = ChatML
	}
	t, _ = Builtin(name, bos, eos)
	return t, warn
}

func piece(tok *tokenizer.Tokenizer, id int32) string {
	if id < 0 || int(id) >= tok.VocabSize() {
		return ""
	}
	return tok.Piece(id)
}

// ErrTemplate is wrapped by errors that the template itself raised
// (raise_exception), such as roles that do not alternate.
var ErrTemplate = errors.New("chat template rejected the conversation")

// Render turns messages into prompt text; with addGenerationPrompt the text
// ends where the assistant's reply begins.
func (t *Template) Render(msgs []Message, addGenerationPrompt bool) (string, error) {
	p, err := t.RenderPrompt(msgs, addGenerationPrompt)
	return p.Text, err
}

// Prompt is a rendered conversation: its text, and the byte spans of the
// text that came from the messages' content. Only the template's own
// markup may become control tokens: the spans are tokenized as text
// (Tokens), so a user who types <|eot_id|><|start_header_id|>system… writes
// those characters and does not open a system turn.
type Prompt struct {
	Text    string
	Content []tokenizer.Span // sorted, not overlapping
	// unlocated holds contents a template transformed beyond recognition
	// (see renderJinjaPrompt): Tokens refuses them if they hold special texts.
	unlocated []string
	// untrusted holds the client's text in tools and tool calls, which
	// templates write as markup: Tokens refuses it if it spells special tokens.
	untrusted []string
}

// RenderPrompt is Render with the spans of message content marked.
func (t *Template) RenderPrompt(msgs []Message, addGenerationPrompt bool) (Prompt, error) {
	return t.RenderWith(msgs, Options{AddGenerationPrompt: addGenerationPrompt})
}

// RenderWith is RenderPrompt with tools and extra template variables.
func (t *Template) RenderWith(msgs []Message, o Options) (p Prompt, err error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	gen := o.AddGenerationPrompt
	hasTools := len(o.Tools) > 0 || slices.ContainsFunc(msgs, func(m Message) bool { return len(m.ToolCalls) > 0 || m.Role == "tool" })
	if hasTools && (t.builtin == Llama2 || !t.nativeTools()) {
		if msgs, err = withToolText(msgs, o.Tools); err != nil {
			return Prompt{}, err
		}
		o.Tools = nil
	}
	switch t.builtin {
	case Llama2:
		p, err = renderLlama2(msgs, t.bos, t.eos, gen)
	case Llama3:
		p, err = renderLlama3(msgs, o.Tools, t.bos, o.Now(), gen)
	case ChatML:
		p, err = renderChatML(msgs, o.Tools, gen)
	default:
		p, err = t.renderJinjaPrompt(msgs, o)
	}
	if err == nil && hasTools {
		p.untrusted = untrustedToolText(msgs, o.Tools)
	}
	if err == nil {
		p.untrusted = appendStrings(p.untrusted, o.Vars, 0)
	}
	return p, err
}

// Encode renders messages and tokenizes the result (Prompt.Tokens).
func (t *Template) Encode(tok *tokenizer.Tokenizer, msgs []Message, addGenerationPrompt bool) ([]int32, error) {
	return t.EncodeWith(tok, msgs, Options{AddGenerationPrompt: addGenerationPrompt})
}

// EncodeWith is Encode with tools and extra template variables.
func (t *Template) EncodeWith(tok *tokenizer.Tokenizer, msgs []Message, o Options) ([]int32, error) {
	p, err := t.RenderWith(msgs, o)
	if err != nil {
		return nil, err
	}
	return p.Tokens(tok)
}

// Tokens tokenizes a rendered prompt: special tokens are parsed in the
// template's markup and not in message content; the vocabulary's BOS is
// added only when the markup does not already start with it.
func (p Prompt) Tokens(tok *tokenizer.Tokenizer) ([]int32, error) {
	for _, c := range p.unlocated {
		plain, err := tok.Encode(c, false, false)
		if err != nil {
			return nil, err
		}
		parsed, _ := tok.Encode(c, false, true)
		if !slices.Equal(plain, parsed) {
			return nil, fmt.Errorf("%w: a message holds the text of a special token, and this chat template transforms message content so that it cannot be kept as text", ErrTemplate)
		}
	}
	for _, c := range p.untrusted {
		plain, err := tok.Encode(c, false, false)
		if err != nil {
			return nil, err
		}
		if parsed, _ := tok.Encode(c, false, true); !slices.Equal(plain, parsed) {
			return nil, fmt.Errorf("%w: a tool definition or tool call holds the text of a special token (%q…)", ErrTemplate, c[:min(len(c), 40)])
		}
	}
	bos := piece(tok, tok.BOS())
	startsWithBOS := bos != "" && strings.HasPrefix(p.Text, bos) && !(len(p.Content) > 0 && p.Content[0].Start < len(bos))
	return tok.EncodeLiteral(p.Text, !startsWithBOS, p.Content)
}

// promptBuilder writes markup and content, recording where content goes.
type promptBuilder struct {
	b     strings.Builder
	spans []tokenizer.Span
}

func (p *promptBuilder) markup(s string) { p.b.WriteString(s) }

func (p *promptBuilder) content(s string) {
	if s == "" {
		return
	}
	start := p.b.Len()
	p.b.WriteString(s)
	p.spans = append(p.spans, tokenizer.Span{Start: start, End: p.b.Len()})
}

// add appends a built prompt, its spans shifted.
func (p *promptBuilder) add(q Prompt) {
	for _, s := range q.Content {
		p.spans = append(p.spans, tokenizer.Span{Start: s.Start + p.b.Len(), End: s.End + p.b.Len()})
	}
	p.b.WriteString(q.Text)
}

func (p *promptBuilder) prompt() Prompt { return Prompt{Text: p.b.String(), Content: p.spans} }

// trimSpace is strings.TrimSpace on a built prompt, its spans clipped.
func (p Prompt) trimSpace() Prompt {
	lead := len(p.Text) - len(strings.TrimLeftFunc(p.Text, unicode.IsSpace))
	text := strings.TrimSpace(p.Text)
	end := lead + len(text)
	var spans []tokenizer.Span
	for _, s := range p.Content {
		a, b := max(s.Start, lead), min(s.End, end)
		if a < b {
			spans = append(spans, tokenizer.Span{Start: a - lead, End: b - lead})
		}
	}
	return Prompt{Text: text, Content: spans}
}

// Sentinels mark message content in a Jinja rendering. They are Unicode
// noncharacters, reserved for a program's internal use; a content that
// holds one is located by search instead.
const (
	openMark  = "\uFDD0"
	closeMark = "\uFDD1"
)

// renderJinjaPrompt renders the template twice: as is, and with each
// content wrapped in sentinels (its surrounding whitespace left outside
// them, so that trim and strip still see it). If removing the sentinels
// from the second rendering gives the first, their places are the
// content's spans. A template that transforms content otherwise (splits,
// slices or tests it) falls back to searching the first rendering for
// each content; a content not found verbatim is refused by Tokens if it
// holds special-token texts.
func (t *Template) renderJinjaPrompt(msgs []Message, o Options) (Prompt, error) {
	plain, err := t.renderJinja(msgs, o)
	if err != nil {
		return Prompt{}, err
	}
	marked := make([]Message, len(msgs))
	usable := true
	for i, m := range msgs {
		if strings.Contains(m.Content, openMark) || strings.Contains(m.Content, closeMark) {
			usable = false
			break
		}
		marked[i] = m
		if m.Content == "" {
			continue // templates test for empty content ({% if message.content %})
		}
		core := strings.TrimSpace(m.Content)
		lead := len(m.Content) - len(strings.TrimLeftFunc(m.Content, unicode.IsSpace))
		marked[i].Content = m.Content[:lead] + openMark + core + closeMark + m.Content[lead+len(core):]
	}
	if usable {
		if out, err := t.renderJinja(marked, o); err == nil {
			if p, ok := unmark(out); ok && p.Text == plain {
				return p, nil
			}
		}
	}
	return locate(plain, msgs), nil
}

// unmark strips the sentinels from a rendering, returning the spans they
// enclosed; ok is false if they do not pair up.
func unmark(s string) (p Prompt, ok bool) {
	var b strings.Builder
	open := -1
	for {
		i := strings.IndexAny(s, openMark+closeMark)
		if i < 0 {
			b.WriteString(s)
			break
		}
		b.WriteString(s[:i])
		isOpen := strings.HasPrefix(s[i:], openMark)
		switch {
		case isOpen && open < 0:
			open = b.Len()
		case !isOpen && open >= 0:
			if b.Len() > open {
				p.Content = append(p.Content, tokenizer.Span{Start: open, End: b.Len()})
			}
			open = -1
		default:
			return Prompt{}, false
		}
		s = s[i+len(openMark):] // both marks are 3 bytes in UTF-8
	}
	if open >= 0 {
		return Prompt{}, false
	}
	p.Text = b.String()
	return p, true
}

// locate marks every occurrence of each message's content in text.
func locate(text string, msgs []Message) Prompt {
	p := Prompt{Text: text}
	for _, m := range msgs {
		core := strings.TrimSpace(m.Content)
		if core == "" {
			continue
		}
		found := false
		for from := 0; ; {
			i := strings.Index(text[from:], core)
			if i < 0 {
				break
			}
			found = true
			p.Content = append(p.Content, tokenizer.Span{Start: from + i, End: from + i + len(core)})
			from += i + 1
		}
		if !found {
			p.unlocated = append(p.unlocated, m.Content)
		}
	}
	slices.SortFunc(p.Content, func(a, b tokenizer.Span) int { return a.Start - b.Start })
	merged := p.Content[:0]
	for _, s := range p.Content {
		if n := len(merged); n > 0 && s.Start <= merged[n-1].End {
			merged[n-1].End = max(merged[n-1].End, s.End)
			continue
		}
		merged = append(merged, s)
	}
	p.Content = merged
	return p
}

func (t *Template) renderJinja(msgs []Message, o Options) (out string, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = "", fmt.Errorf("chat: template panicked: %v", p)
		}
	}()
	var ord orderTable
	defer ord.release()
	list := make([]any, len(msgs))
	for i, m := range msgs {
		list[i] = ord.messageValue(m)
	}
	var raised error
	now := o.Now()
	vars := map[string]any{}
	for k, v := range o.Vars {
		vars[k] = v
	}
	delete(vars, "tools") // only Options.Tools, checked and ordered
	for k, v := range map[string]any{
		"messages":              list,
		"add_generation_prompt": o.AddGenerationPrompt,
		"bos_token":             t.bos,
		"eos_token":             t.eos,
		"raise_exception": func(msg string) (string, error) {
			raised = fmt.Errorf("%w: %s", ErrTemplate, msg)
			return "", raised
		},
		"range":        boundedRange,
		"strftime_now": func(format string) string { return strftime(format, now) },
	} {
		vars[k] = v
	}
	if _, ok := vars["date_string"]; !ok {
		vars["date_string"] = strftime("%d %b %Y", now)
	}
	if len(o.Tools) > 0 {
		tools := make([]any, len(o.Tools))
		for i, tl := range o.Tools {
			if tools[i], err = ord.toolValue(tl); err != nil {
				return "", err
			}
		}
		vars["tools"] = tools
	}
	data := exec.NewContext(vars)
	var b limitedBuilder
	if err := t.jinja.Execute(&b, data); err != nil {
		if raised != nil {
			return "", raised
		}
		return "", fmt.Errorf("chat: template: %s", shorten(err.Error()))
	}
	return b.String(), nil
}

// maxRange bounds range(): gonja's own range feeds a channel from a
// goroutine (which leaks when a loop stops early) and has no limit.
const maxRange = 1 << 16

func boundedRange(_ *exec.Evaluator, params *exec.VarArgs) ([]int, error) {
	args := make([]int, len(params.Args))
	for i, a := range params.Args {
		if !a.IsInteger() {
			return nil, errors.New("range: arguments must be integers")
		}
		args[i] = a.Integer()
	}
	start, stop, step := 0, 0, 1
	switch len(args) {
	case 1:
		stop = args[0]
	case 2:
		start, stop = args[0], args[1]
	case 3:
		start, stop, step = args[0], args[1], args[2]
	default:
		return nil, errors.New("range: expected [start, ]stop[, step]")
	}
	if step == 0 {
		return nil, errors.New("range: step cannot be 0")
	}
	var out []int
	for i := start; (step > 0 && i < stop) || (step < 0 && i > stop); i += step {
		if len(out) == maxRange {
			return nil, fmt.Errorf("range: more than %d values", maxRange)
		}
		out = append(out, i)
	}
	return out, nil
}

type limitedBuilder struct{ strings.Builder }

func (b *limitedBuilder) Write(p []byte) (int, error) {
	if b.Len()+len(p) > maxOutput {
		return 0, fmt.Errorf("chat: rendered prompt exceeds %d bytes", maxOutput)
	}
	return b.Builder.Write(p)
}

// renderLlama2 is Meta's llama-2-chat format, as its Hugging Face template
// writes it: the system prompt inside the first [INST], each exchange
// wrapped in BOS … EOS, roles alternating from the user.
func renderLlama2(msgs []Message, bos, eos string, gen bool) (Prompt, error) {
	sys := ""
	if len(msgs) > 0 && msgs[0].Role == "system" {
		sys, msgs = msgs[0].Content, msgs[1:]
	}
	var out promptBuilder
	for i, m := range msgs {
		if (m.Role == "user") != (i%2 == 0) {
			return Prompt{}, fmt.Errorf("%w: roles must alternate user/assistant/user/assistant/… (message %d is %q)", ErrTemplate, i, m.Role)
		}
		var c promptBuilder
		if i == 0 && sys != "" {
			c.markup("<<SYS>>\n")
			c.content(sys)
			c.markup("\n<</SYS>>\n\n")
		}
		c.content(m.Content)
		if m.Role == "user" {
			out.markup(bos + "[INST] ")
			out.add(c.prompt().trimSpace())
			out.markup(" [/INST]")
		} else {
			out.markup(" ")
			out.add(c.prompt().trimSpace())
			out.markup(" " + eos)
		}
	}
	_ = gen // the reply follows [/INST] directly
	return out.prompt(), nil
}

// renderLlama3 is Meta's Llama 3 instruct format; with tools, Llama
// 3.1's (as its template writes it with tools_in_user_message false, as
// llama.cpp passes it): the tools in the system turn, calls as JSON,
// results in ipython turns.
func renderLlama3(msgs []Message, tools []Tool, bos string, now time.Time, gen bool) (Prompt, error) {
	var b promptBuilder
	b.markup(bos)
	if len(tools) > 0 {
		b.markup("<|start_header_id|>system<|end_header_id|>\n\nEnvironment: ipython\nCutting Knowledge Date: December 2023\nToday Date: " +
			strftime("%d %b %Y", now) + "\n\nYou have access to the following functions. To call a function, please respond with JSON for a function call." +
			`Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.` + "Do not use variables.\n\n")
		var o orderTable
		defer o.release()
		for _, t := range tools {
			v, err := o.toolValue(t)
			if err != nil {
				return Prompt{}, err
			}
			var j strings.Builder
			if err := writePyJSON(&j, v, 4, 0); err != nil {
				return Prompt{}, err
			}
			b.markup(j.String() + "\n\n")
		}
		if len(msgs) > 0 && msgs[0].Role == "system" {
			b.content(strings.TrimSpace(msgs[0].Content))
			msgs = msgs[1:]
		}
		b.markup("<|eot_id|>")
	}
	for _, m := range msgs {
		switch {
		case len(m.ToolCalls) > 0:
			if len(m.ToolCalls) != 1 {
				return Prompt{}, fmt.Errorf("%w: this model only supports single tool-calls at once", ErrTemplate)
			}
			b.markup("<|start_header_id|>assistant<|end_header_id|>\n\n" + llama3CallText(m.ToolCalls[0]) + "<|eot_id|>")
		case m.Role == "tool" || m.Role == "ipython":
			// Llama 3.1's template writes results with tojson (a string too).
			var j strings.Builder
			writePyString(&j, m.Content)
			b.markup("<|start_header_id|>ipython<|end_header_id|>\n\n")
			b.content(j.String())
			b.markup("<|eot_id|>")
		default:
			b.markup("<|start_header_id|>" + m.Role + "<|end_header_id|>\n\n")
			b.content(strings.TrimSpace(m.Content))
			b.markup("<|eot_id|>")
		}
	}
	if gen {
		b.markup("<|start_header_id|>assistant<|end_header_id|>\n\n")
	}
	return b.prompt(), nil
}

// renderChatML is the ChatML format of Qwen and others; with tools,
// Qwen2.5's: the tools in the system turn, calls in <tool_call>, results
// in <tool_response> inside one user turn per run of tool messages.
func renderChatML(msgs []Message, tools []Tool, gen bool) (Prompt, error) {
	var b promptBuilder
	if len(tools) > 0 {
		desc, err := hermesToolText(tools)
		if err != nil {
			return Prompt{}, err
		}
		b.markup("<|im_start|>system\n")
		if len(msgs) > 0 && msgs[0].Role == "system" {
			b.content(msgs[0].Content)
			b.markup("\n\n")
			msgs = msgs[1:]
		}
		b.markup(desc + "<|im_end|>\n")
	}
	for i, m := range msgs {
		switch {
		case len(m.ToolCalls) > 0:
			b.markup("<|im_start|>" + m.Role)
			if m.Content != "" {
				b.markup("\n")
				b.content(m.Content)
			}
			for _, c := range m.ToolCalls {
				b.markup("\n" + hermesCallText(c))
			}
			b.markup("<|im_end|>\n")
		case m.Role == "tool":
			if i == 0 || msgs[i-1].Role != "tool" {
				b.markup("<|im_start|>user")
			}
			b.markup("\n<tool_response>\n")
			b.content(m.Content)
			b.markup("\n</tool_response>")
			if i == len(msgs)-1 || msgs[i+1].Role != "tool" {
				b.markup("<|im_end|>\n")
			}
		default:
			b.markup("<|im_start|>" + m.Role + "\n")
			b.content(m.Content)
			b.markup("<|im_end|>\n")
		}
	}
	if gen {
		b.markup("<|im_start|>assistant\n")
	}
	return b.prompt(), nil
}

// Tokens tokenizes trusted prompt text with special tokens parsed
// everywhere, adding the vocabulary's BOS only when the text does not
// already start with it. A rendered conversation goes through
// Prompt.Tokens (or Template.Encode) instead, which keeps what users wrote
// as text.
func Tokens(tok *tokenizer.Tokenizer, text string) ([]int32, error) {
	bos := piece(tok, tok.BOS())
	addSpecial := !(bos != "" && strings.HasPrefix(text, bos))
	return tok.Encode(text, addSpecial, true)
}
