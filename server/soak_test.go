package server

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"shade/engine"
	"shade/sample"
)

// soak sends n requests from `workers` clients: streamed or not, foreground
// or background, some canceled at a random moment. It returns the status
// codes seen.
func soak(t testing.TB, url string, client *http.Client, n, workers int, seed uint64) map[int]int {
	var mu sync.Mutex
	codes := map[int]int{}
	var wg sync.WaitGroup
	next := make(chan int)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			for i := range next {
				stream := rng.IntN(2) == 0
				prio := []string{"foreground", "background"}[rng.IntN(2)]
				body := fmt.Sprintf(`{"prompt":"Once upon a time %d","max_tokens":%d,"stream":%v,"priority":%q,"temperature":0.8,"seed":%d}`,
					i, 5+rng.IntN(60), stream, prio, i)
				if rng.IntN(3) == 0 {
					body = fmt.Sprintf(`{"messages":[{"role":"user","content":"Story %d"}],"max_tokens":%d,"stream":%v,"priority":%q,"stop":["the"]}`,
						i, 5+rng.IntN(60), stream, prio)
				}
				path := "/v1/completions"
				if strings.Contains(body, "messages") {
					path = "/v1/chat/completions"
				}
				ctx, cancel := context.WithCancel(context.Background())
				if rng.IntN(3) == 0 {
					time.AfterFunc(time.Duration(rng.IntN(20))*time.Millisecond, cancel)
				}
				for t0 := time.Now(); ; {
					req, _ := http.NewRequestWithContext(ctx, "POST", url+path, strings.NewReader(body))
					req.Header.Set("Content-Type", "application/json")
					resp, err := client.Do(req)
					code := -1 // canceled before a response
					if err == nil {
						code = resp.StatusCode
						if _, err := io.Copy(io.Discard, resp.Body); err != nil {
							code = -1 // canceled while the answer came
						}
						resp.Body.Close()
					}
					mu.Lock()
					codes[code]++
					mu.Unlock()
					if code != http.StatusTooManyRequests || time.Since(t0) > 5*time.Second {
						break
					}
					time.Sleep(time.Duration(5+rng.IntN(20)) * time.Millisecond) // back off, as clients do
				}
				cancel()
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return codes
}

func heap() uint64 {
	var ms runtime.MemStats
	for range 3 {
		runtime.GC()
	}
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// switchPolicies flips the background policy every few milliseconds
// until stop is closed, and leaves it at full.
func switchPolicies(t testing.TB, url string, client *http.Client, stop <-chan struct{}) (done <-chan struct{}) {
	d := make(chan struct{})
	set := func(p string) {
		req, _ := http.NewRequest("POST", url+"/v1/shade/policy", strings.NewReader(`{"policy":"`+p+`"}`))
		req.Header.Set("Content-Type", "application/json")
		if resp, err := client.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	go func() {
		defer close(d)
		defer set(PolicyFull)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			set([]string{PolicyPaused, PolicyFull, PolicyElastic}[i%3])
		}
	}()
	return d
}

// openFiles counts this process's open file descriptors (-1: unknown).
func openFiles() int {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(fds)
}

// requestCounts reads shade_requests_total for the generation endpoints, by code.
func requestCounts(t testing.TB, s *Server) map[string]float64 {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/metrics", nil)
	req.Host = "localhost"
	s.Handler().ServeHTTP(rec, req)
	out := map[string]float64{}
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		rest, ok := strings.CutPrefix(line, `shade_requests_total{code="`)
		if !ok || !strings.Contains(line, "completions") {
			continue
		}
		code, _, _ := strings.Cut(rest, `"`)
		var v float64
		fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v)
		out[code] += v
	}
	return out
}

