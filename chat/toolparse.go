package chat

import (
	"encoding/json"
	"strings"
	"unicode"
)

// Delta is a piece of a parsed reply: content text, or part of a tool
// call (its first Delta has ID and Name, the following ones pieces of its
// arguments, as OpenAI streams them).
type Delta struct {
	Content   string
	Call      bool // a tool-call delta (Index, and ID, Name or Arguments)
	Index     int
	ID, Name  string
	Arguments string
}

// ToolParser splits a model's reply, fed piece by piece, into content
// and tool calls in the model's format (see ToolFormat). Text that may
// still become a call is held back until it is known; a call's arguments
// stream as they are written, once its name is known.
type ToolParser struct {
	format ToolFormat
	newID  func() string
	buf    string // text held back (text mode) or the call being read
	lead   string // the text that opened the call being read
	spoke  bool   // Hermes: content was sent since the last call
	inCall bool
	// Llama3JSON: calls only open the reply, so any other text ends them.
	textOnly bool
	calls    []ToolCall
	scan     callScan
}

// NewToolParser parses replies of the given format; newID names each call
// (OpenAI's "call_…" ids).
func NewToolParser(f ToolFormat, newID func() string) *ToolParser {
	return &ToolParser{format: f, newID: newID}
}

// Calls are the tool calls parsed so far (the last one maybe incomplete
// while the reply is still being written).
func (p *ToolParser) Calls() []ToolCall { return p.calls }

const (
	hermesOpen  = "<tool_call>"
	hermesClose = "</tool_call>"
	pythonTag   = "<|python_tag|>"
)

// Add parses the next piece of the reply.
func (p *ToolParser) Add(text string) []Delta {
	p.buf += text
	var out []Delta
	for {
		d, more := p.step(false)
		out = append(out, d...)
		if !more {
			return merge(out)
		}
	}
}

// Flush ends the reply: what was held back is content, and a call left
// open (a reply cut by its length) ends with the arguments written so far.
func (p *ToolParser) Flush() []Delta {
	var out []Delta
	for {
		d, more := p.step(true)
		out = append(out, d...)
		if more {
			continue
		}
		if !p.inCall {
			break
		}
		// A call left open ends here; if it was no call, the text after
		// its opening tag is read again (it may hold another call).
		d, _ = p.endCall(true)
		out = append(out, d...)
	}
	if p.buf != "" {
		out = append(out, Delta{Content: p.buf})
		p.buf = ""
	}
	return merge(out)
}

// merge joins adjacent content deltas.
func merge(ds []Delta) []Delta {
	var out []Delta
	for _, d := range ds {
		if d.Content == "" && !d.Call {
			continue
		}
		if n := len(out); n > 0 && !d.Call && !out[n-1].Call {
			out[n-1].Content += d.Content
			continue
		}
		out = append(out, d)
	}
	return out
}

// step makes progress on the buffer; more says another step may make more.
func (p *ToolParser) step(final bool) (out []Delta, more bool) {
	if p.inCall {
		return p.stepCall(final)
	}
	if p.textOnly {
		out = []Delta{{Content: p.buf}}
		p.buf = ""
		return out, false
	}
	if p.format == Llama3JSON {
		// A call opens the reply (after <|python_tag|>, if the vocabulary
		// spells it as text) or follows another call.
		trimmed := strings.TrimLeftFunc(p.buf, func(r rune) bool { return unicode.IsSpace(r) || (r == ';' && len(p.calls) > 0) })
		if rest, ok := strings.CutPrefix(trimmed, pythonTag); ok {
			trimmed = strings.TrimLeftFunc(rest, unicode.IsSpace)
		}
		switch {
		case trimmed == "" || (strings.HasPrefix(pythonTag, trimmed) && !final):
			return nil, false // nothing decided yet
		case trimmed[0] == '{':
			p.lead = p.buf[:len(p.buf)-len(trimmed)]
			p.buf = trimmed
			p.inCall = true
			p.scan = callScan{}
			return nil, true
		}
		p.textOnly = true
		return nil, true
	}
	// Hermes: calls anywhere in <tool_call> … </tool_call>.
	afterCall := len(p.calls) > 0 && !p.spoke
	if afterCall && strings.TrimSpace(p.buf) == "" {
		// The space between and after calls is no content.
		if final {
			p.buf = ""
		}
		return nil, false
	}
	if i := strings.Index(p.buf, hermesOpen); i >= 0 {
		out = []Delta{{Content: p.buf[:i]}}
		if afterCall && strings.TrimSpace(p.buf[:i]) == "" {
			out = nil
		}
		p.lead = hermesOpen
		p.buf = p.buf[i+len(hermesOpen):]
		p.inCall = true
		p.scan = callScan{}
		return out, true
	}
	hold := 0
	if !final {
		hold = partialSuffix(p.buf, hermesOpen)
	}
	if afterCall && !final && strings.TrimSpace(p.buf[:len(p.buf)-hold]) == "" {
		return nil, false // space after a call waits to see what follows
	}
	out = []Delta{{Content: p.buf[:len(p.buf)-hold]}}
	p.spoke = p.spoke || len(p.buf) > hold
	p.buf = p.buf[len(p.buf)-hold:]
	return out, false
}

