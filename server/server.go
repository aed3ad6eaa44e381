// Package server owns shade's local HTTP API: OpenAI-compatible chat and
// text completions (streamed as server-sent events or not), the model
// list, health and Prometheus metrics, request priority (foreground and
// background) with a one-at-a-time scheduler and a bounded queue, and the
// hardening around them (body and token limits, bounded work before
// admission, timeouts, an optional API key, Host, Origin and content-type
// checks against web pages, opt-in CORS, graceful shutdown). It is not a multi-tenant server: it serves one
// loaded model to the apps of one device.
package server

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"shade/chat"
	"shade/elastic"
	"shade/engine"
	"shade/grammar"
	"shade/sample"
	"shade/speculate"
)

// Options configure a Server. Zero values take the defaults shown.
type Options struct {
	// ModelID is the id in /v1/models and in responses (default: the model
	// file's base name; shade serve --alias sets it). Requests may name any
	// model: the server has one, and answers with it.
	ModelID      string
	APIKey       string           // if set, every endpoint but /health needs "Authorization: Bearer KEY"
	QueueSize    int              // generation requests waiting or running at once (default 16); more get 429
	MaxBodyBytes int64            // request body limit (default 4 MiB); larger bodies get 413
	Ctx          int              // context size per request (default: the model's, at most engine.DefaultCtx)
	Spec         speculate.Config // speculative decoding for every request
	// Elastic, if set, paces background requests (see PolicyElastic); its
	// policy at start (if not off) makes the server start in PolicyElastic.
	// Default: the engine's Governor (engine.Options.Policy, Switchable).
	Elastic       *elastic.Governor
	Template      *chat.Template // chat template (default: chat.FromGGUF)
	ReadTimeout   time.Duration  // reading a request (default 30 s)
	WriteTimeout  time.Duration  // each write of a response (default 60 s; streams extend it per event)
	IdleTimeout   time.Duration  // keep-alive connections (default 120 s)
	ShutdownDrain time.Duration  // graceful shutdown waits this long for running requests (default 30 s)
	Log           *log.Logger    // errors and notices (default: discarded)
	// AllowedHosts are host names (besides localhost and the address served)
	// that requests may name in their Host header; "*" allows any. Others
	// are refused, so that a DNS name rebound to this address cannot reach it.
	AllowedHosts []string
	// CORSOrigins are the web origins (such as "http://localhost:3000", or
	// "*") whose pages may call the API from a browser. Default: none.
	CORSOrigins []string
	// MaxPreparing bounds requests decoding, rendering and tokenizing at
	// once, before the queue admits them (default 2); BodyBudget bounds the
	// bytes of request bodies held meanwhile (default 4 × MaxBodyBytes).
	MaxPreparing int
	BodyBudget   int64
	// PrefixCache is the memory the KV of finished generations may keep,
	// for requests whose prompts share a prefix with them (a
	// conversation's next turn) to start from (default
	// DefaultPrefixCache; < 0: no cache).
	PrefixCache int64
}

// Server serves one engine over HTTP.
type Server struct {
	e        *engine.Engine
	opt      Options
	tmpl     *chat.Template
	lim      Limits
	m        *metrics
	sched    *scheduler
	mux      *http.ServeMux
	created  int64
	draining atomic.Bool
	adm      *admission
	active   atomic.Int64 // generation requests past admission, not yet answered

	served       atomic.Value // net.IP the server listens on (Serve)
	allowAnyHost bool
	allowedHosts map[string]bool
	corsAny      bool
	corsOrigins  map[string]bool
	prepHook     func() // tests: runs while a request holds a prepare slot
}

