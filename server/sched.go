package server

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"shade/elastic"
	"shade/engine"
	"shade/gguf"
	"shade/speculate"
)

// Background policies, switched at run time through /v1/shade/policy.
const (
	// PolicyFull runs background requests at full speed whenever no
	// foreground request is waiting.
	PolicyFull = "full"
	// PolicyElastic runs background requests under the elastic governor
	// (Options.Elastic): the draft model's layer latencies sense memory
	// contention and the governor preempts drafts, widens verification
	// and sleeps between target layers to yield bandwidth to the
	// foreground app, with the chosen elastic policy (balanced or
	// ui-first). Without a governor (no draft model) it behaves as
	// PolicyFull, and the endpoint says so.
	PolicyElastic = "elastic"
	// PolicyPaused runs no background step at all: started background
	// generations keep their KV cache and resume when the policy changes.
	PolicyPaused = "paused"
)

// policyNote says what the policies do on this server.
func policyNote(elastic bool) string {
	if !elastic {
		return "no elastic governor on this server (it needs a draft model): \"elastic\" behaves as \"full\"; \"paused\" holds background work"
	}
	return "\"elastic\" runs background requests under the elastic governor (balanced or ui-first); \"full\" runs them uncontrolled; \"paused\" holds them"
}

var errShutdown = errors.New("server: shutting down")

// job is one generation request on its way through the scheduler.
type job struct {
	ctx     context.Context
	cancel  context.CancelFunc
	prio    Priority
	req     engine.Request
	prompt  []int32
	arrived time.Time

	started bool // set under scheduler.mu when first picked

	// Owned by the scheduler goroutine.
	sess     *engine.Session
	reported int // generated tokens already counted in the metrics

	mu       sync.Mutex
	text     strings.Builder // text not yet taken by the handler
	toks     []engine.Token  // the tokens released with it
	firstAt  time.Time
	finished bool
	stats    engine.Stats
	err      error
	notify   chan struct{} // signaled (without blocking) on new text or the end
}

func newJob(parent context.Context, prio Priority, req engine.Request, prompt []int32) *job {
	ctx, cancel := context.WithCancel(parent)
	return &job{ctx: ctx, cancel: cancel, prio: prio, req: req, prompt: prompt, arrived: time.Now(), notify: make(chan struct{}, 1)}
}

func (j *job) signal() {
	select {
	case j.notify <- struct{}{}:
	default:
	}
}

// emit is the session's output callback: it never blocks on the client.
func (j *job) emit(p engine.Piece) error {
	j.mu.Lock()
	if j.firstAt.IsZero() && p.Text != "" {
		j.firstAt = time.Now()
	}
	j.text.WriteString(p.Text)
	j.toks = append(j.toks, p.Tokens...)
	j.mu.Unlock()
	j.signal()
	return nil
}

func (j *job) finish(st engine.Stats, err error) {
	j.mu.Lock()
	j.finished, j.stats, j.err = true, st, err
	j.mu.Unlock()
	j.cancel() // releases the context's resources
	j.signal()
}

// take returns the text produced since the last call and, once the job
// has ended, its stats and error.
func (j *job) take() (text string, finished bool, st engine.Stats, err error) {
	text, _, finished, st, err = j.takeTokens()
	return text, finished, st, err
}

// takeTokens is take with the tokens released with the text.
func (j *job) takeTokens() (text string, toks []engine.Token, finished bool, st engine.Stats, err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	text, toks = j.text.String(), j.toks
	j.text.Reset()
	j.toks = nil
	return text, toks, j.finished, j.stats, j.err
}