// partialSuffix is the length of the longest suffix of s that begins tag.
func partialSuffix(s, tag string) int {
	for n := min(len(tag)-1, len(s)); n > 0; n-- {
		if strings.HasSuffix(s, tag[:n]) {
			return n
		}
	}
	return 0
}

// stepCall reads the call in p.buf.
func (p *ToolParser) stepCall(final bool) ([]Delta, bool) {
	s := &p.scan
	if !s.started {
		t := strings.TrimLeftFunc(p.buf, unicode.IsSpace)
		if t == "" {
			if final {
				return p.abandon(), true
			}
			return nil, false
		}
		if t[0] != '{' {
			return p.abandon(), true
		}
		s.skip = len(p.buf) - len(t)
		s.started = true
		s.pos = s.skip
		s.valStart = -1
	}
	s.run(p.buf)
	var out []Delta
	if s.bad {
		return p.abandon(), true
	}
	if !s.open && s.openable {
		out = append(out, p.open()...)
	}
	if s.open && s.argsStart >= 0 && !s.argsString {
		end := s.pos
		if s.argsEnd >= 0 {
			end = s.argsEnd
		}
		if end > s.argsSent {
			if s.argsSent < s.argsStart {
				s.argsSent = s.argsStart
			}
			out = append(out, Delta{Call: true, Index: len(p.calls) - 1, Arguments: p.buf[s.argsSent:end]})
			s.argsSent = end
		}
	}
	if !s.done {
		return out, false
	}
	// The object is complete: it is a call if it names a function and its
	// arguments are an object (or a JSON string of one).
	if p.format == Hermes {
		rest := strings.TrimLeftFunc(p.buf[s.pos:], unicode.IsSpace)
		if !final && len(rest) < len(hermesClose) && strings.HasPrefix(hermesClose, rest) {
			return out, false // the closing tag may still come
		}
		d, ok := p.endCall(false)
		out = append(out, d...)
		if ok {
			if rest, closed := strings.CutPrefix(strings.TrimLeftFunc(p.buf, unicode.IsSpace), hermesClose); closed {
				p.buf = rest
			}
		}
		return out, true
	}
	d, _ := p.endCall(false)
	return append(out, d...), true
}

// open announces the call being read.
func (p *ToolParser) open() []Delta {
	s := &p.scan
	s.open = true
	c := ToolCall{ID: p.newID(), Type: "function", Function: FunctionCall{Name: s.name}}
	p.calls = append(p.calls, c)
	return []Delta{{Call: true, Index: len(p.calls) - 1, ID: c.ID, Name: c.Function.Name}}
}

// endCall finishes the call in p.buf (complete, or cut when cut is set);
// ok says it was one. An object that is no call goes out as content.
func (p *ToolParser) endCall(cut bool) (_ []Delta, ok bool) {
	s := &p.scan
	obj := p.buf[s.skip:s.pos]
	var fields map[string]json.RawMessage
	valid := !cut && json.Unmarshal([]byte(obj), &fields) == nil
	var name string
	if valid {
		json.Unmarshal(fields["name"], &name)
	}
	args, hasArgs := fields["arguments"]
	if !hasArgs {
		args, hasArgs = fields["parameters"]
	}
	argText := ""
	if hasArgs {
		var str string
		if json.Unmarshal(args, &str) == nil && json.Valid([]byte(str)) {
			argText = str
		} else {
			argText = strings.TrimSpace(string(args))
		}
	}
	// Llama 3 calls are bare JSON: only {"name", "parameters"} objects are
	// calls, not any object that has a name.
	isCall := valid && name != "" && (!hasArgs || strings.HasPrefix(argText, "{")) &&
		(p.format == Hermes || hasArgs && !s.other)
	if !s.open && !isCall {
		return p.abandon(), false
	}
	p.inCall = false
	var out []Delta
	if !s.open {
		out = p.open()
	}
	c := &p.calls[len(p.calls)-1]
	if !s.streamed() {
		if argText == "" {
			argText = "{}"
		}
		out = append(out, Delta{Call: true, Index: len(p.calls) - 1, Arguments: argText})
		c.Function.Arguments = argText
	} else {
		c.Function.Arguments = p.buf[s.argsStart:s.argsSent]
	}
	if cut {
		p.buf = ""
	} else {
		p.buf = p.buf[s.pos:]
	}
	p.lead, p.spoke = "", false
	return out, true
}

