package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"shade/chat"
	"shade/engine"
	"shade/sample"
	"shade/weights"
)

const conformanceDir = "../../shared/testdata/conformance"

var (
	engOnce sync.Once
	engErr  error
	eng     *engine.Engine
)

// stories loads stories260K once for the package (engines are read-only;
// the server serializes their use).
func stories(t testing.TB) *engine.Engine {
	t.Helper()
	path := filepath.Join(conformanceDir, "stories260K.gguf")
	if _, err := os.Stat(path); err != nil {
		t.Skipf("%s not present: the shared conformance pack is needed", path)
	}
	engOnce.Do(func() { eng, engErr = engine.Load(path, 2) })
	if engErr != nil {
		t.Fatal(engErr)
	}
	return eng
}

// start serves e over a loopback listener.
func start(t testing.TB, opt Options) (*Server, string) {
	t.Helper()
	s := New(stories(t), opt)
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() { ts.Close(); s.Close() })
	return s, ts.URL
}

func post(t testing.TB, url, body string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

type chatResp struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Model   string `json:"model"`
	Choices []struct {
		Message struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"message"`
		Text         string `json:"text"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage usage `json:"usage"`
}

// events reads an SSE stream: the data lines, [DONE] excluded, and whether [DONE] came.
func events(t testing.TB, r io.Reader) ([]map[string]any, bool) {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			return out, true
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Fatalf("bad event %q: %v", data, err)
		}
		out = append(out, m)
	}
	return out, false
}

// streamText joins the text of chunks and returns the finish reason.
func streamText(evs []map[string]any) (text, reason string) {
	var b strings.Builder
	for _, e := range evs {
		ch, _ := e["choices"].([]any)
		for _, c := range ch {
			c := c.(map[string]any)
			if d, ok := c["delta"].(map[string]any); ok {
				s, _ := d["content"].(string)
				b.WriteString(s)
			}
			if s, ok := c["text"].(string); ok {
				b.WriteString(s)
			}
			if r, ok := c["finish_reason"].(string); ok {
				reason = r
			}
		}
	}
	return b.String(), reason
}