// scheduler runs generations one step at a time on one goroutine: the
// engine's worker pool serves one forward pass at a time, and on a phone
// one generation at a time is what the memory bandwidth allows anyway.
// Foreground jobs run first, in arrival order; a background job runs only
// when no foreground job waits, so a foreground arrival preempts it at its
// next step. The preempted job keeps its session (KV cache included) and
// resumes where it stopped. At most one background session is started at
// a time, so at most two KV caches are alive.
type scheduler struct {
	e     *engine.Engine
	m     *metrics
	limit int // most jobs waiting or running

	mu         sync.Mutex
	fg, bg     []*job
	policy     string
	closed     bool
	lastBg     *job // the background job stepped last, if it was the last one stepped
	wake       chan struct{}
	stop       chan struct{}
	stopped    chan struct{}
	drafted    int
	accepted   int
	steps      int
	beforeStep func(*job) // tests: runs before each step

	// gov paces background sessions (nil: no draft model); its policy is
	// flavor under PolicyElastic and elastic.Off otherwise.
	gov    *elastic.Governor
	flavor elastic.Policy
	govObs governorObserver // owned by the scheduler goroutine
	cache  *prefixCache     // nil: no prefix cache

	// broken receives the first error saying the model file changed
	// under the server (gguf.ErrModelFileChanged); Serve then stops.
	broken chan error
}

func newScheduler(e *engine.Engine, m *metrics, limit int, gov *elastic.Governor, cache *prefixCache) *scheduler {
	s := &scheduler{e: e, m: m, limit: limit, policy: PolicyFull, gov: gov, flavor: elastic.Balanced, cache: cache,
		wake: make(chan struct{}, 1), stop: make(chan struct{}), stopped: make(chan struct{}), broken: make(chan error, 1)}
	if gov != nil && gov.Policy() != elastic.Off {
		s.policy, s.flavor = PolicyElastic, gov.Policy()
	}
	s.applyPolicy()
	m.setPolicy(s.policy)
	go s.loop()
	return s
}

// applyPolicy sets the governor's policy from the background policy; s.mu
// is held or the scheduler not yet shared.
func (s *scheduler) applyPolicy() {
	if s.gov == nil {
		return
	}
	if s.policy == PolicyElastic {
		s.gov.SetPolicy(s.flavor)
	} else {
		s.gov.SetPolicy(elastic.Off)
	}
}

var errQueueFull = errors.New("server: queue full")

// submit queues a job, or refuses it when the queue is full or closed.
func (s *scheduler) submit(j *job) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errShutdown
	}
	if len(s.fg)+len(s.bg) >= s.limit {
		s.m.rejected.Inc()
		return errQueueFull
	}
	if j.prio == Background {
		s.bg = append(s.bg, j)
	} else {
		s.fg = append(s.fg, j)
	}
	s.gauges()
	s.kick()
	return nil
}

func (s *scheduler) kick() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *scheduler) gauges() {
	s.m.queueDepth.WithLabelValues("foreground").Set(float64(len(s.fg)))
	s.m.queueDepth.WithLabelValues("background").Set(float64(len(s.bg)))
}

// abandon is called by a handler whose client went away: a job not yet
// started leaves the queue at once; a running one is stopped by the
// scheduler at its next step (its context is canceled).
func (s *scheduler) abandon(j *job) {
	j.cancel()
	s.mu.Lock()
	if j.started {
		s.mu.Unlock()
		s.kick()
		return
	}
	removed := s.remove(j)
	s.mu.Unlock()
	if removed {
		j.finish(engine.Stats{StopReason: "canceled"}, context.Canceled)
	}
}

// remove drops j from the queues; s.mu is held.
func (s *scheduler) remove(j *job) bool {
	q := &s.fg
	if j.prio == Background {
		q = &s.bg
	}
	for i, x := range *q {
		if x == j {
			*q = append((*q)[:i], (*q)[i+1:]...)
			if s.lastBg == j {
				s.lastBg = nil
			}
			s.gauges()
			return true
		}
	}
	return false
}

