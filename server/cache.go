package server

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"shade/engine"
)

// DefaultPrefixCache is the KV memory the prefix cache keeps by default:
// one full-context conversation of a 1B model (≈ 136 MB of target KV at
// 4096 tokens), or dozens of a small one.
const DefaultPrefixCache = 256 << 20

// Prefix-cache matching: an entry is taken over by a request that uses all
// of it, or all but at most moveSlack tokens of it and at least minFork (a
// conversation's next turn: the tail lost is at most what the reply's
// re-rendering changes), and copied from when the request shares at least
// minFork tokens of it but would throw more away (a regenerated reply,
// another conversation with the same system prompt), so the entry stays for
// the conversation it belongs to. Fewer shared tokens are not worth it.
const (
	moveSlack = 64
	minFork   = 16
)

// prefixCache keeps the KV of finished sessions (engine.Prefix) within a
// memory budget, least recently used out first. An entry is taken out of
// the cache while a session runs on it, so no two sessions share mutable
// KV, and the session's KV goes back in when it is done.
type prefixCache struct {
	limit int64

	mu      sync.Mutex
	entries []*engine.Prefix // least recently used first
	bytes   int64

	hits, misses, evictions prometheus.Counter
	cachedTokens            prometheus.Counter
	bytesGauge, entryGauge  prometheus.Gauge
}

// newPrefixCache makes a cache of limit bytes (nil if limit ≤ 0) and
// registers its metrics.
func newPrefixCache(limit int64, reg *prometheus.Registry) *prefixCache {
	if limit <= 0 {
		return nil
	}
	c := &prefixCache{limit: limit}
	c.hits = prometheus.NewCounter(prometheus.CounterOpts{Name: "shade_prefix_cache_hits_total",
		Help: "Generations that started from KV in the prefix cache."})
	c.misses = prometheus.NewCounter(prometheus.CounterOpts{Name: "shade_prefix_cache_misses_total",
		Help: "Generations that found no usable prefix in the prefix cache."})
	c.cachedTokens = prometheus.NewCounter(prometheus.CounterOpts{Name: "shade_prefix_cache_tokens_total",
		Help: "Prompt tokens taken from the prefix cache instead of being prefilled."})
	c.evictions = prometheus.NewCounter(prometheus.CounterOpts{Name: "shade_prefix_cache_evictions_total",
		Help: "Prefix-cache entries dropped to stay within --cache-mib."})
	c.bytesGauge = prometheus.NewGauge(prometheus.GaugeOpts{Name: "shade_prefix_cache_bytes",
		Help: "KV memory held by the prefix cache (entries in use by a generation not counted)."})
	c.entryGauge = prometheus.NewGauge(prometheus.GaugeOpts{Name: "shade_prefix_cache_entries",
		Help: "Entries in the prefix cache."})
	limitGauge := prometheus.NewGauge(prometheus.GaugeOpts{Name: "shade_prefix_cache_limit_bytes",
		Help: "The prefix cache's memory budget (--cache-mib)."})
	limitGauge.Set(float64(limit))
	for _, m := range []prometheus.Collector{c.hits, c.misses, c.cachedTokens, c.evictions, c.bytesGauge, c.entryGauge, limitGauge} {
		reg.MustRegister(m)
	}
	return c
}

// take returns the KV to start a prompt from: the entry sharing the
// longest prefix with it among those of at least slots (the session's
// capacity), taken out of the cache, or a copy of its shared
// part (see moveSlack), or nil. A fork that cannot be made is a miss.
func (c *prefixCache) take(prompt []int32, slots int) *engine.Prefix {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	best, bestN := -1, 0
	for i, p := range c.entries {
		if p.Slots() < slots {
			continue // too small a context for the request
		}
		// Ties go to the most recently used, the later one.
		if n := engine.CommonPrefix(p.Tokens(), prompt); n > 0 && n >= bestN {
			best, bestN = i, n
		}
	}
	if best < 0 {
		return nil
	}
	p := c.entries[best]
	usable := min(bestN, len(prompt)-1) // the last prompt token always runs
	lost := len(p.Tokens()) - usable
	switch {
	case lost == 0 || usable >= minFork && lost <= moveSlack:
		c.remove(best)
		return p
	case usable < minFork:
		return nil // not worth another conversation's entry, nor a copy
	}
	f, err := p.Fork(usable)
	if err != nil {
		return nil
	}
	c.touch(best)
	return f
}

// put gives a finished session's KV (nil: none) to the cache, evicting
// the least recently used entries to stay within the budget; entries whose
// tokens it extends are dropped, being of no more use than it.
func (c *prefixCache) put(p *engine.Prefix) {
	if c == nil || p == nil || len(p.Tokens()) == 0 {
		return
	}
	b := p.Bytes()
	if b > c.limit {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := 0; i < len(c.entries); i++ {
		if q := c.entries[i].Tokens(); engine.CommonPrefix(q, p.Tokens()) == len(q) {
			c.remove(i)
			i--
		}
	}
	for c.bytes+b > c.limit && len(c.entries) > 0 {
		c.remove(0)
		c.evictions.Inc()
	}
	c.entries = append(c.entries, p)
	c.bytes += b
	c.gauges()
}

// counted records how a session started: from the cache or not.
func (c *prefixCache) counted(cached int) {
	if c == nil {
		return
	}
	if cached > 0 {
		c.hits.Inc()
		c.cachedTokens.Add(float64(cached))
	} else {
		c.misses.Inc()
	}
}

// remove drops entry i; c.mu is held.
func (c *prefixCache) remove(i int) {
	c.bytes -= c.entries[i].Bytes()
	c.entries = append(c.entries[:i], c.entries[i+1:]...)
	c.gauges()
}

// touch makes entry i the most recently used; c.mu is held.
func (c *prefixCache) touch(i int) {
	p := c.entries[i]
	c.entries = append(append(c.entries[:i], c.entries[i+1:]...), p)
}

func (c *prefixCache) gauges() {
	c.bytesGauge.Set(float64(c.bytes))
	c.entryGauge.Set(float64(len(c.entries)))
}

// newSession starts j's session, from the cache's best prefix if there is
// one; a session that cannot be made gives the prefix back.
func (s *scheduler) newSession(j *job) (*engine.Session, error) {
	if s.cache == nil {
		return s.e.NewSession(j.req, j.prompt)
	}
	p := s.cache.take(j.prompt, s.e.SessionSlots(j.req))
	sess, err := s.e.NewSessionFrom(j.req, j.prompt, p)
	if err != nil {
		s.cache.put(p)
		return nil, err
	}
	s.cache.counted(sess.CachedTokens())
	return sess, nil
}

// promptDetails is OpenAI's usage.prompt_tokens_details.
type promptDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

// usageOf is the usage of a finished generation of prompt tokens.
func usageOf(prompt int, st engine.Stats) usage {
	return usage{PromptTokens: prompt, CompletionTokens: st.GenTokens, TotalTokens: prompt + st.GenTokens,
		PromptTokensDetails: promptDetails{CachedTokens: st.CachedTokens}}
}
