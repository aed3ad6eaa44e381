package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe to write from one goroutine and read from another.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestServeCommand(t *testing.T) {
	model := sharedFile(t, "conformance/stories260K.gguf")
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut syncBuffer
	code := make(chan int)
	go func() {
		code <- runMain(ctx, []string{"serve", "-m", model, "--port", "0", "--spec", "ngram", "--api-key", "k"}, &out, &errOut)
	}()
	addr := regexp.MustCompile(`http://127\.0\.0\.1:\d+`)
	var url string
	for deadline := time.Now().Add(10 * time.Second); url == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		url = addr.FindString(errOut.String())
	}
	if url == "" {
		cancel()
		t.Fatalf("no address in %q", errOut.String())
	}
	req, _ := http.NewRequest("POST", url+"/v1/chat/completions", strings.NewReader(`{"messages":[{"role":"user","content":"Hi"}],"max_tokens":8}`))
	req.Header.Set("Authorization", "Bearer k")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"chat.completion"`) {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	cancel()
	select {
	case c := <-code:
		if c != 0 || !strings.Contains(errOut.String(), "stopped") {
			t.Fatalf("exit %d: %s", c, errOut.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop")
	}
}

func TestServeFlags(t *testing.T) {
	for _, args := range [][]string{{"serve"}, {"serve", "-m", "x.gguf", "--spec", "tree"}, {"serve", "-m", "x.gguf", "--port", "70000"}} {
		if code, _, _ := shade(t, args...); code == 0 {
			t.Errorf("%v: exit 0", args)
		}
	}
	if code, _, errOut := shade(t, "serve", "-m", os.DevNull); code != 1 || errOut == "" {
		t.Errorf("bad model: exit %d %q", code, errOut)
	}
}

// startServe runs `shade serve` in the process and returns its URL.
func startServe(t *testing.T, ctx context.Context, args ...string) (url string, code chan int, errOut *syncBuffer) {
	t.Helper()
	errOut = &syncBuffer{}
	code = make(chan int, 1)
	go func() {
		code <- runMain(ctx, append([]string{"serve", "--port", "0"}, args...), io.Discard, errOut)
	}()
	addr := regexp.MustCompile(`http://127\.0\.0\.1:\d+`)
	for deadline := time.Now().Add(10 * time.Second); url == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		url = addr.FindString(errOut.String())
	}
	if url == "" {
		t.Fatalf("no address in %q", errOut.String())
	}
	return url, code, errOut
}

// The web-facing flags: a bad origin is refused at start; an allowed host
// and origin are honoured.
func TestServeWebFlags(t *testing.T) {
	for _, args := range [][]string{
		{"serve", "-m", "x.gguf", "--cors-origin", "localhost:3000"},
		{"serve", "-m", "x.gguf", "--cors-origin", "http://localhost:3000/app"},
		{"serve", "-m", "x.gguf", "--drain", "0s"},
	} {
		if code, _, errOut := shade(t, args...); code == 0 || !strings.Contains(errOut, strings.TrimPrefix(args[3], "--")) {
			t.Errorf("%v: exit %d %q", args, code, errOut)
		}
	}
	model := sharedFile(t, "conformance/stories260K.gguf")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url, code, _ := startServe(t, ctx, "-m", model, "--allowed-host", "shade.test", "--cors-origin", "http://localhost:3000")
	for _, c := range []struct {
		host, origin string
		want         int
	}{
		{"shade.test", "", 200}, {"evil.test", "", 403}, {"", "http://localhost:3000", 200}, {"", "http://evil.test", 403},
	} {
		req, _ := http.NewRequest("GET", url+"/v1/models", nil)
		if c.host != "" {
			req.Host = c.host
		}
		if c.origin != "" {
			req.Header.Set("Origin", c.origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("Host %q Origin %q: %d, want %d", c.host, c.origin, resp.StatusCode, c.want)
		}
	}
	cancel()
	<-code
}
