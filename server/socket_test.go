//go:build unix

package server

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// unixClient is an http.Client whose every request goes to the socket.
func unixClient(path string) *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}}
}

// The server answers on a 0600 Unix-domain socket beside TCP, whatever the
// Host header, and removes the socket when it stops.
func TestServeUnixSocket(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "shade.sock")
	uln, err := ListenUnix(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket %v, %v", fi.Mode(), err)
	}
	if uln.Addr().String() != path {
		t.Errorf("Addr %s", uln.Addr())
	}
	if _, err := ListenUnix(path); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Errorf("a second listener on a live socket: %v", err)
	}
	tln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := New(stories(t), Options{ShutdownDrain: time.Second})
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.ServeAll(ctx, tln, uln) }()
	c := unixClient(path)
	for _, host := range []string{"localhost", "unix", "shade.example"} {
		req, _ := http.NewRequest("POST", "http://"+host+"/v1/completions", strings.NewReader(`{"prompt":"Once","max_tokens":5,"temperature":0}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var r chatResp
		if resp.StatusCode != 200 || json.Unmarshal(b, &r) != nil || r.Usage.CompletionTokens != 5 {
			t.Errorf("Host %s over the socket: %d %s", host, resp.StatusCode, b)
		}
	}
	// TCP still checks the Host.
	req, _ := http.NewRequest("GET", "http://"+tln.Addr().String()+"/health", nil)
	req.Host = "shade.example"
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("a foreign Host over TCP: %v %v", resp.StatusCode, err)
	}
	stop()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Errorf("the socket is left after shutdown: %v", err)
	}
}

// A stale socket (nothing listening) is replaced; a file that is not a
// socket is not touched.
func TestListenUnixStaleAndForeign(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "stale.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close() // a crashed server's socket file
	l2, err := ListenUnix(path)
	if err != nil {
		t.Fatalf("stale socket: %v", err)
	}
	l2.Close()
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Errorf("socket left after Close: %v", err)
	}
	file := filepath.Join(dir, "file")
	os.WriteFile(file, []byte("data"), 0o644)
	if _, err := ListenUnix(file); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("over a regular file: %v", err)
	}
	if b, _ := os.ReadFile(file); string(b) != "data" {
		t.Error("the file was changed")
	}
	if _, err := ListenUnix(filepath.Join(dir, "no", "such", "dir", "s")); err == nil {
		t.Error("a socket in a missing directory")
	}
	if _, err := ListenUnix(""); err == nil {
		t.Error("an empty path")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("left in the directory: %v", ents)
	}
}