// reference generates what the server should for a chat at temperature 0.
func reference(t *testing.T, s *Server, msgs []chat.Message, n int) string {
	text, err := s.Template().Render(msgs, true)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := chat.Tokens(s.e.Tok, text)
	if err != nil {
		t.Fatal(err)
	}
	sess, err := s.e.NewSession(engine.Request{MaxTokens: n, Sampling: sample.Params{Temp: 0}}, ids)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	s.sched.mu.Lock() // keep the scheduler off the engine meanwhile
	defer s.sched.mu.Unlock()
	for !sess.Done() {
		if _, err := sess.Step(context.Background(), func(x string) error { b.WriteString(x); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

func TestChatStreamingAndNot(t *testing.T) {
	s, url := start(t, Options{})
	body := `{"model":"stories260K","messages":[{"role":"user","content":"Tell me a story."}],"max_tokens":24,"temperature":0}`
	resp, b := post(t, url+"/v1/chat/completions", body)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	var cr chatResp
	if err := json.Unmarshal(b, &cr); err != nil {
		t.Fatal(err)
	}
	want := reference(t, s, []chat.Message{{Role: "user", Content: "Tell me a story."}}, 24)
	if cr.Object != "chat.completion" || len(cr.Choices) != 1 || cr.Choices[0].Message.Role != "assistant" {
		t.Fatalf("response %s", b)
	}
	got := cr.Choices[0].Message.Content
	if got != want || want == "" {
		t.Fatalf("content %q, want %q", got, want)
	}
	if cr.Usage.CompletionTokens == 0 || cr.Usage.PromptTokens == 0 || cr.Usage.TotalTokens != cr.Usage.PromptTokens+cr.Usage.CompletionTokens {
		t.Fatalf("usage %+v", cr.Usage)
	}

	sbody := strings.Replace(body, `"temperature":0`, `"temperature":0,"stream":true,"stream_options":{"include_usage":true}`, 1)
	req, _ := http.NewRequest("POST", url+"/v1/chat/completions", strings.NewReader(sbody))
	req.Header.Set("Content-Type", "application/json")
	sresp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer sresp.Body.Close()
	if ct := sresp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	evs, done := events(t, sresp.Body)
	text, reason := streamText(evs)
	if !done || text != got || reason != cr.Choices[0].FinishReason {
		t.Fatalf("stream %q (%s, done %v), whole %q (%s)", text, reason, done, got, cr.Choices[0].FinishReason)
	}
	last := evs[len(evs)-1]
	if u, ok := last["usage"].(map[string]any); !ok || int(u["completion_tokens"].(float64)) != cr.Usage.CompletionTokens {
		t.Fatalf("usage chunk %v", last)
	}
	if first := evs[0]["choices"].([]any)[0].(map[string]any)["delta"].(map[string]any); first["role"] != "assistant" {
		t.Fatalf("first chunk %v", evs[0])
	}
}

func TestCompletionsAndStop(t *testing.T) {
	_, url := start(t, Options{})
	resp, b := post(t, url+"/v1/completions", `{"prompt":"Once upon a time","max_tokens":40,"temperature":0}`)
	var cr chatResp
	if resp.StatusCode != 200 || json.Unmarshal(b, &cr) != nil || cr.Object != "text_completion" {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	full := cr.Choices[0].Text
	if len(full) < 20 {
		t.Fatalf("short text %q", full)
	}
	// A completion continues its prompt: "Once upon a" + " time", the
	// space kept, as llama-server returns it.
	_, b = post(t, url+"/v1/completions", `{"prompt":"Once upon a","max_tokens":1,"temperature":0}`)
	if json.Unmarshal(b, &cr) != nil || cr.Choices[0].Text != " time" {
		t.Errorf("completion of \"Once upon a\": %s", b)
	}
	// A stop sequence from the middle of the text: what comes before it, finish "stop".
	stopAt := full[len(full)/2 : len(full)/2+4]
	want := full[:strings.Index(full, stopAt)]
	for _, stream := range []bool{false, true} {
		body := fmt.Sprintf(`{"prompt":["Once upon a time"],"max_tokens":40,"temperature":0,"stop":[%q,"zzzzqqq"],"stream":%v}`, stopAt, stream)
		resp, b := post(t, url+"/v1/completions", body)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
		var text, reason string
		if stream {
			evs, done := events(t, bytes.NewReader(b))
			if !done {
				t.Fatal("no [DONE]")
			}
			text, reason = streamText(evs)
		} else {
			json.Unmarshal(b, &cr)
			text, reason = cr.Choices[0].Text, cr.Choices[0].FinishReason
		}
		if text != want || reason != "stop" {
			t.Errorf("stream %v: %q (%s), want %q (stop); stop %q", stream, text, reason, want, stopAt)
		}
	}
	// max_tokens defaults to 16 for completions, as OpenAI's does.
	_, b = post(t, url+"/v1/completions", `{"prompt":"Once upon a time","temperature":0,"ignore_eos":true}`)
	json.Unmarshal(b, &cr)
	if cr.Usage.CompletionTokens != 16 || cr.Choices[0].FinishReason != "length" {
		t.Fatalf("default max_tokens: %s", b)
	}
}

func TestBadRequests(t *testing.T) {
	s, url := start(t, Options{MaxBodyBytes: 1 << 16})
	chatURL := url + "/v1/chat/completions"
	cases := []struct {
		name, url, method, body string
		status                  int
		param, code             string
		hdr                     []string
	}{
		{"invalid JSON", chatURL, "POST", `{"messages": [`, 400, "", "invalid_json", nil},
		{"not an object", chatURL, "POST", `[1,2]`, 400, "", "invalid_type", nil},
		{"empty body", chatURL, "POST", ``, 400, "", "", nil},
		{"trailing data", chatURL, "POST", `{"messages":[{"role":"user","content":"x"}]} {}`, 400, "", "invalid_json", nil},
		{"wrong type max_tokens", chatURL, "POST", `{"messages":[{"role":"user","content":"x"}],"max_tokens":"ten"}`, 400, "max_tokens", "invalid_type", nil},
		{"wrong type messages", chatURL, "POST", `{"messages":"hi"}`, 400, "messages", "invalid_type", nil},
		{"wrong type content", chatURL, "POST", `{"messages":[{"role":"user","content":42}]}`, 400, "messages", "invalid_type", nil},
		{"image part", chatURL, "POST", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}`, 400, "messages", "invalid_type", nil},
		{"wrong type temperature", chatURL, "POST", `{"messages":[{"role":"user","content":"x"}],"temperature":"hot"}`, 400, "temperature", "invalid_type", nil},
		{"wrong type stop", chatURL, "POST", `{"messages":[{"role":"user","content":"x"}],"stop":7}`, 400, "stop", "invalid_type", nil},
		{"no messages", chatURL, "POST", `{"model":"stories260K"}`, 400, "messages", "missing_required_parameter", nil},
		{"empty messages", chatURL, "POST", `{"messages":[]}`, 400, "messages", "invalid_value", nil},
		{"bad role", chatURL, "POST", `{"messages":[{"role":"wizard","content":"x"}]}`, 400, "messages[0].role", "invalid_value", nil},
		{"roles not alternating", chatURL, "POST", `{"messages":[{"role":"user","content":"x"},{"role":"user","content":"y"}]}`, 400, "messages", "invalid_value", nil},
		{"invalid UTF-8", chatURL, "POST", "{\"messages\":[{\"role\":\"user\",\"content\":\"\xff\xfe\"}]}", 400, "", "invalid_encoding", nil},
		{"n=2", chatURL, "POST", `{"messages":[{"role":"user","content":"x"}],"n":2}`, 400, "n", "invalid_value", nil},
		{"temperature 5", chatURL, "POST", `{"messages":[{"role":"user","content":"x"}],"temperature":5}`, 400, "temperature", "invalid_value", nil},
		{"top_p 0", chatURL, "POST", `{"messages":[{"role":"user","content":"x"}],"top_p":0}`, 400, "top_p", "invalid_value", nil},
		{"max_tokens 0", chatURL, "POST", `{"messages":[{"role":"user","content":"x"}],"max_tokens":0}`, 400, "max_tokens", "invalid_value", nil},
		{"max_tokens huge", chatURL, "POST", `{"messages":[{"role":"user","content":"x"}],"max_tokens":100000000}`, 400, "max_tokens", "invalid_value", nil},
		{"five stops", chatURL, "POST", `{"messages":[{"role":"user","content":"x"}],"stop":["a","b","c","d","e"]}`, 400, "stop", "invalid_value", nil},
		{"bad priority", chatURL, "POST", `{"messages":[{"role":"user","content":"x"}],"priority":"urgent"}`, 400, "priority", "invalid_value", nil},
		{"bad priority header", chatURL, "POST", `{"messages":[{"role":"user","content":"x"}]}`, 400, "", "invalid_value", []string{PriorityHeader, "urgent"}},
		{"stream_options without stream", chatURL, "POST", `{"messages":[{"role":"user","content":"x"}],"stream_options":{"include_usage":true}}`, 400, "stream_options", "", nil},
		{"prompt too long", chatURL, "POST", `{"messages":[{"role":"user","content":"` + strings.Repeat("and then ", 1500) + `"}]}`, 400, "messages", "context_length_exceeded", nil},
		{"body too large", chatURL, "POST", `{"messages":[{"role":"user","content":"` + strings.Repeat("x", 1<<17) + `"}]}`, 413, "", "request_too_large", nil},
		{"GET chat", chatURL, "GET", ``, 405, "", "method_not_allowed", nil},
		{"no prompt", url + "/v1/completions", "POST", `{"max_tokens":3}`, 400, "prompt", "missing_required_parameter", nil},
		{"two prompts", url + "/v1/completions", "POST", `{"prompt":["a","b"]}`, 400, "prompt", "invalid_type", nil},
		{"unknown URL", url + "/v2/everything", "GET", ``, 404, "", "unknown_url", nil},
		{"unknown model GET", url + "/v1/models/llama", "GET", ``, 404, "model", "model_not_found", nil},
		{"bad policy", url + "/v1/shade/policy", "POST", `{"policy":"turbo"}`, 400, "policy", "invalid_value", nil},
	}
	for _, c := range cases {
		req, _ := http.NewRequest(c.method, c.url, strings.NewReader(c.body))
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(c.hdr); i += 2 {
			req.Header.Set(c.hdr[i], c.hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e struct {
			Error struct {
				Message string  `json:"message"`
				Type    string  `json:"type"`
				Param   *string `json:"param"`
				Code    *string `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal(b, &e); err != nil || e.Error.Message == "" || e.Error.Type == "" {
			t.Errorf("%s: body %q is not an OpenAI error", c.name, b)
			continue
		}
		param, code := "", ""
		if e.Error.Param != nil {
			param = *e.Error.Param
		}
		if e.Error.Code != nil {
			code = *e.Error.Code
		}
		if resp.StatusCode != c.status || param != c.param || code != c.code {
			t.Errorf("%s: %d param %q code %q, want %d %q %q (%s)", c.name, resp.StatusCode, param, code, c.status, c.param, c.code, e.Error.Message)
		}
	}
	// None of them queued anything.
	if n := len(s.sched.fg) + len(s.sched.bg); n != 0 {
		t.Fatalf("%d jobs left", n)
	}
}

func TestAPIKey(t *testing.T) {
	_, url := start(t, Options{APIKey: "sekrit"})
	resp, b := post(t, url+"/v1/completions", `{"prompt":"Once","max_tokens":2}`)
	if resp.StatusCode != 401 || !strings.Contains(string(b), "invalid_api_key") {
		t.Fatalf("no key: %d %s", resp.StatusCode, b)
	}
	resp, _ = post(t, url+"/v1/completions", `{"prompt":"Once","max_tokens":2}`, "Authorization", "Bearer wrong")
	if resp.StatusCode != 401 {
		t.Fatalf("wrong key: %d", resp.StatusCode)
	}
	resp, b = post(t, url+"/v1/completions", `{"prompt":"Once","max_tokens":2}`, "Authorization", "Bearer sekrit")
	if resp.StatusCode != 200 {
		t.Fatalf("right key: %d %s", resp.StatusCode, b)
	}
	for path, want := range map[string]int{"/health": 200, "/metrics": 401, "/v1/models": 401} {
		r, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		if r.StatusCode != want {
			t.Errorf("GET %s without key: %d, want %d", path, r.StatusCode, want)
		}
	}
}

// openStream starts a streaming completion and returns once its first
// text has arrived.
func openStream(t *testing.T, ctx context.Context, url, body string, hdr ...string) (*http.Response, *bufio.Reader) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "POST", url+"/v1/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(line, "data: ") {
			return resp, br
		}
	}
}

// slow makes every step take d, so that generations last long enough to
// be interrupted.
func slow(s *Server, d time.Duration) {
	s.sched.beforeStep = func(*job) { time.Sleep(d) }
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

func (s *scheduler) jobs() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.fg) + len(s.bg)
}

func TestCancelMidStreamAndQueueFull(t *testing.T) {
	s, url := start(t, Options{QueueSize: 1})
	slow(s, 2*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	resp, _ := openStream(t, ctx, url, `{"prompt":"Once upon a time","max_tokens":400,"ignore_eos":true,"stream":true}`)
	// The queue (one slot) is full: 429 with an OpenAI error body.
	r2, b := post(t, url+"/v1/completions", `{"prompt":"Once","max_tokens":2}`)
	if r2.StatusCode != 429 || !strings.Contains(string(b), `"type":"rate_limit_error"`) || r2.Header.Get("Retry-After") == "" {
		t.Fatalf("queue full: %d %s", r2.StatusCode, b)
	}
	// The client goes away mid-stream: the generation stops and leaves the queue.
	cancel()
	resp.Body.Close()
	waitFor(t, "the canceled job to leave", func() bool { return s.sched.jobs() == 0 })
	r3, b := post(t, url+"/v1/completions", `{"prompt":"Once","max_tokens":2}`)
	if r3.StatusCode != 200 {
		t.Fatalf("after cancel: %d %s", r3.StatusCode, b)
	}
}

// A foreground request preempts a background one at its next step; the
// background one resumes with its KV cache and ends with the same text as
// when it runs alone.
func TestForegroundPreemptsBackground(t *testing.T) {
	s, url := start(t, Options{})
	body := `{"prompt":"Once upon a time","max_tokens":120,"ignore_eos":true,"temperature":0,"stream":true}`
	_, alone := post(t, url+"/v1/completions", body, PriorityHeader, "background")
	aloneText, _ := streamText(mustEvents(t, alone))

	slow(s, time.Millisecond)
	resp, br := openStream(t, context.Background(), url, body, PriorityHeader, "background")
	defer resp.Body.Close()
	if resp.Header.Get(PriorityHeader) != "background" || resp.Header.Get("X-Shade-Background-Policy") != PolicyFull {
		t.Fatalf("headers %v", resp.Header)
	}
	before := testutilValue(t, url, "shade_preemptions_total")
	r, b := post(t, url+"/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"}],"max_tokens":8,"priority":"foreground"}`)
	if r.StatusCode != 200 {
		t.Fatalf("foreground: %d %s", r.StatusCode, b)
	}
	if after := testutilValue(t, url, "shade_preemptions_total"); after != before+1 {
		t.Fatalf("preemptions %v → %v", before, after)
	}
	rest, _ := io.ReadAll(br)
	evs := mustEvents(t, rest)
	// The first event was read by openStream: re-read the whole text from the events' join.
	text, reason := streamText(evs)
	if reason != "length" || !strings.HasSuffix(aloneText, text) || len(text) == 0 {
		t.Fatalf("background after preemption: %q (%s); alone %q", text, reason, aloneText)
	}
}

func mustEvents(t *testing.T, b []byte) []map[string]any {
	t.Helper()
	evs, done := events(t, bytes.NewReader(b))
	if !done {
		t.Fatalf("stream without [DONE]: %s", b)
	}
	return evs
}

// testutilValue reads one sample from /metrics.
func testutilValue(t *testing.T, url, name string) float64 {
	t.Helper()
	r, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	sc := bufio.NewScanner(r.Body)
	for sc.Scan() {
		var v float64
		if strings.HasPrefix(sc.Text(), name+" ") {
			fmt.Sscan(strings.TrimPrefix(sc.Text(), name+" "), &v)
			return v
		}
	}
	t.Fatalf("metric %s not found", name)
	return 0
}

func TestPolicySwitch(t *testing.T) {
	s, url := start(t, Options{})
	resp, b := post(t, url+"/v1/shade/policy", `{"policy":"paused"}`)
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"policy":"paused"`) || !strings.Contains(string(b), `behaves as`) {
		t.Fatalf("set paused: %d %s", resp.StatusCode, b)
	}
	done := make(chan []byte)
	go func() {
		_, b := post(t, url+"/v1/completions", `{"prompt":"Once","max_tokens":4,"priority":"background"}`)
		done <- b
	}()
	waitFor(t, "the background job to queue", func() bool { return s.sched.jobs() == 1 })
	// Foreground work still runs while background work is paused.
	if r, b := post(t, url+"/v1/completions", `{"prompt":"Once","max_tokens":4}`); r.StatusCode != 200 {
		t.Fatalf("foreground while paused: %d %s", r.StatusCode, b)
	}
	select {
	case b := <-done:
		t.Fatalf("background ran while paused: %s", b)
	case <-time.After(50 * time.Millisecond):
	}
	resp, b = post(t, url+"/v1/shade/policy", `{"policy":"elastic"}`)
	if !strings.Contains(string(b), `"effective":"full"`) {
		t.Fatalf("elastic: %s", b)
	}
	if b := <-done; !strings.Contains(string(b), `"text_completion"`) {
		t.Fatalf("background after resume: %s", b)
	}
	r, err := http.Get(url + "/v1/shade/policy")
	if err != nil {
		t.Fatal(err)
	}
	gb, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if !strings.Contains(string(gb), `"policy":"elastic"`) {
		t.Fatalf("GET policy: %s", gb)
	}
}

