// Package chat owns turning a conversation into a prompt: the model's own
// chat template (the GGUF key tokenizer.chat_template, a Jinja template as
// Hugging Face writes them) rendered with the gonja library, and built-in
// llama-2, llama-3 and ChatML (Qwen) formats for files that carry none. It
// also tokenizes the rendered prompt without doubling the BOS token. It is
// not a Jinja interpreter (gonja is) and knows nothing of HTTP or sampling.
package chat

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/nikolalohinski/gonja/v2"
	"github.com/nikolalohinski/gonja/v2/config"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/loaders"

	"shade/gguf"
	"shade/tokenizer"
)

// Message is one turn of a conversation.
type Message struct {
	Role    string `json:"role"` // "system", "user" or "assistant" (templates may accept others)
	Content string `json:"content"`
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
	cfg.LeftStripBlocks = true
	cfg.KeepTrailingNewline = false
	env := *gonja.DefaultEnvironment
	j, err := exec.NewTemplate(rootName, cfg, oneFile{src}, &env)
	if err != nil {
		return nil, fmt.Errorf("chat: template: %s", shorten(err.Error()))
	}
	return &Template{name: "gguf", jinja: j, bos: bos, eos: eos}, nil
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
	switch t.builtin {
	case Llama2:
		return renderLlama2(msgs, t.bos, t.eos, addGenerationPrompt)
	case Llama3:
		return renderLlama3(msgs, t.bos, addGenerationPrompt), nil
	case ChatML:
		return renderChatML(msgs, addGenerationPrompt), nil
	}
	return t.renderJinja(msgs, addGenerationPrompt)
}

func (t *Template) renderJinja(msgs []Message, addGenerationPrompt bool) (out string, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = "", fmt.Errorf("chat: template panicked: %v", p)
		}
	}()
	list := make([]any, len(msgs))
	for i, m := range msgs {
		list[i] = map[string]any{"role": m.Role, "content": m.Content}
	}
	var raised error
	data := exec.NewContext(map[string]any{
		"messages":              list,
		"add_generation_prompt": addGenerationPrompt,
		"bos_token":             t.bos,
		"eos_token":             t.eos,
		"raise_exception": func(msg string) (string, error) {
			raised = fmt.Errorf("%w: %s", ErrTemplate, msg)
			return "", raised
		},
		"range": boundedRange,
	})
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
func renderLlama2(msgs []Message, bos, eos string, gen bool) (string, error) {
	sys := ""
	if len(msgs) > 0 && msgs[0].Role == "system" {
		sys, msgs = msgs[0].Content, msgs[1:]
	}
	var b strings.Builder
	for i, m := range msgs {
		if (m.Role == "user") != (i%2 == 0) {
			return "", fmt.Errorf("%w: roles must alternate user/assistant/user/assistant/… (message %d is %q)", ErrTemplate, i, m.Role)
		}
		content := m.Content
		if i == 0 && sys != "" {
			content = "<<SYS>>\n" + sys + "\n<</SYS>>\n\n" + content
		}
		if m.Role == "user" {
			b.WriteString(bos + "[INST] " + strings.TrimSpace(content) + " [/INST]")
		} else {
			b.WriteString(" " + strings.TrimSpace(content) + " " + eos)
		}
	}
	_ = gen // the reply follows [/INST] directly
	return b.String(), nil
}

// renderLlama3 is Meta's Llama 3 instruct format.
func renderLlama3(msgs []Message, bos string, gen bool) string {
	var b strings.Builder
	b.WriteString(bos)
	for _, m := range msgs {
		b.WriteString("<|start_header_id|>" + m.Role + "<|end_header_id|>\n\n" + strings.TrimSpace(m.Content) + "<|eot_id|>")
	}
	if gen {
		b.WriteString("<|start_header_id|>assistant<|end_header_id|>\n\n")
	}
	return b.String()
}

// renderChatML is the ChatML format of Qwen and others.
func renderChatML(msgs []Message, gen bool) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString("<|im_start|>" + m.Role + "\n" + m.Content + "<|im_end|>\n")
	}
	if gen {
		b.WriteString("<|im_start|>assistant\n")
	}
	return b.String()
}

// Tokens tokenizes a rendered prompt with special tokens parsed, adding the
// vocabulary's BOS only when the text does not already start with it.
func Tokens(tok *tokenizer.Tokenizer, text string) ([]int32, error) {
	bos := piece(tok, tok.BOS())
	addSpecial := !(bos != "" && strings.HasPrefix(text, bos))
	return tok.Encode(text, addSpecial, true)
}
