package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"shade/gguf"
	"shade/quant"
)

func TestPullCommand(t *testing.T) {
	var buf bytes.Buffer
	gw := gguf.NewWriter(&buf)
	gw.AddTensor("t", quant.F32, 1024, 256)
	gw.WriteHeader()
	gw.Write(bytes.Repeat([]byte("model bytes "), 1<<17)[:1<<20])
	if err := gw.Close(); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	sum := sha256.Sum256(data)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/bob/m/resolve/main/m.gguf" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("X-Linked-Etag", `"`+hex.EncodeToString(sum[:])+`"`)
		http.ServeContent(w, r, "m.gguf", time.Time{}, bytes.NewReader(data))
	}))
	defer ts.Close()
	dir := t.TempDir()
	code, out, errOut := shade(t, "pull", "--hub", ts.URL, "--dir", dir, "bob/m/m.gguf")
	want := filepath.Join(dir, "bob", "m", "m.gguf")
	if code != 0 || strings.TrimSpace(out) != want || !strings.Contains(errOut, "100%") || !strings.Contains(errOut, "verified") {
		t.Fatalf("exit %d\nstdout %q\nstderr %q", code, out, errOut)
	}
	if b, _ := os.ReadFile(want); !bytes.Equal(b, data) {
		t.Fatal("file differs")
	}
	code, _, errOut = shade(t, "pull", "--hub", ts.URL, "--dir", dir, "bob/m/m.gguf")
	if code != 0 || !strings.Contains(errOut, "already downloaded") {
		t.Fatalf("again: exit %d %q", code, errOut)
	}
	code, _, errOut = shade(t, "pull", "--hub", ts.URL, "--dir", dir, "--sha256", strings.Repeat("0", 64), "bob/m/m.gguf")
	if code != 1 || !strings.Contains(errOut, "checksum mismatch") {
		t.Fatalf("bad checksum: exit %d %q", code, errOut)
	}
	if code, _, _ := shade(t, "pull", "--hub", ts.URL, "--dir", dir, "bob/m/other.gguf"); code != 1 {
		t.Fatalf("missing file: exit %d", code)
	}
	if code, _, _ := shade(t, "pull"); code != 2 && code != 1 {
		t.Fatalf("no argument: exit %d", code)
	}
}