// Hundreds of requests, streamed and whole, foreground and background,
// some abandoned at a random moment, while the background policy keeps
// switching; then a shutdown (what SIGTERM does) with requests in flight.
// Afterwards no job is left, the counters agree with what clients saw,
// a second round leaves the heap where the first left it, and goroutines
// and open files are back where they were before the server started.
func TestSoak(t *testing.T) {
	n := 150
	if testing.Short() {
		n = 40
	}
	e := stories(t)
	g00, fd00 := runtime.NumGoroutine(), openFiles()
	// A prefix cache small enough to fill in the first round: the second
	// then shows that it stays within its budget.
	s := New(e, Options{QueueSize: 6, ShutdownDrain: 20 * time.Second, PrefixCache: 8 << 20})
	url, cancel, served := serveLoopback(t, s)
	defer cancel()
	tr := &http.Transport{MaxIdleConnsPerHost: 16}
	client := &http.Client{Transport: tr, Timeout: time.Minute}
	settle := func() int {
		tr.CloseIdleConnections()
		deadline := time.Now().Add(5 * time.Second)
		for s.sched.jobs() > 0 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if j := s.sched.jobs(); j != 0 {
			t.Fatalf("%d jobs left in the scheduler", j)
		}
		g := runtime.NumGoroutine()
		for ; time.Now().Before(deadline); g = runtime.NumGoroutine() {
			time.Sleep(10 * time.Millisecond)
			if runtime.NumGoroutine() == g {
				break
			}
		}
		return g
	}
	round := func(n int, seed uint64) map[int]int {
		stop := make(chan struct{})
		done := switchPolicies(t, url, client, stop)
		codes := soak(t, url, client, n, 8, seed)
		close(stop)
		<-done
		return codes
	}
	soak(t, url, client, 10, 2, 0) // warm-up: connections, pools, metric series
	g0 := settle()
	before := requestCounts(t, s)
	start := time.Now()
	c1 := round(n, 1)
	g1 := settle()
	h1 := heap()
	c2 := round(n, 2)
	g2 := settle()
	h2 := heap()
	t.Logf("%d requests in %v; codes %v then %v; goroutines %d → %d → %d; heap %.1f → %.1f MiB",
		2*n, time.Since(start).Round(time.Millisecond), c1, c2, g0, g1, g2, float64(h1)/(1<<20), float64(h2)/(1<<20))
	if c1[200]+c2[200] < n/2 {
		t.Errorf("too few successes: %v %v", c1, c2)
	}
	for _, c := range []map[int]int{c1, c2} {
		for code := range c {
			if code != 200 && code != 429 && code != -1 {
				t.Errorf("unexpected status %d", code)
			}
		}
	}
	if g1 > g0+2 || g2 > g0+2 {
		t.Errorf("goroutines grew: %d → %d → %d", g0, g1, g2)
	}
	if h2 > h1+4<<20 {
		t.Errorf("heap grew from %.1f to %.1f MiB over the second round", float64(h1)/(1<<20), float64(h2)/(1<<20))
	}
	c := s.sched.cache
	c.mu.Lock()
	if c.bytes > c.limit || len(c.entries) == 0 {
		t.Errorf("prefix cache: %d entries, %d bytes of %d", len(c.entries), c.bytes, c.limit)
	}
	c.mu.Unlock()
	// Every request that reached the server is counted once, under the
	// status its client saw, or 499 if the client had left.
	after := requestCounts(t, s)
	seen, counted := 0, 0.0
	for code, v := range after {
		counted += v - before[code]
	}
	for code, k := range c1 {
		seen += k + c2[code]
		if code > 0 && after[strconv.Itoa(code)]-before[strconv.Itoa(code)] < float64(k+c2[code]) {
			t.Errorf("clients saw %d × %d, the metrics count %v", k+c2[code], code, after[strconv.Itoa(code)]-before[strconv.Itoa(code)])
		}
	}
	if counted > float64(seen) || after["499"]-before["499"] > float64(c1[-1]+c2[-1]) {
		t.Errorf("metrics count %v requests (%v), clients sent %d (%v %v)", counted, after, seen, c1, c2)
	}
	if s.adm.used != 0 || s.adm.preparing.Load() != 0 {
		t.Errorf("admission still holds %d bytes, %d slots", s.adm.used, s.adm.preparing.Load())
	}

	// Shutdown with a round in flight: every client gets an answer
	// (200, 429 or 503) or its own cancellation, and nothing is left.
	last := make(chan map[int]int)
	go func() { last <- soak(t, url, client, n/2, 8, 3) }()
	waitFor(t, "requests in flight", func() bool { return s.sched.jobs() > 0 })
	cancel()
	c3 := <-last
	for code := range c3 {
		if code != 200 && code != 429 && code != 503 && code != -1 {
			t.Errorf("during shutdown: status %d (%v)", code, c3)
		}
	}
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
	tr.CloseIdleConnections()
	var g, fd int
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if g, fd = runtime.NumGoroutine(), openFiles(); g <= g00 && fd <= fd00 {
			break
		}
	}
	t.Logf("shutdown: codes %v; goroutines %d (before the server %d), open files %d (%d)", c3, g, g00, fd, fd00)
	if g > g00 || fd > fd00 {
		t.Errorf("after shutdown %d goroutines (%d before), %d open files (%d before)", g, g00, fd, fd00)
	}
}

