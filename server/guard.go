package server

import (
	"context"
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// A web page the user visits can send requests to 127.0.0.1, and a DNS
// name the attacker controls can be rebound to it. The guards below keep
// such pages out: the Host must name this server (a rebound name does
// not), a cross-origin page must be on the --cors-origin allowlist, and a
// POST must say it is JSON (which no form or simple fetch can do without a
// CORS preflight).

// hostAllowed reports whether a request's Host header names this server:
// localhost, a loopback address, the address it listens on (any IP if it
// listens on all of them), or a name given in Options.AllowedHosts.
func (s *Server) hostAllowed(hostport string) bool {
	if hostport == "" {
		return true // HTTP/1.0 without Host: not a browser
	}
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if s.allowAnyHost || host == "localhost" || strings.HasSuffix(host, ".localhost") || s.allowedHosts[host] {
		return true
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return false
	}
	if ip.IsLoopback() {
		return true
	}
	served, _ := s.served.Load().(net.IP)
	return served != nil && (served.IsUnspecified() || served.Equal(ip))
}

// corsHeaders are the request headers a browser may send cross-origin.
const corsMethods = "GET, POST, PUT, OPTIONS"

// checkOrigin applies CORS. A request without Origin (curl, SDKs) or from
// this server's own origin passes; one from an origin on the allowlist gets
// the CORS headers (and a preflight its answer: done is true); any other
// origin is refused.
func (s *Server) checkOrigin(w http.ResponseWriter, r *http.Request) (done bool, e *APIError) {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return false, nil
	}
	allowed := s.corsAny || s.corsOrigins[origin]
	if !allowed {
		if u, err := url.Parse(origin); err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host) {
			return false, nil // same origin: not a CORS request
		}
		return false, apiError(http.StatusForbidden, "invalid_request_error", "origin_not_allowed",
			"requests from the web origin %q are not allowed: start the server with --cors-origin %s to allow them", origin, origin)
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Add("Vary", "Origin")
	h.Set("Access-Control-Expose-Headers", PriorityHeader+", X-Shade-Background-Policy, Retry-After")
	if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
		h.Set("Access-Control-Allow-Methods", corsMethods)
		if rh := r.Header.Get("Access-Control-Request-Headers"); rh != "" && validHeaderList(rh) {
			h.Set("Access-Control-Allow-Headers", rh)
		}
		h.Set("Access-Control-Max-Age", "600")
		w.WriteHeader(http.StatusNoContent)
		return true, nil
	}
	return false, nil
}

