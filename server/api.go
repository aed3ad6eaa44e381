package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"unicode/utf8"

	"shade/chat"
	"shade/grammar"
)

// APIError is an error as the OpenAI API reports it, with its HTTP status.
type APIError struct {
	Status  int     `json:"-"`
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func (e *APIError) Error() string { return e.Message }

func badRequest(param, code, format string, args ...any) *APIError {
	e := &APIError{Status: http.StatusBadRequest, Message: fmt.Sprintf(format, args...), Type: "invalid_request_error"}
	if param != "" {
		e.Param = &param
	}
	if code != "" {
		e.Code = &code
	}
	return e
}

func apiError(status int, typ, code, format string, args ...any) *APIError {
	e := &APIError{Status: status, Message: fmt.Sprintf(format, args...), Type: typ}
	if code != "" {
		e.Code = &code
	}
	return e
}

// Priority of a request: foreground requests run first and preempt
// background ones between two decoding steps.
type Priority int

const (
	Foreground Priority = iota
	Background
)

func (p Priority) String() string {
	if p == Background {
		return "background"
	}
	return "foreground"
}

// PriorityHeader marks a request's priority, like the body field "priority".
const PriorityHeader = "X-Shade-Priority"

func parsePriority(s string) (Priority, bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "foreground", "interactive":
		return Foreground, true
	case "background":
		return Background, true
	}
	return Foreground, false
}

// fieldError is a custom decoder's error naming its field.
type fieldError struct{ param, msg string }

func (e *fieldError) Error() string { return e.msg }

// stopList is the "stop" field: a string, an array of strings, or null.
type stopList []string

func (s *stopList) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, []byte("null")) {
		*s = nil
		return nil
	}
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*s = stopList{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return &fieldError{"stop", "stop must be a string or an array of strings"}
	}
	*s = many
	return nil
}

// content is a message's content: a string, or an array of parts of
// which the "text" ones are kept.
type content string

func (c *content) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, []byte("null")) {
		*c = ""
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*c = content(s)
		return nil
	}
	var parts []struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(b, &parts); err != nil {
		return &fieldError{"messages", "a message's content must be a string or an array of content parts"}
	}
	var sb strings.Builder
	for i, p := range parts {
		switch {
		case p.Type == "":
			return &fieldError{"messages", fmt.Sprintf("content part %d has no type (or is null): only \"text\" parts are supported", i)}
		case p.Type != "text":
			return &fieldError{"messages", fmt.Sprintf("content part %d is of type %q: only \"text\" parts are supported", i, p.Type)}
		case p.Text == nil:
			return &fieldError{"messages", fmt.Sprintf("content part %d is of type \"text\" but has no text (it is null or missing)", i)}
		}
		sb.WriteString(*p.Text)
	}
	*c = content(sb.String())
	return nil
}

// promptField is a completion's "prompt": a string or an array of one
// string (n=1 and no batching here).
type promptField string

func (p *promptField) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*p = promptField(s)
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return &fieldError{"prompt", "prompt must be a string or an array of one string"}
	}
	if len(many) != 1 {
		return &fieldError{"prompt", fmt.Sprintf("prompt is an array of %d prompts: only one prompt per request is supported", len(many))}
	}
	*p = promptField(many[0])
	return nil
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// common holds the fields both endpoints share.
type common struct {
	Model               string         `json:"model"`
	MaxTokens           *int           `json:"max_tokens"`
	MaxCompletionTokens *int           `json:"max_completion_tokens"`
	Temperature         *float64       `json:"temperature"`
	TopP                *float64       `json:"top_p"`
	Seed                *int64         `json:"seed"`
	Stop                stopList       `json:"stop"`
	N                   *int           `json:"n"`
	Stream              bool           `json:"stream"`
	StreamOptions       *streamOptions `json:"stream_options"`
	// Priority is shade's extension: "foreground" (default) or "background".
	Priority *string `json:"priority"`
	// IgnoreEOS (llama.cpp's extension) generates past end-of-text tokens.
	IgnoreEOS bool `json:"ignore_eos"`
	// Sampling beyond temperature and top_p: OpenAI's penalties and bias,
	// llama-server's top_k, min_p and repeat_penalty (see request.go).
	PresencePenalty  *float64           `json:"presence_penalty"`
	FrequencyPenalty *float64           `json:"frequency_penalty"`
	LogitBias        map[string]float64 `json:"logit_bias"`
	TopK             *int               `json:"top_k"`
	MinP             *float64           `json:"min_p"`
	RepeatPenalty    *float64           `json:"repeat_penalty"`
	// Metadata that changes nothing here (see request.go): user and
	// metadata are accepted and ignored; store may only be false.
	User     *string         `json:"user"`
	Metadata json.RawMessage `json:"metadata"`
	Store    *bool           `json:"store"`
	constraintFields
}

