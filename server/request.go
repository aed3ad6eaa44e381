package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"shade/engine"
	"shade/sample"
)

// Fields that other parts of the server own (structured output on both
// endpoints, tools on chat): accepted by name here, honoured by their own
// code.
var (
	outputFields = []string{"response_format", "grammar", "json_schema"}
	chatFields   = append([]string{"tools", "tool_choice", "parallel_tool_calls"}, outputFields...)
)

// refusedWhy says why some well-known fields this server does not
// implement are refused; any other unknown field gets the generic message.
var refusedWhy = map[string]string{
	"functions":          "the deprecated functions API is not supported: use tools",
	"function_call":      "the deprecated functions API is not supported: use tool_choice",
	"audio":              "audio output is not supported: this server generates text",
	"modalities":         "only text output is supported",
	"prediction":         "predicted outputs are not supported",
	"web_search_options": "web search is not supported",
	"reasoning_effort":   "reasoning effort is not supported: the model reasons (or not) as its template says",
	"service_tier":       "there is one service tier here",
	"verbosity":          "verbosity is not supported",
}

// jsonFields lists the JSON names of a struct's fields, those of embedded
// structs included: the fields a request type decodes.
func jsonFields(t reflect.Type, out map[string]bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			jsonFields(f.Type, out)
			continue
		}
		if name == "-" || !f.IsExported() && !f.Anonymous {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = true
	}
}

// checkFields refuses a body with a top-level field that v (a request
// type) does not decode and no other part of the server owns: a field the
// server does not implement is a 400 naming it, never silently ignored. A
// field set to null is as good as absent and passes.
func checkFields(body []byte, v any, delegated []string) *APIError {
	known := map[string]bool{}
	jsonFields(reflect.TypeOf(v).Elem(), known)
	var unknown []string
	topLevelFields(body, func(k string, null bool) {
		if !known[k] && !slices.Contains(delegated, k) && !null {
			unknown = append(unknown, k)
		}
	})
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	first := unknown[0]
	why := refusedWhy[first]
	if why == "" {
		why = "this server does not implement it, and would otherwise ignore it"
	}
	msg := fmt.Sprintf("unsupported field %q: %s", first, why)
	if len(unknown) > 1 {
		msg += fmt.Sprintf(" (unsupported fields: %s)", strings.Join(unknown, ", "))
	}
	return badRequest(first, "unsupported_parameter", "%s", msg)
}

// checkNested refuses fields inside messages and stream_options that the
// request types do not decode, as checkFields does at the top level: a
// message's "audio" or a "refusal" the template would drop is a 400
// naming it (messages[2].audio), not a silent loss.
func checkNested(body []byte, r *ChatRequest) *APIError {
	// The body was decoded already: walk its bytes rather than decode it
	// again (a large prompt must not cost twice its size).
	var messages, streamOpts []byte
	topLevelValues(body, func(k string, v []byte) {
		switch k {
		case "messages":
			messages = v
		case "stream_options":
			streamOpts = v
		}
	})
	msgKnown := map[string]bool{}
	jsonFields(reflect.TypeOf(r.Messages).Elem(), msgKnown)
	i := 0
	var aerr *APIError
	arrayElems(messages, func(m []byte) {
		var bad []string
		topLevelValues(m, func(k string, v []byte) {
			// An empty value says nothing: a client sending back a reply
			// it got as it came ("refusal": null, "annotations": []) loses
			// nothing.
			if !msgKnown[k] && !emptyJSON(v) {
				bad = append(bad, k)
			}
		})
		if len(bad) > 0 && aerr == nil {
			slices.Sort(bad)
			param := fmt.Sprintf("messages[%d].%s", i, bad[0])
			aerr = badRequest(param, "unsupported_parameter", "unsupported field %s: this server does not implement it, and would otherwise ignore it", param)
		}
		i++
	})
	if aerr != nil {
		return aerr
	}
	soKnown := map[string]bool{}
	jsonFields(reflect.TypeOf(streamOptions{}), soKnown)
	var bad string
	topLevelFields(streamOpts, func(k string, null bool) {
		if !soKnown[k] && !null && bad == "" {
			bad = k
		}
	})
	if bad != "" {
		return badRequest("stream_options."+bad, "unsupported_parameter", "unsupported field stream_options.%s: this server does not implement it", bad)
	}
	return nil
}

// emptyJSON reports a null, "", [] or {} value.
func emptyJSON(v []byte) bool {
	switch string(bytes.Join(bytes.Fields(v), nil)) {
	case "null", `""`, "[]", "{}":
		return true
	}
	return false
}