// New makes a Server for a loaded engine and starts its scheduler; Close
// (or Serve's return) stops it.
func New(e *engine.Engine, opt Options) *Server {
	if opt.ModelID == "" {
		opt.ModelID = strings.TrimSuffix(filepath.Base(e.Model.File.Path), ".gguf")
	}
	if opt.QueueSize <= 0 {
		opt.QueueSize = 16
	}
	if opt.MaxBodyBytes <= 0 {
		opt.MaxBodyBytes = 4 << 20
	}
	if opt.ReadTimeout <= 0 {
		opt.ReadTimeout = 30 * time.Second
	}
	if opt.WriteTimeout <= 0 {
		opt.WriteTimeout = 60 * time.Second
	}
	if opt.IdleTimeout <= 0 {
		opt.IdleTimeout = 120 * time.Second
	}
	if opt.ShutdownDrain <= 0 {
		opt.ShutdownDrain = 30 * time.Second
	}
	if opt.Log == nil {
		opt.Log = log.New(io.Discard, "", 0)
	}
	if opt.MaxPreparing <= 0 {
		opt.MaxPreparing = 2
	}
	if opt.BodyBudget <= 0 {
		opt.BodyBudget = 4 * opt.MaxBodyBytes
	}
	opt.BodyBudget = max(opt.BodyBudget, opt.MaxBodyBytes)
	opt.Ctx = e.ContextSize(opt.Ctx)
	if opt.Elastic == nil {
		opt.Elastic = e.Governor
	}
	s := &Server{e: e, opt: opt, m: newMetrics(func() float64 {
		if st := e.Stream; st != nil {
			return float64(st.Stats().BytesRead)
		}
		return 0
	}), created: time.Now().Unix(),
		lim: Limits{MaxTokens: opt.Ctx, MaxStop: 4, Vocab: e.Tok.VocabSize()}}
	s.adm = newAdmission(opt.BodyBudget, opt.MaxPreparing)
	s.allowedHosts, s.corsOrigins = map[string]bool{}, map[string]bool{}
	for _, h := range opt.AllowedHosts {
		h = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(h)), ".")
		s.allowAnyHost = s.allowAnyHost || h == "*"
		s.allowedHosts[h] = true
	}
	for _, o := range opt.CORSOrigins {
		o = strings.TrimSuffix(strings.TrimSpace(o), "/")
		s.corsAny = s.corsAny || o == "*"
		s.corsOrigins[o] = true
	}
	s.tmpl = opt.Template
	if s.tmpl == nil {
		var warn string
		s.tmpl, warn = chat.FromGGUF(&e.Model.File.Meta, e.Tok)
		if warn != "" {
			opt.Log.Printf("shade serve: %s", warn)
		}
	}
	if opt.PrefixCache == 0 {
		opt.PrefixCache = DefaultPrefixCache
	}
	s.sched = newScheduler(e, s.m, opt.QueueSize, opt.Elastic, newPrefixCache(opt.PrefixCache, s.m.reg))
	s.mux = http.NewServeMux()
	s.route("/v1/chat/completions", http.MethodPost, s.handleChat)
	s.route("/v1/completions", http.MethodPost, s.handleCompletion)
	s.route("/v1/models", http.MethodGet, s.handleModels)
	s.route("/v1/models/{id...}", http.MethodGet, s.handleModel)
	s.route("/v1/shade/policy", "", s.handlePolicy)
	s.route("/health", http.MethodGet, s.handleHealth)
	metricsHandler := promhttp.HandlerFor(s.m.reg, promhttp.HandlerOpts{})
	s.route("/metrics", http.MethodGet, func(w http.ResponseWriter, r *http.Request) *APIError {
		s.m.resident.Set(float64(engine.ResidentBytes()))
		metricsHandler.ServeHTTP(w, r)
		return nil
	})
	s.route("/", "", func(w http.ResponseWriter, r *http.Request) *APIError {
		return apiError(http.StatusNotFound, "invalid_request_error", "unknown_url", "unknown URL %s %s", r.Method, r.URL.Path)
	})
	return s
}

// Template is the chat template in use.
func (s *Server) Template() *chat.Template { return s.tmpl }

// ModelID is the id the server answers to.
func (s *Server) ModelID() string { return s.opt.ModelID }

// Handler is the HTTP handler of every endpoint.
func (s *Server) Handler() http.Handler { return s.mux }

// Close stops the scheduler: queued and running generations end.
func (s *Server) Close() { s.sched.close() }