func TestModelsHealthMetrics(t *testing.T) {
	_, url := start(t, Options{})
	post(t, url+"/v1/completions", `{"prompt":"Once","max_tokens":3}`)
	for path, want := range map[string][]string{
		"/v1/models":             {`"object":"list"`, `"id":"stories260K"`},
		"/v1/models/stories260K": {`"object":"model"`},
		"/health":                {`"status":"ok"`},
		"/metrics": {"shade_requests_total{code=\"200\",endpoint=\"/v1/completions\"} 1", "shade_prompt_tokens_total",
			"shade_generated_tokens_total 3", "shade_generation_tokens_per_second", "shade_spec_acceptance_rate",
			"shade_spec_mean_accepted_length", "shade_contention_score", "shade_controller_actions_total",
			"shade_resident_bytes", "shade_streamed_weight_bytes_total", "shade_queue_depth", "shade_background_policy{policy=\"full\"} 1",
			"shade_time_to_first_token_seconds_bucket", "go_goroutines"},
	} {
		r, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		for _, w := range want {
			if r.StatusCode != 200 || !strings.Contains(string(b), w) {
				t.Errorf("GET %s: %d, no %q in\n%.2000s", path, r.StatusCode, w, b)
			}
		}
	}
}

// Serve drains on shutdown: a stream in flight finishes, new connections
// are refused, /health said 503 meanwhile.
func TestGracefulShutdown(t *testing.T) {
	// The write timeout bounds the gap between two events: it is wide
	// enough for a loaded machine under the race detector.
	s := New(stories(t), Options{ReadTimeout: 200 * time.Millisecond, WriteTimeout: time.Second})
	slow(s, 3*time.Millisecond)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error)
	go func() { served <- s.Serve(ctx, ln) }()
	// 400 steps of ≥ 3 ms: the stream outlives the read and write timeouts.
	resp, br := openStream(t, context.Background(), url, `{"prompt":"Once upon a time","max_tokens":400,"ignore_eos":true,"stream":true}`)
	defer resp.Body.Close()
	cancel()
	rest, err := io.ReadAll(br)
	if err != nil {
		t.Fatalf("stream cut: %v", err)
	}
	if _, reason := streamText(mustEvents(t, rest)); reason != "length" {
		t.Fatalf("drained stream ended with %q", reason)
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(url + "/health"); err == nil {
		t.Fatal("server still accepting after shutdown")
	}
}

// TestStreamedBytesMetric: with layers streamed under a DRAM budget,
// /metrics counts the bytes read from storage.
func TestStreamedBytesMetric(t *testing.T) {
	stories(t)
	e, err := engine.Load(filepath.Join(conformanceDir, "stories260K.gguf"), 2)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := e.SetDRAMBudget(0, weights.Options{}); err != nil {
		t.Fatal(err)
	}
	s := New(e, Options{})
	ts := httptest.NewServer(s.Handler())
	defer func() { ts.Close(); s.Close() }()
	post(t, ts.URL+"/v1/completions", `{"prompt":"Once","max_tokens":3}`)
	r, err := http.Get(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r.Body)
	r.Body.Close()
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "shade_streamed_weight_bytes_total "); ok {
			if n, err := strconv.ParseFloat(v, 64); err != nil || n <= 0 {
				t.Errorf("streamed bytes = %q with every layer streamed", v)
			}
			return
		}
	}
	t.Errorf("no shade_streamed_weight_bytes_total in\n%.1500s", b)
}
