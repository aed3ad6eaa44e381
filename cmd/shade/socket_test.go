//go:build unix

package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// serve --socket alone listens on the socket only; with --port, on both.
// Either way the socket goes when serve stops.
func TestServeSocket(t *testing.T) {
	model := sharedFile(t, "conformance/stories260K.gguf")
	for _, extra := range [][]string{nil, {"--port", "0"}} {
		path := filepath.Join(t.TempDir(), "s.sock")
		ctx, cancel := context.WithCancel(context.Background())
		errOut := &syncBuffer{}
		code := make(chan int, 1)
		go func() {
			code <- runMain(ctx, append([]string{"serve", "-m", model, "--socket", path, "--cache-mib", "16"}, extra...), io.Discard, errOut)
		}()
		for deadline := time.Now().Add(10 * time.Second); !strings.Contains(errOut.String(), "unix:"+path) && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", path)
		}}}
		resp, err := c.Get("http://shade/health")
		if err != nil {
			cancel()
			t.Fatalf("%v: %v (%s)", extra, err, errOut.String())
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("%v: /health %d", extra, resp.StatusCode)
		}
		if tcp := strings.Contains(errOut.String(), "http://127.0.0.1:"); tcp != (extra != nil) {
			t.Errorf("%v: TCP listener %v: %s", extra, tcp, errOut.String())
		}
		cancel()
		select {
		case c := <-code:
			if c != 0 {
				t.Errorf("%v: exit %d: %s", extra, c, errOut.String())
			}
		case <-time.After(10 * time.Second):
			t.Fatal("serve did not stop")
		}
		if _, err := os.Lstat(path); !os.IsNotExist(err) {
			t.Errorf("%v: socket left: %v", extra, err)
		}
	}
	if code, _, errOut := shade(t, "serve", "-m", "x.gguf", "--cache-mib", "-1"); code == 0 || !strings.Contains(errOut, "cache-mib") {
		t.Errorf("--cache-mib -1: exit %d %q", code, errOut)
	}
}