// setPolicy sets the background policy and, if flavor is not elastic.Off,
// the elastic policy PolicyElastic runs with.
func (s *scheduler) setPolicy(p string, flavor elastic.Policy) {
	s.mu.Lock()
	s.policy = p
	if flavor != elastic.Off {
		s.flavor = flavor
	}
	s.applyPolicy()
	s.mu.Unlock()
	s.m.setPolicy(p)
	s.kick()
}

func (s *scheduler) getPolicy() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.policy
}

// elasticFlavor is the elastic policy PolicyElastic runs with.
func (s *scheduler) elasticFlavor() elastic.Policy {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.flavor
}

// pick chooses the job to step next, or nil.
func (s *scheduler) pick() *job {
	s.mu.Lock()
	defer s.mu.Unlock()
	var j *job
	switch {
	case len(s.fg) > 0:
		j = s.fg[0]
		if s.lastBg != nil {
			s.m.preemptions.Inc()
			s.lastBg = nil
		}
	case len(s.bg) > 0 && s.policy != PolicyPaused:
		j = s.bg[0]
		s.lastBg = j
	default:
		return nil
	}
	j.started = true
	return j
}

func (s *scheduler) loop() {
	defer close(s.stopped)
	for {
		select {
		case <-s.stop:
			return
		default:
		}
		j := s.pick()
		if j == nil {
			select {
			case <-s.wake:
			case <-s.stop:
				return
			}
			continue
		}
		s.step(j)
	}
}

// step runs one step of j: its prefill the first time, one decoding step after.
func (s *scheduler) step(j *job) {
	if s.beforeStep != nil {
		s.beforeStep(j)
	}
	if j.sess == nil {
		if j.prio == Background && s.gov != nil && j.req.Spec.Mode != speculate.ModeOff {
			// Every background session runs under the governor; the
			// background policy decides whether it acts (elastic) or only
			// watches (full), and may change while the session runs.
			j.req.Spec.Deps.Governor = s.gov
		}
		sess, err := s.newSession(j)
		if err != nil {
			s.complete(j, engine.Stats{PromptTokens: len(j.prompt)}, err)
			return
		}
		j.sess = sess
	}
	done, err := j.sess.StepPieces(j.ctx, j.emit)
	if j.prio == Background && s.gov != nil {
		s.govObs.observe(s.m, s.gov)
	}
	st := j.sess.Stats()
	s.m.genTokens.Add(float64(st.GenTokens - j.reported))
	j.reported = st.GenTokens
	if errors.Is(err, gguf.ErrModelFileChanged) {
		select {
		case s.broken <- err:
		default:
		}
	}
	if done || err != nil {
		j.sess.Close()
		s.cache.put(j.sess.TakePrefix())
		s.complete(j, j.sess.Stats(), err)
	}
}

func (s *scheduler) complete(j *job, st engine.Stats, err error) {
	j.sess = nil // the KV cache can go now
	s.mu.Lock()
	s.remove(j)
	s.m.finished(st, &s.drafted, &s.accepted, &s.steps)
	s.mu.Unlock()
	p := j.prio.String()
	s.m.duration.WithLabelValues(p).Observe(time.Since(j.arrived).Seconds())
	j.mu.Lock()
	first := j.firstAt
	j.mu.Unlock()
	if !first.IsZero() {
		s.m.ttft.WithLabelValues(p).Observe(first.Sub(j.arrived).Seconds())
	}
	j.finish(st, err)
}

// close stops the scheduler after its current step; jobs still queued or
// running end with errShutdown.
func (s *scheduler) close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.mu.Unlock()
	close(s.stop)
	<-s.stopped
	s.mu.Lock()
	left := append(append([]*job(nil), s.fg...), s.bg...)
	s.fg, s.bg = nil, nil
	s.gauges()
	s.mu.Unlock()
	for _, j := range left {
		if j.sess != nil {
			j.sess.Close()
			j.sess = nil
		}
		j.finish(engine.Stats{StopReason: "canceled"}, errShutdown)
	}
}