// statusWriter records the status code for the metrics, and whether the
// client went away before the answer was complete.
type statusWriter struct {
	http.ResponseWriter
	code int
	gone bool
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (s *Server) count(endpoint string, code int) {
	s.m.requests.WithLabelValues(endpoint, strconv.Itoa(code)).Inc()
}

// route registers a handler behind the method check, the API key and a
// panic guard; the handler's error becomes an OpenAI-style error body.
func (s *Server) route(pattern, method string, h func(http.ResponseWriter, *http.Request) *APIError) {
	endpoint := strings.TrimSuffix(pattern, "/{id...}")
	if pattern == "/" {
		endpoint = "other"
	}
	s.mux.HandleFunc(pattern, func(rw http.ResponseWriter, r *http.Request) {
		w := &statusWriter{ResponseWriter: rw}
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				s.opt.Log.Printf("shade serve: panic in %s: %v", r.URL.Path, p)
				if w.code == 0 {
					writeError(w, apiError(http.StatusInternalServerError, "server_error", "", "internal error"))
				}
			}
			code := w.code
			if code == 0 {
				code = http.StatusOK
			}
			if w.gone || w.code == 0 && r.Context().Err() != nil {
				code = statusClientClosed
			}
			s.count(endpoint, code)
		}()
		if !s.hostAllowed(r.Host) && !overUnixSocket(r) {
			writeError(w, apiError(http.StatusForbidden, "invalid_request_error", "host_not_allowed",
				"the Host %q is not a name this server answers to: start it with --allowed-host NAME to use that name", r.Host))
			return
		}
		if done, e := s.checkOrigin(w, r); done || e != nil {
			if e != nil {
				writeError(w, e)
			}
			return
		}
		if method != "" && r.Method != method {
			w.Header().Set("Allow", method)
			writeError(w, apiError(http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed", "%s %s is not allowed: use %s", r.Method, r.URL.Path, method))
			return
		}
		if s.opt.APIKey != "" && pattern != "/health" && !s.authorized(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="shade"`)
			writeError(w, apiError(http.StatusUnauthorized, "invalid_request_error", "invalid_api_key", "missing or incorrect API key: send \"Authorization: Bearer KEY\""))
			return
		}
		if (r.Method == http.MethodPost || r.Method == http.MethodPut) && pattern != "/" {
			if e := checkContentType(r); e != nil {
				writeError(w, e)
				return
			}
		}
		if err := h(w, r); err != nil {
			writeError(w, err)
		}
	})
}

func (s *Server) authorized(r *http.Request) bool {
	h := r.Header.Get("Authorization")
	key, ok := strings.CutPrefix(h, "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(key)), []byte(s.opt.APIKey)) == 1
}

func writeError(w http.ResponseWriter, e *APIError) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(e.Status)
	json.NewEncoder(w).Encode(struct {
		Error *APIError `json:"error"`
	}{e})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) *APIError {
	if s.draining.Load() {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `{"status":"shutting down"}`+"\n")
		return nil
	}
	writeJSON(w, map[string]string{"status": "ok"})
	return nil
}

type modelObject struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

func (s *Server) model() modelObject {
	return modelObject{ID: s.opt.ModelID, Object: "model", Created: s.created, OwnedBy: "shade"}
}

func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) *APIError {
	writeJSON(w, map[string]any{"object": "list", "data": []modelObject{s.model()}})
	return nil
}

func (s *Server) handleModel(w http.ResponseWriter, r *http.Request) *APIError {
	if id := r.PathValue("id"); id != s.opt.ModelID {
		return s.unknownModel(id)
	}
	writeJSON(w, s.model())
	return nil
}

func (s *Server) unknownModel(id string) *APIError {
	e := apiError(http.StatusNotFound, "invalid_request_error", "model_not_found", "the model %q does not exist: this server serves %q", id, s.opt.ModelID)
	param := "model"
	e.Param = &param
	return e
}

// handlePolicy reads (GET) or sets (POST/PUT {"policy": …}) the background policy.
func (s *Server) handlePolicy(w http.ResponseWriter, r *http.Request) *APIError {
	switch r.Method {
	case http.MethodGet:
	case http.MethodPost, http.MethodPut:
		body, release, aerr := s.readBody(w, r)
		if aerr != nil {
			return aerr
		}
		defer release()
		var req struct {
			Policy  *string `json:"policy"`
			Elastic *string `json:"elastic"`
		}
		if aerr := decode(body, &req); aerr != nil {
			return aerr
		}
		if req.Policy == nil {
			return badRequest("policy", "missing_required_parameter", "policy is required (full, elastic, paused, or an elastic policy: balanced, ui-first)")
		}
		flavor := elastic.Off
		if req.Elastic != nil {
			f, err := elastic.ParsePolicy(*req.Elastic)
			if err != nil || f == elastic.Off {
				return badRequest("elastic", "invalid_value", "elastic must be balanced or ui-first, got %q", *req.Elastic)
			}
			flavor = f
		}
		switch p := *req.Policy; p {
		case PolicyFull, PolicyElastic, PolicyPaused:
			s.sched.setPolicy(p, flavor)
		case elastic.Balanced.String(), elastic.UIFirst.String():
			f, _ := elastic.ParsePolicy(p)
			s.sched.setPolicy(PolicyElastic, f)
		default:
			return badRequest("policy", "invalid_value", "policy must be full, elastic, paused, balanced or ui-first, got %q", p)
		}
	default:
		w.Header().Set("Allow", "GET, POST, PUT")
		return apiError(http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed", "use GET to read the policy, POST or PUT to set it")
	}
	p := s.sched.getPolicy()
	effective := p
	if p == PolicyElastic && s.opt.Elastic == nil {
		effective = PolicyFull
	}
	out := map[string]any{"policy": p, "effective": effective, "elastic": s.sched.elasticFlavor().String(), "note": policyNote(s.opt.Elastic != nil)}
	if s.opt.Elastic != nil {
		out["governor"] = s.opt.Elastic.GovernorStats()
	}
	writeJSON(w, out)
	return nil
}

// generation is a validated request ready to queue.
type generation struct {
	p           params
	prompt      []int32
	chat        bool
	id          string
	toolGrammar *grammar.Grammar // enforces a forced tool_choice
}

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) *APIError {
	return s.admit(w, r, "messages", func(body []byte) (generation, *APIError) {
		msgs, p, aerr := DecodeChat(body, s.lim, r.Header.Get(PriorityHeader))
		if aerr != nil {
			return generation{}, aerr
		}
		o := chat.Options{AddGenerationPrompt: true, Vars: p.tools.vars}
		if p.tools.choice.Mode != "none" {
			o.Tools = p.tools.tools
		}
		rendered, err := s.tmpl.RenderWith(msgs, o)
		if err != nil {
			return generation{}, badRequest("messages", "invalid_value", "%v", err)
		}
		if aerr := s.fits(rendered.Text, "messages"); aerr != nil {
			return generation{}, aerr
		}
		prompt, err := rendered.Tokens(s.e.Tok)
		if err != nil {
			return generation{}, badRequest("messages", "invalid_value", "%v", err)
		}
		tg, aerr := s.toolGrammar(p.tools)
		if aerr != nil {
			return generation{}, aerr
		}
		if tg != nil && p.grammar != nil {
			return generation{}, badRequest("tool_choice", "invalid_value", "tool_choice %s constrains the reply to tool calls: it cannot be combined with response_format, grammar or json_schema", p.tools.choice.Mode)
		}
		return generation{p: p, prompt: prompt, chat: true, id: "chatcmpl-" + randomID(), toolGrammar: tg}, nil
	})
}

func (s *Server) handleCompletion(w http.ResponseWriter, r *http.Request) *APIError {
	return s.admit(w, r, "prompt", func(body []byte) (generation, *APIError) {
		text, p, aerr := DecodeCompletion(body, s.lim, r.Header.Get(PriorityHeader))
		if aerr != nil {
			return generation{}, aerr
		}
		if aerr := s.fits(text, "prompt"); aerr != nil {
			return generation{}, aerr
		}
		prompt, err := s.e.Tok.Encode(text, true, true)
		if err != nil {
			return generation{}, badRequest("prompt", "invalid_value", "%v", err)
		}
		if len(prompt) == 0 {
			return generation{}, badRequest("prompt", "invalid_value", "prompt is empty (and this model adds no BOS token)")
		}
		return generation{p: p, prompt: prompt, id: "cmpl-" + randomID()}, nil
	})
}

// admit reads, decodes and tokenizes a generation request within the
// admission bounds (see admission), then queues it: what a request holds
// before the queue admits it is bounded by the body budget, the prepare
// slots and the context size, not by what the client sends.
func (s *Server) admit(w http.ResponseWriter, r *http.Request, promptParam string, prep func(body []byte) (generation, *APIError)) *APIError {
	if s.draining.Load() {
		return s.shuttingDown(w)
	}
	g, aerr := func() (generation, *APIError) {
		body, releaseBody, aerr := s.readBody(w, r)
		if aerr != nil {
			return generation{}, aerr
		}
		defer releaseBody()
		release, err := s.adm.prepare(r.Context(), s.opt.ReadTimeout)
		if err != nil {
			return generation{}, s.admissionError(w, err)
		}
		defer release()
		if s.prepHook != nil {
			s.prepHook()
		}
		return prep(body)
	}()
	if aerr != nil {
		return aerr
	}
	return s.generate(w, r, g, promptParam)
}

// fits refuses, before tokenizing it, a text that cannot fit the context.
func (s *Server) fits(text, param string) *APIError {
	if n := s.e.Tok.MinTokens(text); n >= s.opt.Ctx {
		return badRequest(param, "context_length_exceeded", "the prompt is %d bytes, at least %d tokens: this server's context is %d tokens", len(text), n, s.opt.Ctx)
	}
	return nil
}

func (s *Server) shuttingDown(w http.ResponseWriter) *APIError {
	w.Header().Set("Retry-After", "5")
	w.Header().Set("Connection", "close")
	return apiError(http.StatusServiceUnavailable, "server_error", "shutting_down", "the server is shutting down")
}

func randomID() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// usage is OpenAI's token accounting.
type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
	// PromptTokensDetails says how many prompt tokens came from the
	// prefix cache (cache.go).
	PromptTokensDetails promptDetails `json:"prompt_tokens_details"`
}

func finishReason(stop string) string {
	switch stop {
	case "eos":
		return "stop"
	case "length", "context":
		return "length"
	}
	return stop
}

// generate queues a generation and writes its result, streamed or whole.
func (s *Server) generate(w http.ResponseWriter, r *http.Request, g generation, promptParam string) *APIError {
	if len(g.prompt) >= s.opt.Ctx {
		e := badRequest(promptParam, "context_length_exceeded", "the prompt is %d tokens: this server's context is %d tokens", len(g.prompt), s.opt.Ctx)
		return e
	}
	s.active.Add(1)
	defer s.active.Add(-1)
	if s.draining.Load() {
		return s.shuttingDown(w)
	}
	seed := uint64(0)
	if g.p.seed != nil {
		seed = uint64(*g.p.seed)
	} else {
		seed = mrand.Uint64()
	}
	req := engine.Request{
		MaxTokens: g.p.maxTokens,
		Ctx:       s.opt.Ctx,
		Sampling:  sample.Params{Temp: float32(g.p.temp), TopP: float32(g.p.topP), RepeatPenalty: 1, RepeatLastN: 64, Seed: seed},
		Spec:      s.opt.Spec,
		IgnoreEOS: g.p.ignoreEOS,
		Stop:      g.p.stop,
		Logprobs:  g.p.logprobs, TopLogprobs: g.p.topLogprobs,
		Grammar: g.p.grammar,
		// A completion continues its prompt's text; a chat reply is one of its own.
		Continuation: !g.chat,
	}
	g.p.sampling.apply(&req.Sampling)
	if req.MaxTokens <= 0 {
		req.MaxTokens = s.opt.Ctx // until the context is full
	}
	if g.toolGrammar != nil {
		req.Grammar = g.toolGrammar
	}
	if aerr := s.grammarBudget(req, len(g.prompt)); aerr != nil {
		return aerr
	}
	j := newJob(r.Context(), g.p.priority, req, g.prompt)
	if err := s.sched.submit(j); err != nil {
		j.cancel()
		if errors.Is(err, errQueueFull) {
			w.Header().Set("Retry-After", "1")
			return apiError(http.StatusTooManyRequests, "rate_limit_error", "queue_full", "the server is busy: %d requests are queued or running; retry later", s.opt.QueueSize)
		}
		return s.shuttingDown(w)
	}
	w.Header().Set(PriorityHeader, g.p.priority.String())
	if g.p.priority == Background {
		w.Header().Set("X-Shade-Background-Policy", s.sched.getPolicy())
	}
	if g.p.stream {
		s.stream(w, r, j, g)
		return nil
	}
	return s.whole(w, r, j, g)
}

// wait blocks until the job has news or the client is gone.
func (s *Server) wait(w http.ResponseWriter, r *http.Request, j *job) bool {
	select {
	case <-j.notify:
		return true
	case <-r.Context().Done():
		s.sched.abandon(j)
		markGone(w)
		return false
	}
}

func (s *Server) whole(w http.ResponseWriter, r *http.Request, j *job, g generation) *APIError {
	var out strings.Builder
	var toks []engine.Token
	var st engine.Stats
	for {
		if !s.wait(w, r, j) {
			return nil // the client is gone
		}
		text, tk, finished, jst, err := j.takeTokens()
		out.WriteString(text)
		toks = append(toks, tk...)
		if finished && err != nil {
			return s.genError(err)
		}
		if finished {
			st = jst
			break
		}
	}
	reason := finishReason(st.StopReason)
	http.NewResponseController(w).SetWriteDeadline(time.Now().Add(s.opt.WriteTimeout))
	u := usageOf(len(g.prompt), st)
	if g.chat {
		msg := map[string]any{"role": "assistant", "content": out.String()}
		if tr := s.toolReader(g); tr != nil {
			msg, reason = tr.message(out.String()), tr.reason(reason)
		}
		writeJSON(w, map[string]any{
			"id": g.id, "object": "chat.completion", "created": time.Now().Unix(), "model": s.opt.ModelID,
			"choices": []any{map[string]any{"index": 0, "message": msg,
				"logprobs": s.logprobs(g, toks), "finish_reason": reason}},
			"usage": u, "system_fingerprint": "shade",
		})
	} else {
		writeJSON(w, map[string]any{
			"id": g.id, "object": "text_completion", "created": time.Now().Unix(), "model": s.opt.ModelID,
			"choices": []any{map[string]any{"index": 0, "text": out.String(), "logprobs": s.logprobs(g, toks), "finish_reason": reason}},
			"usage":   u, "system_fingerprint": "shade",
		})
	}
	return nil
}

// logprobs is a choice's logprobs object for toks, in the endpoint's
// shape; nil when the request did not ask for them.
func (s *Server) logprobs(g generation, toks []engine.Token) any {
	switch {
	case !g.p.logprobs:
		return nil
	case g.chat:
		return s.chatLogprobs(toks)
	}
	return s.completionLogprobs(toks)
}

func (s *Server) genError(err error) *APIError {
	switch {
	case errors.Is(err, errShutdown):
		return apiError(http.StatusServiceUnavailable, "server_error", "shutting_down", "the server is shutting down")
	case errors.Is(err, engine.ErrPromptTooLong):
		return badRequest("messages", "context_length_exceeded", "%v", err)
	}
	s.opt.Log.Printf("shade serve: generation failed: %v", err)
	return apiError(http.StatusInternalServerError, "server_error", "", "generation failed: %v", err)
}

// stream writes a generation as server-sent events, as OpenAI's API does.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, j *job, g generation) {
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	created := time.Now().Unix()
	send := func(v any) bool {
		rc.SetWriteDeadline(time.Now().Add(s.opt.WriteTimeout))
		b, _ := json.Marshal(v)
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	chunk := func(text string, toks []engine.Token, reason any, first bool) map[string]any {
		var lp any
		if len(toks) > 0 {
			lp = s.logprobs(g, toks)
		}
		if g.chat {
			delta := map[string]any{}
			if first {
				delta["role"] = "assistant"
			}
			if text != "" || first {
				delta["content"] = text
			}
			return map[string]any{"id": g.id, "object": "chat.completion.chunk", "created": created, "model": s.opt.ModelID,
				"system_fingerprint": "shade",
				"choices":            []any{map[string]any{"index": 0, "delta": delta, "logprobs": lp, "finish_reason": reason}}}
		}
		return map[string]any{"id": g.id, "object": "text_completion", "created": created, "model": s.opt.ModelID,
			"system_fingerprint": "shade",
			"choices":            []any{map[string]any{"index": 0, "text": text, "logprobs": lp, "finish_reason": reason}}}
	}
	gone := func() { s.sched.abandon(j); markGone(w) }
	done := func() {
		rc.SetWriteDeadline(time.Now().Add(s.opt.WriteTimeout))
		if _, err := io.WriteString(w, "data: [DONE]\n\n"); err != nil || rc.Flush() != nil {
			markGone(w)
		}
	}
	if g.chat && !send(chunk("", nil, nil, true)) {
		gone()
		return
	}
	tr := s.toolReader(g)
	sendText := func(piece string, toks []engine.Token, final bool) bool {
		if tr != nil {
			return tr.stream(piece, final, func(t string) map[string]any { return chunk(t, nil, nil, false) }, send)
		}
		return (piece == "" && len(toks) == 0) || send(chunk(piece, toks, nil, false))
	}
	for {
		if !s.wait(w, r, j) {
			return
		}
		text, toks, finished, st, err := j.takeTokens()
		if !sendText(text, toks, finished && err == nil) {
			gone()
			return
		}
		reason := ""
		switch {
		case finished && err != nil:
			// The status is sent already: the error is an event, and the
			// stream still ends as streams end, so that clients stop reading.
			ae := s.genError(err)
			if !send(map[string]any{"error": ae}) {
				markGone(w)
				return
			}
			done()
			return
		case finished:
			reason = finishReason(st.StopReason)
		}
		if reason == "" {
			continue
		}
		reason = tr.reason(reason)
		if !send(chunk("", nil, reason, false)) {
			markGone(w)
			return
		}
		if g.p.includeUsage {
			u := usageOf(len(g.prompt), st)
			c := chunk("", nil, nil, false)
			c["choices"] = []any{}
			c["usage"] = u
			if !send(c) {
				markGone(w)
				return
			}
		}
		done()
		return
	}
}

// Serve serves on ln until ctx is done, then shuts down gracefully: the
// generations in flight get up to ShutdownDrain to finish while new ones
// are answered 503 (and /health says 503), the listener staying open so
// that clients hear why; then the generations still running are ended
// (a stream gets an error event and its [DONE]), the listener closes and
// the scheduler stops.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error { return s.ServeAll(ctx, ln) }

// ServeAll is Serve on several listeners at once (TCP and a Unix-domain
// socket, say: ListenUnix), with one shutdown for them all.
func (s *Server) ServeAll(ctx context.Context, lns ...net.Listener) error {
	if len(lns) == 0 {
		return errors.New("server: no listener")
	}
	for _, ln := range lns {
		if a, ok := ln.Addr().(*net.TCPAddr); ok {
			s.served.Store(a.IP)
			break
		}
	}
	hs := &http.Server{
		Handler:           s.mux,
		ReadHeaderTimeout: min(s.opt.ReadTimeout, 10*time.Second),
		ReadTimeout:       s.opt.ReadTimeout,
		WriteTimeout:      s.opt.WriteTimeout,
		IdleTimeout:       s.opt.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          s.opt.Log,
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
		ConnContext:       markUnixConn,
	}
	errc := make(chan error, len(lns))
	for _, ln := range lns {
		go func() { errc <- hs.Serve(ln) }()
	}
	wait := func() {
		for range len(lns) - 1 {
			<-errc
		}
	}
	// A model file changed under the server stops it (after answering 500
	// to the request that met it): the mapping can no longer be trusted, a
	// cut file fails every request and a rewritten one computes with
	// weights nobody loaded. A supervisor can restart it on the new file.
	var broken error
	select {
	case err := <-errc:
		hs.Close()
		wait()
		s.Close()
		return err
	case <-ctx.Done():
	case broken = <-s.sched.broken:
		s.opt.Log.Printf("shade serve: %v: shutting down", broken)
	}
	s.draining.Store(true)
	hs.SetKeepAlivesEnabled(false)
	idle := func(d time.Duration) bool {
		for end := time.Now().Add(d); s.active.Load() > 0; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(end) {
				return false
			}
		}
		return true
	}
	var cutErr error
	if !idle(s.opt.ShutdownDrain) {
		n := s.active.Load()
		s.Close() // ends the running generations with errShutdown
		idle(2 * time.Second)
		cutErr = fmt.Errorf("server: shutdown: %d requests still running after %v were ended", n, s.opt.ShutdownDrain)
		s.opt.Log.Printf("shade serve: %v", cutErr)
	}
	closing, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := hs.Shutdown(closing); err != nil {
		hs.Close()
	}
	s.Close()
	for range lns {
		<-errc
	}
	if broken != nil {
		return fmt.Errorf("server: stopped: %w", broken)
	}
	return cutErr
}
