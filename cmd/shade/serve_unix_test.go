//go:build unix

package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// SIGTERM (as service managers and docker stop send it) drains like
// Ctrl-C: the stream in flight ends with its [DONE] and serve exits 0.
func TestServeSIGTERMDrains(t *testing.T) {
	model := sharedFile(t, "conformance/stories260K.gguf")
	url, code, errOut := startServe(t, context.Background(), "-m", model)
	req, _ := http.NewRequest("POST", url+"/v1/completions", strings.NewReader(`{"prompt":"Once","max_tokens":400,"ignore_eos":true,"stream":true}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	first := make([]byte, 1)
	if _, err := io.ReadFull(resp.Body, first); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(resp.Body)
	if err != nil || !strings.HasSuffix(string(rest), "data: [DONE]\n\n") || !strings.Contains(string(rest), `"finish_reason":"length"`) {
		t.Fatalf("stream after SIGTERM: %v, ends %q", err, rest[max(0, len(rest)-200):])
	}
	select {
	case c := <-code:
		if c != 0 || !strings.Contains(errOut.String(), "stopped") {
			t.Fatalf("exit %d: %s", c, errOut.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop on SIGTERM")
	}
}
