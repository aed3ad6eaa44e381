package server

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sort"
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
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
					mu.Lock()
					codes[code]++
					mu.Unlock()
					if code != http.StatusTooManyRequests || time.Since(t0) > 5*time.Second {
						break
					}
					time.Sleep(time.Duration(2+rng.IntN(8)) * time.Millisecond) // back off, as clients do
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

// Hundreds of requests with random cancellations: afterwards no job is
// left, goroutines are back to their number before, and a second round
// leaves the heap where the first left it.
func TestSoak(t *testing.T) {
	n := 200
	if testing.Short() {
		n = 60
	}
	s := New(stories(t), Options{QueueSize: 6})
	ts := httptest.NewServer(s.Handler())
	defer func() { ts.Close(); s.Close() }()
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
	soak(t, ts.URL, client, 10, 2, 0) // warm-up: connections, pools, metric series
	g0 := settle()
	start := time.Now()
	c1 := soak(t, ts.URL, client, n, 8, 1)
	g1 := settle()
	h1 := heap()
	c2 := soak(t, ts.URL, client, n, 8, 2)
	g2 := settle()
	h2 := heap()
	t.Logf("%d requests in %v; codes %v then %v; goroutines %d → %d → %d; heap %.1f → %.1f MiB",
		2*n, time.Since(start).Round(time.Millisecond), c1, c2, g0, g1, g2, float64(h1)/(1<<20), float64(h2)/(1<<20))
	if c1[200]+c2[200] < n/2 {
		t.Errorf("too few successes: %v %v", c1, c2)
	}
	for code := range c1 {
		if code != 200 && code != 429 && code != -1 {
			t.Errorf("unexpected status %d", code)
		}
	}
	if g1 > g0+2 || g2 > g0+2 {
		t.Errorf("goroutines grew: %d → %d → %d", g0, g1, g2)
	}
	if h2 > h1+4<<20 {
		t.Errorf("heap grew from %.1f to %.1f MiB over the second round", float64(h1)/(1<<20), float64(h2)/(1<<20))
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