// BenchmarkConcurrent measures throughput (generated tokens per second
// over all clients) and request latency (p50, p99) and time to first
// token with 1, 4 and 16 concurrent streaming clients of 32 tokens each.
func BenchmarkConcurrent(b *testing.B) {
	e := stories(b)
	// The same generations straight on the engine, no HTTP: the baseline.
	b.Run("direct", func(b *testing.B) {
		start := time.Now()
		for i := range b.N {
			ids, _ := e.Tok.Encode(fmt.Sprintf("Once upon a time %d", i%7), true, true)
			sess, err := e.NewSession(engine.Request{MaxTokens: 32, IgnoreEOS: true,
				Sampling: sample.Params{Temp: 1, TopP: 1, RepeatPenalty: 1, Seed: uint64(i)}}, ids)
			if err != nil {
				b.Fatal(err)
			}
			for !sess.Done() {
				if _, err := sess.Step(context.Background(), func(string) error { return nil }); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(32*b.N)/time.Since(start).Seconds(), "tok/s")
		b.ReportMetric(0, "ns/op")
	})
	s := New(e, Options{QueueSize: 64})
	ts := httptest.NewServer(s.Handler())
	defer func() { ts.Close(); s.Close() }()
	for _, clients := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
			var mu sync.Mutex
			var lat, ttft []time.Duration
			tokens := 0
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			next := make(chan int)
			for range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range next {
						body := fmt.Sprintf(`{"prompt":"Once upon a time %d","max_tokens":32,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true},"seed":%d}`, i%7, i)
						t0 := time.Now()
						resp, err := client.Post(ts.URL+"/v1/completions", "application/json", strings.NewReader(body))
						if err != nil {
							b.Error(err)
							return
						}
						buf := make([]byte, 4096)
						var first time.Duration
						var all strings.Builder
						for {
							n, err := resp.Body.Read(buf)
							if n > 0 && first == 0 && strings.Count(all.String()+string(buf[:n]), "data: ") >= 1 {
								first = time.Since(t0)
							}
							all.Write(buf[:n])
							if err != nil {
								break
							}
						}
						resp.Body.Close()
						d := time.Since(t0)
						mu.Lock()
						lat = append(lat, d)
						ttft = append(ttft, first)
						tokens += 32
						mu.Unlock()
					}
				}()
			}
			for i := range b.N {
				next <- i
			}
			close(next)
			wg.Wait()
			el := time.Since(start)
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			sort.Slice(ttft, func(i, j int) bool { return ttft[i] < ttft[j] })
			pct := func(v []time.Duration, p float64) float64 {
				return float64(v[min(len(v)-1, int(p*float64(len(v))))].Microseconds()) / 1000
			}
			b.ReportMetric(float64(tokens)/el.Seconds(), "tok/s")
			b.ReportMetric(pct(lat, 0.5), "p50-ms")
			b.ReportMetric(pct(lat, 0.99), "p99-ms")
			b.ReportMetric(pct(ttft, 0.5), "ttft-p50-ms")
			b.ReportMetric(0, "ns/op")
		})
	}
}