// validHeaderList accepts a comma-separated list of header names.
func validHeaderList(s string) bool {
	if len(s) > 2048 {
		return false
	}
	for _, c := range s {
		if !(c == ',' || c == ' ' || c == '-' || c == '_' || c == '.' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

// checkContentType refuses a body that does not say it is JSON.
func checkContentType(r *http.Request) *APIError {
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json")) {
		return nil
	}
	e := apiError(http.StatusUnsupportedMediaType, "invalid_request_error", "unsupported_media_type",
		"the request body must be JSON sent with \"Content-Type: application/json\", got Content-Type %q", ct)
	return e
}

// admission bounds what requests take before the scheduler's queue admits
// them: the bytes of bodies being read or decoded (each body reserves its
// Content-Length, or the body limit, from a shared budget) and the number
// of requests decoding, rendering and tokenizing at once. Requests beyond
// either wait holding only their connection.
type admission struct {
	budget int64
	slots  chan struct{}

	mu    sync.Mutex
	used  int64
	freed chan struct{} // closed (and replaced) when bytes are released

	// Observed for tests and metrics.
	waiting   atomic.Int64
	preparing atomic.Int64
	peakBytes atomic.Int64
	peakPrep  atomic.Int64
}

func newAdmission(budget int64, slots int) *admission {
	return &admission{budget: budget, slots: make(chan struct{}, slots), freed: make(chan struct{})}
}

var errBusy = errors.New("server: busy")

// reserve takes n bytes of the budget, waiting up to maxWait for them.
func (a *admission) reserve(ctx context.Context, n int64, maxWait time.Duration) (release func(), err error) {
	n = min(n, a.budget)
	var timer <-chan time.Time
	for {
		a.mu.Lock()
		if a.used+n <= a.budget {
			a.used += n
			peakMax(&a.peakBytes, a.used)
			a.mu.Unlock()
			var once sync.Once
			return func() {
				once.Do(func() {
					a.mu.Lock()
					a.used -= n
					close(a.freed)
					a.freed = make(chan struct{})
					a.mu.Unlock()
				})
			}, nil
		}
		freed := a.freed
		a.mu.Unlock()
		if timer == nil {
			t := time.NewTimer(maxWait)
			defer t.Stop()
			timer = t.C
		}
		a.waiting.Add(1)
		select {
		case <-freed:
			a.waiting.Add(-1)
		case <-ctx.Done():
			a.waiting.Add(-1)
			return nil, ctx.Err()
		case <-timer:
			a.waiting.Add(-1)
			return nil, errBusy
		}
	}
}

// prepare waits for a slot to decode, render and tokenize in.
func (a *admission) prepare(ctx context.Context, maxWait time.Duration) (release func(), err error) {
	t := time.NewTimer(maxWait)
	defer t.Stop()
	a.waiting.Add(1)
	select {
	case a.slots <- struct{}{}:
		a.waiting.Add(-1)
	case <-ctx.Done():
		a.waiting.Add(-1)
		return nil, ctx.Err()
	case <-t.C:
		a.waiting.Add(-1)
		return nil, errBusy
	}
	peakMax(&a.peakPrep, a.preparing.Add(1))
	var once sync.Once
	return func() {
		once.Do(func() {
			a.preparing.Add(-1)
			<-a.slots
		})
	}, nil
}

func peakMax(p *atomic.Int64, v int64) {
	for {
		old := p.Load()
		if v <= old || p.CompareAndSwap(old, v) {
			return
		}
	}
}

// readBody reads a request body within the size limit and the admission
// budget; release gives its bytes back (the caller calls it once the body
// is decoded and no longer needed).
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) (body []byte, release func(), e *APIError) {
	if r.ContentLength > s.opt.MaxBodyBytes {
		return nil, nil, s.tooLarge()
	}
	need := s.opt.MaxBodyBytes
	if r.ContentLength >= 0 {
		need = r.ContentLength + 512 // a little for decoding
	}
	release, err := s.adm.reserve(r.Context(), need, s.opt.ReadTimeout)
	if err != nil {
		return nil, nil, s.admissionError(w, err)
	}
	mbr := http.MaxBytesReader(w, r.Body, s.opt.MaxBodyBytes)
	if r.ContentLength >= 0 {
		// The server holds the body to its Content-Length: read it in one buffer.
		body = make([]byte, r.ContentLength)
		_, err = io.ReadFull(mbr, body)
	} else {
		body, err = io.ReadAll(mbr)
	}
	if err != nil {
		release()
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, nil, s.tooLarge()
		}
		return nil, nil, badRequest("", "", "reading the request body: %v", err)
	}
	return body, release, nil
}

func (s *Server) tooLarge() *APIError {
	return apiError(http.StatusRequestEntityTooLarge, "invalid_request_error", "request_too_large", "the request body is larger than %d bytes", s.opt.MaxBodyBytes)
}

// admissionError is the answer to a request that waited too long to be
// read or prepared (or whose client left meanwhile).
func (s *Server) admissionError(w http.ResponseWriter, err error) *APIError {
	if errors.Is(err, errBusy) {
		w.Header().Set("Retry-After", "1")
		return apiError(http.StatusServiceUnavailable, "server_error", "busy", "the server is busy preparing other requests; retry later")
	}
	markGone(w)
	return apiError(statusClientClosed, "invalid_request_error", "client_closed", "the client closed the request")
}

// statusClientClosed is nginx's code for a request its client abandoned;
// the metrics count such requests under it, not under the status sent.
const statusClientClosed = 499

func markGone(w http.ResponseWriter) {
	if sw, ok := w.(*statusWriter); ok {
		sw.gone = true
	}
}