// topLevelValues calls f with each key of the JSON object in body and the
// bytes of its value (body is valid JSON: decode accepted it).
func topLevelValues(body []byte, f func(key string, val []byte)) {
	i := skipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return
	}
	i++
	for {
		i = skipSpace(body, i)
		if i >= len(body) || body[i] != '"' {
			return
		}
		end := skipString(body, i)
		var key string
		if json.Unmarshal(body[i:end], &key) != nil {
			return
		}
		i = skipSpace(body, end)
		if i >= len(body) || body[i] != ':' {
			return
		}
		i = skipSpace(body, i+1)
		v := i
		i = skipValue(body, i)
		f(key, body[v:i])
		i = skipSpace(body, i)
		if i >= len(body) || body[i] != ',' {
			return
		}
		i++
	}
}

// arrayElems calls f with the bytes of each element of the JSON array a.
func arrayElems(a []byte, f func(elem []byte)) {
	i := skipSpace(a, 0)
	if i >= len(a) || a[i] != '[' {
		return
	}
	for i = skipSpace(a, i+1); i < len(a) && a[i] != ']'; {
		v := i
		i = skipValue(a, i)
		if i <= v {
			return
		}
		f(a[v:i])
		if i = skipSpace(a, i); i < len(a) && a[i] == ',' {
			i = skipSpace(a, i+1)
		}
	}
}

// sampling are a request's validated sampling processors beyond
// temperature and top_p.
type sampling struct {
	topK                int
	minP, repeat        float64
	presence, frequency float64
	bias                map[int32]float32
}

// params of the sample package for these settings.
func (s sampling) apply(p *sample.Params) {
	p.TopK, p.MinP = s.topK, float32(s.minP)
	p.RepeatPenalty = float32(s.repeat)
	p.PresencePenalty, p.FrequencyPenalty = float32(s.presence), float32(s.frequency)
	p.LogitBias = s.bias
}

// inRange checks an optional number against [lo, hi].
func inRange(v *float64, name string, lo, hi float64) *APIError {
	if v != nil && !(*v >= lo && *v <= hi) {
		return badRequest(name, "invalid_value", "%s must be between %v and %v, got %v", name, lo, hi, *v)
	}
	return nil
}

func (c *common) validateSampling(lim Limits) (sampling, *APIError) {
	s := sampling{repeat: 1}
	for _, r := range []struct {
		v      *float64
		name   string
		lo, hi float64
	}{
		{c.PresencePenalty, "presence_penalty", -2, 2},
		{c.FrequencyPenalty, "frequency_penalty", -2, 2},
		{c.MinP, "min_p", 0, 1},
		{c.RepeatPenalty, "repeat_penalty", 0, 10},
	} {
		if err := inRange(r.v, r.name, r.lo, r.hi); err != nil {
			return s, err
		}
	}
	if c.PresencePenalty != nil {
		s.presence = *c.PresencePenalty
	}
	if c.FrequencyPenalty != nil {
		s.frequency = *c.FrequencyPenalty
	}
	if c.MinP != nil {
		s.minP = *c.MinP
	}
	if c.RepeatPenalty != nil {
		s.repeat = *c.RepeatPenalty
	}
	if c.TopK != nil {
		if *c.TopK < 0 {
			return s, badRequest("top_k", "invalid_value", "top_k must be 0 (off) or more, got %d", *c.TopK)
		}
		s.topK = *c.TopK
	}
	if len(c.LogitBias) > 0 {
		if lim.Vocab > 0 && len(c.LogitBias) > lim.Vocab {
			return s, badRequest("logit_bias", "invalid_value", "logit_bias has %d entries, the vocabulary %d tokens", len(c.LogitBias), lim.Vocab)
		}
		s.bias = make(map[int32]float32, len(c.LogitBias))
		for k, b := range c.LogitBias {
			id, err := strconv.ParseInt(k, 10, 32)
			if err != nil || id < 0 || lim.Vocab > 0 && id >= int64(lim.Vocab) {
				return s, badRequest("logit_bias", "invalid_value", "logit_bias key %q is not a token id in [0, %d)", k, lim.Vocab)
			}
			if !(b >= -100 && b <= 100) {
				return s, badRequest("logit_bias", "invalid_value", "logit_bias for token %d must be between -100 and 100, got %v", id, b)
			}
			s.bias[int32(id)] = float32(b)
		}
	}
	return s, nil
}

// validateMetadata checks the fields that change nothing here: user and
// metadata are an app's own labels (accepted, not used); store asks
// OpenAI to keep the completion for later retrieval, which this server
// never does, so only false is accepted.
func (c *common) validateMetadata() *APIError {
	if c.Store != nil && *c.Store {
		return badRequest("store", "unsupported_parameter", "store: true is not supported: this server keeps no completions")
	}
	if m := bytes.TrimSpace(c.Metadata); len(m) > 0 && !bytes.Equal(m, []byte("null")) && m[0] != '{' {
		return badRequest("metadata", "invalid_type", "metadata must be an object")
	}
	return nil
}

