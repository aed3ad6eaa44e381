package server

import "testing"

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
