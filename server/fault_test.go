package server

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"shade/engine"
	"shade/gguf"
)

// TestModelFileCut: the model file cut under a running server answers 500
// to the request that met it (the process lives), and Serve then stops,
// saying the model file changed.
func TestModelFileCut(t *testing.T) {
	stories(t)
	src, err := os.ReadFile(filepath.Join(conformanceDir, "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "cut.gguf")
	if err := os.WriteFile(path, src, 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := engine.Load(path, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	s := New(e, Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	served := make(chan error, 1)
	go func() { served <- s.Serve(context.Background(), ln) }()
	if r, b := post(t, url+"/v1/completions", `{"prompt":"Once","max_tokens":2}`); r.StatusCode != 200 {
		t.Fatalf("before the cut: %d %s", r.StatusCode, b)
	}
	if err := os.Truncate(path, 4096); err != nil {
		t.Fatal(err)
	}
	r, b := post(t, url+"/v1/completions", `{"prompt":"Once","max_tokens":2}`)
	if r.StatusCode != 500 || !strings.Contains(string(b), "model file changed") {
		t.Fatalf("after the cut: %d %s", r.StatusCode, b)
	}
	select {
	case err := <-served:
		if !errors.Is(err, gguf.ErrModelFileChanged) {
			t.Fatalf("Serve returned %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve still running after the model file was cut")
	}
}