// validateLogprobs checks chat's logprobs and top_logprobs.
func (r *ChatRequest) validateLogprobs(p *params) *APIError {
	p.logprobs = r.Logprobs != nil && *r.Logprobs
	if r.TopLogprobs != nil {
		n := *r.TopLogprobs
		if n < 0 || n > engine.MaxTopLogprobs {
			return badRequest("top_logprobs", "invalid_value", "top_logprobs must be between 0 and %d, got %d", engine.MaxTopLogprobs, n)
		}
		if !p.logprobs {
			return badRequest("top_logprobs", "invalid_value", "top_logprobs needs logprobs: true")
		}
		p.topLogprobs = n
	}
	return nil
}

// validateLegacy checks the completion API's own fields.
func (r *CompletionRequest) validateLegacy(p *params) *APIError {
	if r.Logprobs != nil {
		n := *r.Logprobs
		if n < 0 || n > engine.MaxTopLogprobs {
			return badRequest("logprobs", "invalid_value", "logprobs must be between 0 and %d, got %d", engine.MaxTopLogprobs, n)
		}
		p.logprobs, p.topLogprobs = true, n
	}
	if r.Echo != nil && *r.Echo {
		return badRequest("echo", "unsupported_parameter", "echo: true is not supported: the prompt is the client's own")
	}
	if r.Suffix != nil && *r.Suffix != "" {
		return badRequest("suffix", "unsupported_parameter", "suffix (insertion) is not supported")
	}
	if r.BestOf != nil && *r.BestOf != 1 {
		return badRequest("best_of", "invalid_value", "only best_of=1 is supported, got %d", *r.BestOf)
	}
	return nil
}

// logprobFloor stands for -Inf, which JSON cannot carry (OpenAI's value).
const logprobFloor = -9999

func jsonLogprob(lp float32) float64 {
	if math.IsInf(float64(lp), -1) || lp != lp || lp < logprobFloor {
		return logprobFloor
	}
	return float64(lp)
}

// byteList is a token's bytes as OpenAI lists them (numbers, not base64).
func byteList(b []byte) []int {
	out := make([]int, len(b))
	for i, x := range b {
		out[i] = int(x)
	}
	return out
}

type chatTopLogprob struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

type chatLogprob struct {
	Token       string           `json:"token"`
	Logprob     float64          `json:"logprob"`
	Bytes       []int            `json:"bytes"`
	TopLogprobs []chatTopLogprob `json:"top_logprobs"`
}

// chatLogprobs is a chat choice's logprobs for the tokens given.
func (s *Server) chatLogprobs(toks []engine.Token) map[string]any {
	content := make([]chatLogprob, len(toks))
	for i, t := range toks {
		b := s.e.Tok.TokenBytes(t.ID)
		c := chatLogprob{Token: string(b), Logprob: jsonLogprob(t.Logprob), Bytes: byteList(b), TopLogprobs: make([]chatTopLogprob, len(t.Top))}
		for k, alt := range t.Top {
			ab := s.e.Tok.TokenBytes(alt.ID)
			c.TopLogprobs[k] = chatTopLogprob{Token: string(ab), Logprob: jsonLogprob(alt.Logprob), Bytes: byteList(ab)}
		}
		content[i] = c
	}
	return map[string]any{"content": content, "refusal": nil}
}

// completionLogprobs is the legacy API's logprobs object: parallel lists,
// text offsets in bytes of the choice's text.
func (s *Server) completionLogprobs(toks []engine.Token) map[string]any {
	tokens := make([]string, len(toks))
	lps := make([]float64, len(toks))
	top := make([]map[string]float64, len(toks))
	offsets := make([]int, len(toks))
	for i, t := range toks {
		tokens[i] = string(s.e.Tok.TokenBytes(t.ID))
		lps[i] = jsonLogprob(t.Logprob)
		offsets[i] = t.Offset
		top[i] = make(map[string]float64, len(t.Top))
		for _, alt := range t.Top {
			// Distinct ids may share a text (byte fallbacks of an invalid
			// sequence): the likelier keeps the key.
			key := string(s.e.Tok.TokenBytes(alt.ID))
			if _, dup := top[i][key]; !dup {
				top[i][key] = jsonLogprob(alt.Logprob)
			}
		}
	}
	return map[string]any{"tokens": tokens, "token_logprobs": lps, "top_logprobs": top, "text_offset": offsets}
}

// topLevelFields calls f with each key of the JSON object body (valid:
// decode has read it) and whether its value is null, without decoding
// the values: a request body may be megabytes of prompt.
func topLevelFields(body []byte, f func(key string, null bool)) {
	topLevelValues(body, func(k string, v []byte) { f(k, string(v) == "null") })
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the end of the JSON string starting at b[i] == '"'.
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// skipValue returns the end of the JSON value starting at b[i].
func skipValue(b []byte, i int) int {
	depth := 0
	for i < len(b) {
		switch c := b[i]; {
		case c == '"':
			i = skipString(b, i)
			if depth == 0 {
				return i
			}
			continue
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			if depth == 0 {
				return i
			}
			if depth--; depth == 0 {
				return i + 1
			}
		case depth == 0 && (c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			return i
		}
		i++
	}
	return i
}