// abandon gives up on the call being read: the text that opened it is
// content, and what followed is read again as text, where another call may
// open (whether it does must not depend on how the reply was cut into
// pieces, so the rest is never sent as content unread).
func (p *ToolParser) abandon() []Delta {
	out := []Delta{{Content: p.lead}}
	p.spoke = true
	p.inCall = false
	p.lead = ""
	if p.format == Llama3JSON {
		p.textOnly = true
	}
	return out
}

// callScan follows the top level of one JSON object as it arrives: its
// keys, where the name and the arguments are, and where it ends.
type callScan struct {
	started, done, bad, open bool
	skip, pos                int
	depth                    int
	inStr, esc               bool
	keyStart                 int    // depth 1: start of the key string being read
	key                      string // depth 1: the last key read
	wantValue                bool   // depth 1: after the key's colon
	valStart                 int    // depth 1: start of the value being read, or -1
	other                    bool   // a key that calls do not have
	openable                 bool   // the arguments (an object) began after the name: stream them
	name                     string
	argsStart, argsEnd       int
	argsSent                 int
	argsString               bool
}

func (s *callScan) streamed() bool {
	return s.argsStart >= 0 && !s.argsString && s.argsSent > s.argsStart
}

func (s *callScan) run(buf string) {
	if s.pos == s.skip && s.depth == 0 {
		s.argsStart, s.argsEnd, s.keyStart = -1, -1, -1
	}
	for ; s.pos < len(buf) && !s.done && !s.bad; s.pos++ {
		c := buf[s.pos]
		if s.inStr {
			switch {
			case s.esc:
				s.esc = false
			case c == '\\':
				s.esc = true
			case c == '"':
				s.inStr = false
				if s.depth == 1 {
					s.endString(buf)
				}
			}
			continue
		}
		if s.depth == 1 && s.valStart >= 0 && s.isScalarEnd(c) {
			s.endValue(buf, s.pos)
		}
		switch c {
		case '"':
			s.inStr = true
			if s.depth == 1 {
				if s.wantValue {
					s.beginValue(s.pos, true, false)
				} else {
					s.keyStart = s.pos
				}
			}
		case '{', '[':
			if s.depth == 1 && s.wantValue {
				s.beginValue(s.pos, false, c == '{')
			}
			s.depth++
		case '}', ']':
			s.depth--
			switch {
			case s.depth == 0:
				s.done = true
			case s.depth == 1 && s.valStart >= 0:
				s.endValue(buf, s.pos+1)
			case s.depth < 0:
				s.bad = true
			}
		case ':':
			if s.depth == 1 {
				s.wantValue = true
			}
		case ',':
		default:
			if s.depth == 1 && s.wantValue && !unicode.IsSpace(rune(c)) {
				s.beginValue(s.pos, false, false)
			}
		}
	}
}

func (s *callScan) isScalarEnd(c byte) bool {
	return c == ',' || c == '}' || c == ' ' || c == '\n' || c == '\t' || c == '\r'
}

func (s *callScan) endString(buf string) {
	if s.valStart >= 0 {
		s.endValue(buf, s.pos+1)
		return
	}
	if s.keyStart >= 0 {
		json.Unmarshal([]byte(buf[s.keyStart:s.pos+1]), &s.key)
		s.keyStart = -1
		switch s.key {
		case "name", "arguments", "parameters", "type", "id":
		default:
			s.other = true
		}
	}
}

func (s *callScan) beginValue(at int, str, object bool) {
	s.wantValue = false
	s.valStart = at
	if (s.key == "arguments" || s.key == "parameters") && s.argsStart < 0 {
		s.argsStart, s.argsString, s.argsSent = at, str, at
		// Decided here, whatever follows, so that a reply parses the same
		// however it is cut into pieces.
		s.openable = s.name != "" && !s.other && !str && object
	}
}

func (s *callScan) endValue(buf string, end int) {
	if s.key == "name" && s.name == "" {
		json.Unmarshal([]byte(buf[s.valStart:end]), &s.name)
	}
	if (s.key == "arguments" || s.key == "parameters") && s.argsEnd < 0 {
		s.argsEnd = end
	}
	s.valStart = -1
}
