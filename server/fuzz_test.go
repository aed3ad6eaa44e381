package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"shade/elastic"
)

// FuzzDecode: the request decoders never panic, and every refusal is a
// 4xx OpenAI error with a message and a type.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":5,"temperature":0.5,"top_p":0.9,"seed":1,"stop":["a"],"n":1,"stream":true,"stream_options":{"include_usage":true}}`,
		`{"messages":[{"role":"system","content":[{"type":"text","text":"x"}]},{"role":"user","content":null}],"stop":"x","priority":"background"}`,
		`{"prompt":["a"],"max_tokens":1}`, `{"prompt":"x","max_completion_tokens":3,"ignore_eos":true}`,
		`{"messages":[{"role":"user","content":42}]}`, `[1]`, `"s"`, `{"temperature":1e400}`, "{\"prompt\":\"\xff\"}",
		`{"stop":[null]}`, `{"n":-1}`, `{"messages":[]}`, ``,
	} {
		f.Add([]byte(s), "")
	}
	f.Add([]byte(`{"prompt":"x"}`), "background")
	lim := Limits{MaxTokens: 2048, MaxStop: 4}
	check := func(t *testing.T, e *APIError) {
		if e == nil {
			return
		}
		if e.Status < 400 || e.Status >= 500 || e.Message == "" || e.Type == "" {
			t.Fatalf("bad error %+v", e)
		}
	}
	f.Fuzz(func(t *testing.T, body []byte, header string) {
		msgs, p, e := DecodeChat(body, lim, header)
		check(t, e)
		if e == nil {
			if len(msgs) == 0 || p.maxTokens < 0 || p.maxTokens > lim.MaxTokens || p.temp < 0 || p.temp > 2 || len(p.stop) > lim.MaxStop {
				t.Fatalf("accepted bad chat request: %d messages, %+v", len(msgs), p)
			}
		}
		_, p, e = DecodeCompletion(body, lim, header)
		check(t, e)
		if e == nil && (p.maxTokens < 1 || p.maxTokens > lim.MaxTokens || p.topP <= 0 || p.topP > 1) {
			t.Fatalf("accepted bad completion request: %+v", p)
		}
	})
}

// FuzzRequest: whole requests (body and the headers the guards read)
// through the handler: never a panic or a 5xx but 503, and every refusal
// an OpenAI error. The context is small so that accepted requests stay
// short.
func FuzzRequest(f *testing.F) {
	s := New(stories(f), Options{Ctx: 48, MaxBodyBytes: 1 << 16})
	f.Cleanup(s.Close)
	h := s.Handler()
	for _, c := range [][4]string{
		{`{"messages":[{"role":"user","content":"hi</s><s>[INST]"}],"max_tokens":3}`, "application/json", "localhost", ""},
		{`{"prompt":"Once","max_tokens":2,"stream":true}`, "application/json; charset=utf-8", "127.0.0.1:8080", ""},
		{`{"policy":"paused"}`, "text/plain", "attacker.example", "http://attacker.example"},
		{`{"messages":[{"role":"user","content":[{"type":"text","text":null}]}]}`, "application/json", "[::1]", "null"},
		{`{"prompt":"` + strings.Repeat("x ", 3000) + `"}`, "application/json", "", ""},
		{`{"messages":[{"role":"user","content":"\uFDD0a\uFDD1"}],"max_tokens":1,"stop":["a"]}`, "application/vnd.api+json", "LOCALHOST.", ""},
	} {
		for _, path := range []string{"/v1/chat/completions", "/v1/completions", "/v1/shade/policy"} {
			f.Add(path, c[0], c[1], c[2], c[3])
		}
	}
	f.Fuzz(func(t *testing.T, path, body, ctype, host, origin string) {
		if path != "/v1/chat/completions" && path != "/v1/completions" && path != "/v1/shade/policy" {
			path = "/v1/completions"
		}
		req := httptest.NewRequest("POST", path, strings.NewReader(body))
		req.Host = host
		req.Header.Set("Content-Type", ctype)
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code >= 500 && w.Code != http.StatusServiceUnavailable {
			t.Fatalf("%s %q: %d %s", path, body, w.Code, w.Body.String())
		}
		if w.Code >= 400 {
			var e struct {
				Error APIError `json:"error"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Error.Message == "" || e.Error.Type == "" {
				t.Fatalf("%s %q: %d with body %q", path, body, w.Code, w.Body.String())
			}
		}
		if path == "/v1/shade/policy" {
			s.sched.setPolicy(PolicyFull, elastic.Off) // a paused policy would hold later background requests
		}
	})
}
