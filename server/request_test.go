package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"

	"shade/engine"
)

type logprobsResp struct {
	Model   string `json:"model"`
	Choices []struct {
		Text     string                   `json:"text"`
		Message  struct{ Content string } `json:"message"`
		Logprobs *struct {
			Content []struct {
				Token       string  `json:"token"`
				Logprob     float64 `json:"logprob"`
				Bytes       []int   `json:"bytes"`
				TopLogprobs []struct {
					Token   string  `json:"token"`
					Logprob float64 `json:"logprob"`
				} `json:"top_logprobs"`
			} `json:"content"`
			Tokens        []string             `json:"tokens"`
			TokenLogprobs []float64            `json:"token_logprobs"`
			TopLogprobs   []map[string]float64 `json:"top_logprobs"`
			TextOffset    []int                `json:"text_offset"`
		} `json:"logprobs"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

// TestLogprobsChatAndCompletions: chat's logprobs.content and the legacy
// lists carry one entry per counted token, whole and streamed alike,
// whose bytes make the returned text.
func TestLogprobsChatAndCompletions(t *testing.T) {
	_, url := start(t, Options{})
	body := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Tell me a story"}],"max_tokens":12,"temperature":0,"logprobs":true,"top_logprobs":3,"ignore_eos":true}`
	resp, b := post(t, url+"/v1/chat/completions", body)
	var cr logprobsResp
	if resp.StatusCode != 200 || json.Unmarshal(b, &cr) != nil || cr.Choices[0].Logprobs == nil {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	c := cr.Choices[0]
	lp := c.Logprobs.Content
	if len(lp) != 12 || cr.Usage.CompletionTokens != 12 {
		t.Fatalf("%d logprobs, %d completion tokens, want 12: %s", len(lp), cr.Usage.CompletionTokens, b)
	}
	var all []byte
	for i, e := range lp {
		for _, x := range e.Bytes {
			all = append(all, byte(x))
		}
		if e.Logprob > 0 || len(e.TopLogprobs) != 3 || e.TopLogprobs[0].Logprob < e.TopLogprobs[2].Logprob {
			t.Fatalf("entry %d: %+v", i, e)
		}
		// Greedy: the chosen token is the most likely one.
		if math.Abs(e.Logprob-e.TopLogprobs[0].Logprob) > 1e-6 || e.Token != e.TopLogprobs[0].Token {
			t.Fatalf("entry %d: greedy chose %q (%v), the most likely is %q (%v)", i, e.Token, e.Logprob, e.TopLogprobs[0].Token, e.TopLogprobs[0].Logprob)
		}
	}
	if !strings.HasSuffix(string(all), c.Message.Content) || len(all)-len(c.Message.Content) > 1 {
		t.Fatalf("the tokens' bytes %q do not make the text %q", all, c.Message.Content)
	}
	// Streamed: the same entries, chunk by chunk.
	resp, b = post(t, url+"/v1/chat/completions", strings.Replace(body, `"max_tokens"`, `"stream":true,"max_tokens"`, 1))
	evs, done := events(t, bytes.NewReader(b))
	n := 0
	for _, ev := range evs {
		ch := ev["choices"].([]any)
		if len(ch) == 0 {
			continue
		}
		if l, ok := ch[0].(map[string]any)["logprobs"].(map[string]any); ok {
			for _, e := range l["content"].([]any) {
				if e.(map[string]any)["token"] != lp[n].Token {
					t.Fatalf("streamed entry %d: %v, whole %+v", n, e, lp[n])
				}
				n++
			}
		}
	}
	if !done || n != 12 {
		t.Fatalf("streamed %d logprobs entries (done %v)", n, done)
	}

	// Completions: the legacy lists.
	resp, b = post(t, url+"/v1/completions", `{"model":"davinci","prompt":"Once upon a time","max_tokens":10,"temperature":0,"logprobs":2,"ignore_eos":true}`)
	cr = logprobsResp{}
	if resp.StatusCode != 200 || json.Unmarshal(b, &cr) != nil || cr.Choices[0].Logprobs == nil {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	l := cr.Choices[0].Logprobs
	if len(l.Tokens) != 10 || len(l.TokenLogprobs) != 10 || len(l.TopLogprobs) != 10 || len(l.TextOffset) != 10 {
		t.Fatalf("legacy logprobs: %s", b)
	}
	text := cr.Choices[0].Text
	for i := range l.Tokens {
		if len(l.TopLogprobs[i]) == 0 || len(l.TopLogprobs[i]) > 2 || l.TextOffset[i] > len(text) || i > 0 && l.TextOffset[i] < l.TextOffset[i-1] {
			t.Fatalf("token %d: top %v, offset %d in %q", i, l.TopLogprobs[i], l.TextOffset[i], text)
		}
	}
	// Without the fields, logprobs stay null.
	_, b = post(t, url+"/v1/completions", `{"prompt":"Once upon a time","max_tokens":3}`)
	if !bytes.Contains(b, []byte(`"logprobs":null`)) {
		t.Fatalf("logprobs not null: %s", b)
	}
}

// TestStopUsageExact: the same request with a stop sequence gives the
// same text and completion_tokens five times out of five, the count of
// the returned text's tokens, streamed or not.
func TestStopUsageExact(t *testing.T) {
	_, url := start(t, Options{})
	_, b := post(t, url+"/v1/completions", `{"prompt":"Once upon a time","max_tokens":60,"temperature":0,"logprobs":0}`)
	var full logprobsResp
	json.Unmarshal(b, &full)
	text := full.Choices[0].Text
	cut := strings.Index(text, ".")
	if cut < 0 {
		t.Fatalf("no period in %q", text)
	}
	want := 0
	for i, off := range full.Choices[0].Logprobs.TextOffset {
		if off < cut {
			want = i + 1
		}
	}
	for run := range 5 {
		for _, stream := range []bool{false, true} {
			body := fmt.Sprintf(`{"prompt":"Once upon a time","max_tokens":60,"temperature":0,"stop":["."],"stream":%v%s}`, stream, map[bool]string{true: `,"stream_options":{"include_usage":true}`}[stream])
			resp, b := post(t, url+"/v1/completions", body)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			var got string
			var tokens int
			if stream {
				evs, _ := events(t, bytes.NewReader(b))
				got, _ = streamText(evs)
				tokens = int(evs[len(evs)-1]["usage"].(map[string]any)["completion_tokens"].(float64))
			} else {
				var cr logprobsResp
				json.Unmarshal(b, &cr)
				got, tokens = cr.Choices[0].Text, cr.Usage.CompletionTokens
			}
			if got != text[:cut] || tokens != want {
				t.Fatalf("run %d, stream %v: %q with %d completion tokens, want %q with %d", run, stream, got, tokens, text[:cut], want)
			}
		}
	}
}

// TestAnyModelNameAndAlias: any model name is answered with the server's
// id; /v1/models/{id} stays exact.
func TestAnyModelNameAndAlias(t *testing.T) {
	_, url := start(t, Options{ModelID: "my-alias"})
	for _, name := range []string{"gpt-4o-mini", "", "my-alias"} {
		_, b := post(t, url+"/v1/chat/completions", fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"hi"}],"max_tokens":2}`, name))
		var cr logprobsResp
		if json.Unmarshal(b, &cr) != nil || cr.Model != "my-alias" {
			t.Errorf("model %q: %s", name, b)
		}
	}
	for path, code := range map[string]int{"/v1/models/my-alias": 200, "/v1/models/gpt-4o-mini": 404} {
		resp, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != code {
			t.Errorf("GET %s: %d, want %d", path, resp.StatusCode, code)
		}
	}
}

// TestFieldsHonouredOrRefused: fields outside the supported set are a 400
// naming them; the supported ones are range-checked.
func TestFieldsHonouredOrRefused(t *testing.T) {
	_, url := start(t, Options{})
	chatURL, cmplURL := url+"/v1/chat/completions", url+"/v1/completions"
	msg := `"messages":[{"role":"user","content":"x"}],"max_tokens":2`
	cases := []struct {
		url, body   string
		status      int
		param, code string
	}{
		{chatURL, `{` + msg + `,"audio":{"voice":"alloy"}}`, 400, "audio", "unsupported_parameter"},
		{chatURL, `{` + msg + `,"modalities":["text","audio"]}`, 400, "modalities", "unsupported_parameter"},
		{chatURL, `{` + msg + `,"prediction":{"type":"content","content":"x"}}`, 400, "prediction", "unsupported_parameter"},
		{chatURL, `{` + msg + `,"functions":[],"zzz":1}`, 400, "functions", "unsupported_parameter"},
		{chatURL, `{` + msg + `,"frobnicate":true}`, 400, "frobnicate", "unsupported_parameter"},
		{cmplURL, `{"prompt":"x","max_tokens":2,"top_logprobs":2}`, 400, "top_logprobs", "unsupported_parameter"},
		{cmplURL, `{"prompt":"x","max_tokens":2,"tools":[]}`, 400, "tools", "unsupported_parameter"},
		{chatURL, `{` + msg + `,"n":2}`, 400, "n", "invalid_value"},
		{chatURL, `{` + msg + `,"store":true}`, 400, "store", "unsupported_parameter"},
		{chatURL, `{` + msg + `,"presence_penalty":2.5}`, 400, "presence_penalty", "invalid_value"},
		{chatURL, `{` + msg + `,"frequency_penalty":-3}`, 400, "frequency_penalty", "invalid_value"},
		{chatURL, `{` + msg + `,"logit_bias":{"abc":1}}`, 400, "logit_bias", "invalid_value"},
		{chatURL, `{` + msg + `,"logit_bias":{"100000":1}}`, 400, "logit_bias", "invalid_value"},
		{chatURL, `{` + msg + `,"logit_bias":{"5":101}}`, 400, "logit_bias", "invalid_value"},
		{chatURL, `{` + msg + `,"top_k":-1}`, 400, "top_k", "invalid_value"},
		{chatURL, `{` + msg + `,"min_p":1.5}`, 400, "min_p", "invalid_value"},
		{chatURL, `{` + msg + `,"repeat_penalty":11}`, 400, "repeat_penalty", "invalid_value"},
		{chatURL, `{` + msg + `,"top_logprobs":2}`, 400, "top_logprobs", "invalid_value"},
		{chatURL, `{` + msg + `,"logprobs":true,"top_logprobs":21}`, 400, "top_logprobs", "invalid_value"},
		{cmplURL, `{"prompt":"x","logprobs":30}`, 400, "logprobs", "invalid_value"},
		{cmplURL, `{"prompt":"x","echo":true}`, 400, "echo", "unsupported_parameter"},
		{cmplURL, `{"prompt":"x","suffix":"y"}`, 400, "suffix", "unsupported_parameter"},
		{cmplURL, `{"prompt":"x","best_of":3}`, 400, "best_of", "invalid_value"},
		// Inside messages and stream_options too.
		{chatURL, `{"messages":[{"role":"user","content":"x"},{"role":"user","content":"y","audio":{"id":"a"}}],"max_tokens":2}`, 400, "messages[1].audio", "unsupported_parameter"},
		{chatURL, `{` + msg + `,"stream":true,"stream_options":{"include_usage":true,"include_obfuscation":true}}`, 400, "stream_options.include_obfuscation", "unsupported_parameter"},
		{chatURL, `{"messages":[{"role":"user","content":"x","name":"ann"},{"role":"assistant","content":"y","refusal":null,"annotations":[ ]},{"role":"user","content":"z"}],"max_tokens":2}`, 200, "", ""},
		// Honoured, harmless or delegated: accepted.
		{chatURL, `{` + msg + `,"user":"u1","metadata":{"a":"b"},"store":false,"audio":null,"seed":3}`, 200, "", ""},
		{chatURL, `{` + msg + `,"presence_penalty":1,"frequency_penalty":0.5,"logit_bias":{"5":-100,"6":3},"top_k":10,"min_p":0.1,"repeat_penalty":1.1,"temperature":0.7}`, 200, "", ""},
		{chatURL, `{` + msg + `,"logprobs":false,"top_p":0.9,"n":1}`, 200, "", ""},
		{cmplURL, `{"prompt":"x","max_tokens":2,"echo":false,"best_of":1,"suffix":null,"logit_bias":{"7":2}}`, 200, "", ""},
	}
	for _, c := range cases {
		resp, b := post(t, c.url, c.body)
		if resp.StatusCode != c.status {
			t.Errorf("%s: status %d, want %d: %s", c.body, resp.StatusCode, c.status, b)
			continue
		}
		if c.status == 200 {
			continue
		}
		var e struct {
			Error struct {
				Message string  `json:"message"`
				Param   *string `json:"param"`
				Code    *string `json:"code"`
			} `json:"error"`
		}
		json.Unmarshal(b, &e)
		if e.Error.Param == nil || *e.Error.Param != c.param || e.Error.Code == nil || *e.Error.Code != c.code || !strings.Contains(e.Error.Message, c.param) {
			t.Errorf("%s: error %s, want param %q code %q", c.body, b, c.param, c.code)
		}
	}
}

// TestLogitBiasHonoured: a bias of -100 on the token greedy decoding
// picks first moves it elsewhere.
func TestLogitBiasHonoured(t *testing.T) {
	srv, url := start(t, Options{})
	first := func(extra string) string {
		_, b := post(t, url+"/v1/completions", `{"prompt":"Once upon a time","max_tokens":1,"temperature":0,"logprobs":1`+extra+`}`)
		var cr logprobsResp
		json.Unmarshal(b, &cr)
		if cr.Choices == nil || cr.Choices[0].Logprobs == nil || len(cr.Choices[0].Logprobs.Tokens) != 1 {
			t.Fatalf("%s", b)
		}
		return cr.Choices[0].Logprobs.Tokens[0]
	}
	plain := first("")
	st, err := srv.e.Generate(context.Background(), engine.Request{Prompt: "Once upon a time", MaxTokens: 1}, func(string) error { return nil })
	if err != nil || len(st.Tokens) != 1 || string(srv.e.Tok.TokenBytes(st.Tokens[0])) != plain {
		t.Fatalf("greedy's first token: %v %v, the server's %q", st.Tokens, err, plain)
	}
	id := st.Tokens[0]
	if banned := first(fmt.Sprintf(`,"logit_bias":{"%d":-100}`, id)); banned == plain {
		t.Fatalf("the banned token %q (id %d) was still chosen", plain, id)
	}
	if forced := first(`,"logit_bias":{"300":100}`); forced != string(srv.e.Tok.TokenBytes(300)) {
		t.Fatalf("a bias of 100 on token 300 (%q) gave %q", srv.e.Tok.TokenBytes(300), forced)
	}
}