// ChatRequest is the body of POST /v1/chat/completions.
type ChatRequest struct {
	common
	Messages []struct {
		Role    string  `json:"role"`
		Content content `json:"content"`
		messageTools
	} `json:"messages"`
	// Logprobs and TopLogprobs are OpenAI's (request.go).
	Logprobs    *bool `json:"logprobs"`
	TopLogprobs *int  `json:"top_logprobs"`
	toolFields
}

// CompletionRequest is the body of POST /v1/completions.
type CompletionRequest struct {
	common
	Prompt *promptField `json:"prompt"`
	// Logprobs is the legacy API's: the number of alternatives per token.
	Logprobs *int    `json:"logprobs"`
	Echo     *bool   `json:"echo"`
	Suffix   *string `json:"suffix"`
	BestOf   *int    `json:"best_of"`
}

// Limits bound what a request may ask for.
type Limits struct {
	MaxTokens int // largest max_tokens accepted (the context size)
	MaxStop   int // most stop strings (OpenAI: 4)
	Vocab     int // the vocabulary's size, for logit_bias (0: not checked here)
}

// decode parses a JSON body into v, turning every failure into a 400 that
// names the field at fault. Bodies that are not valid UTF-8 are refused
// (encoding/json would silently replace the bad bytes).
func decode(body []byte, v any) *APIError {
	if !utf8.Valid(body) {
		return badRequest("", "invalid_encoding", "the request body is not valid UTF-8")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return badRequest("", "", "the request body is empty: expected a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		var se *json.SyntaxError
		switch {
		case errors.As(err, &te):
			field := embedded.Replace(te.Field)
			if field == "" {
				return badRequest("", "invalid_type", "the request body must be a JSON object, got JSON %s", te.Value)
			}
			return badRequest(field, "invalid_type", "invalid type for %q: expected %s, got JSON %s", field, goTypeName(te.Type.String()), te.Value)
		case errors.As(err, &se):
			return badRequest("", "invalid_json", "the request body is not valid JSON: %v (at byte %d)", se, se.Offset)
		}
		var fe *fieldError
		if errors.As(err, &fe) {
			return badRequest(fe.param, "invalid_type", "%s", fe.msg)
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return badRequest("", "invalid_json", "the request body is not valid JSON: it ends early")
		}
		return badRequest("", "invalid_json", "the request body is not a valid request: %v", err)
	}
	if dec.More() {
		return badRequest("", "invalid_json", "the request body has data after the JSON object")
	}
	return nil
}

// embedded strips the names of embedded structs from a field's path.
var embedded = strings.NewReplacer("common.", "", "constraintFields.", "", "toolFields.", "", "messageTools.", "")

func goTypeName(t string) string {
	switch {
	case strings.Contains(t, "int"):
		return "an integer"
	case strings.Contains(t, "float"):
		return "a number"
	case t == "string":
		return "a string"
	case t == "bool":
		return "a boolean"
	case strings.HasPrefix(t, "[]"):
		return "an array"
	}
	return "an object"
}

// params are a request's validated generation settings.
type params struct {
	model        string
	maxTokens    int // 0: up to the context
	temp, topP   float64
	seed         *int64
	stop         []string
	stream       bool
	includeUsage bool
	ignoreEOS    bool
	priority     Priority
	sampling     sampling
	logprobs     bool
	topLogprobs  int
	tools        toolParams
	grammar      *grammar.Grammar // the output's constraint (nil: none)
}

func (c *common) validate(lim Limits, defaultMax int, header string) (p params, err *APIError) {
	p = params{model: c.Model, temp: 1, topP: 1, seed: c.Seed, stream: c.Stream, maxTokens: defaultMax, ignoreEOS: c.IgnoreEOS}
	if c.StreamOptions != nil {
		if !c.Stream {
			return p, badRequest("stream_options", "", "stream_options is only allowed when stream is true")
		}
		p.includeUsage = c.StreamOptions.IncludeUsage
	}
	mt := c.MaxTokens
	param := "max_tokens"
	if c.MaxCompletionTokens != nil {
		mt, param = c.MaxCompletionTokens, "max_completion_tokens"
	}
	if mt != nil {
		if *mt < 1 || *mt > lim.MaxTokens {
			return p, badRequest(param, "invalid_value", "%s must be between 1 and %d (the context size), got %d", param, lim.MaxTokens, *mt)
		}
		p.maxTokens = *mt
	}
	if t := c.Temperature; t != nil {
		if math.IsNaN(*t) || *t < 0 || *t > 2 {
			return p, badRequest("temperature", "invalid_value", "temperature must be between 0 and 2, got %v", *t)
		}
		p.temp = *t
	}
	if t := c.TopP; t != nil {
		if math.IsNaN(*t) || *t <= 0 || *t > 1 {
			return p, badRequest("top_p", "invalid_value", "top_p must be in (0, 1], got %v", *t)
		}
		p.topP = *t
	}
	if c.N != nil && *c.N != 1 {
		return p, badRequest("n", "invalid_value", "only n=1 is supported, got %d", *c.N)
	}
	if len(c.Stop) > lim.MaxStop {
		return p, badRequest("stop", "invalid_value", "at most %d stop sequences are allowed, got %d", lim.MaxStop, len(c.Stop))
	}
	for _, s := range c.Stop {
		if s == "" {
			return p, badRequest("stop", "invalid_value", "stop sequences must not be empty")
		}
		if len(s) > 256 {
			return p, badRequest("stop", "invalid_value", "stop sequences are at most 256 bytes")
		}
	}
	p.stop = c.Stop
	prio, ok := parsePriority(header)
	if !ok {
		return p, apiError(http.StatusBadRequest, "invalid_request_error", "invalid_value", "header %s must be foreground or background, got %q", PriorityHeader, header)
	}
	if c.Priority != nil {
		if prio, ok = parsePriority(*c.Priority); !ok {
			return p, badRequest("priority", "invalid_value", "priority must be \"foreground\" or \"background\", got %q", *c.Priority)
		}
	}
	p.priority = prio
	if p.sampling, err = c.validateSampling(lim); err != nil {
		return p, err
	}
	if p.grammar, err = c.constraintFields.compile(); err != nil {
		return p, err
	}
	return p, c.validateMetadata()
}

// roles a chat message may have ("developer" is OpenAI's newer name for system).
var roles = map[string]string{"system": "system", "developer": "system", "user": "user", "assistant": "assistant", "tool": "tool"}

// DecodeChat parses and validates a chat completion request body.
func DecodeChat(body []byte, lim Limits, priorityHeader string) ([]chat.Message, params, *APIError) {
	var r ChatRequest
	if err := decode(body, &r); err != nil {
		return nil, params{}, err
	}
	if err := checkFields(body, &r, chatFields); err != nil {
		return nil, params{}, err
	}
	if err := checkNested(body, &r); err != nil {
		return nil, params{}, err
	}
	p, err := r.validate(lim, 0, priorityHeader)
	if err != nil {
		return nil, p, err
	}
	if err := r.validateLogprobs(&p); err != nil {
		return nil, p, err
	}
	if r.Messages == nil {
		return nil, p, badRequest("messages", "missing_required_parameter", "messages is required")
	}
	if len(r.Messages) == 0 {
		return nil, p, badRequest("messages", "invalid_value", "messages must not be empty")
	}
	msgs := make([]chat.Message, len(r.Messages))
	for i, m := range r.Messages {
		role, ok := roles[m.Role]
		if m.Role == "" {
			return nil, p, badRequest(fmt.Sprintf("messages[%d].role", i), "missing_required_parameter", "messages[%d] has no role (or is null): want system, developer, user, assistant or tool", i)
		}
		if !ok {
			return nil, p, badRequest(fmt.Sprintf("messages[%d].role", i), "invalid_value", "messages[%d].role %q is not one of system, developer, user, assistant, tool", i, m.Role)
		}
		msgs[i] = chat.Message{Role: role, Content: string(m.Content)}
		if err := messageToolFields(i, m.messageTools, &msgs[i]); err != nil {
			return nil, p, err
		}
	}
	if p.tools, err = r.toolFields.validateTools(); err != nil {
		return nil, p, err
	}
	return msgs, p, nil
}

// DecodeCompletion parses and validates a completion request body. As in
// OpenAI's API, max_tokens defaults to 16.
func DecodeCompletion(body []byte, lim Limits, priorityHeader string) (string, params, *APIError) {
	var r CompletionRequest
	if err := decode(body, &r); err != nil {
		return "", params{}, err
	}
	if err := checkFields(body, &r, outputFields); err != nil {
		return "", params{}, err
	}
	p, err := r.validate(lim, min(16, lim.MaxTokens), priorityHeader)
	if err != nil {
		return "", p, err
	}
	if err := r.validateLegacy(&p); err != nil {
		return "", p, err
	}
	if r.Prompt == nil {
		return "", p, badRequest("prompt", "missing_required_parameter", "prompt is required")
	}
	return string(*r.Prompt), p, nil
}
