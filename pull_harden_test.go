package shade_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"shade"
)

// Whatever the URL says, pull writes inside its folder: ".." and its
// escapes are refused, odd characters in names replaced.
func TestPullStaysInDir(t *testing.T) {
	data := payload()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(data)
	}))
	defer ts.Close()
	parent := t.TempDir()
	dir := filepath.Join(parent, "D")
	os.Mkdir(dir, 0o755)
	for _, ref := range []string{
		ts.URL + "/ok/..", ts.URL + "/ok/%2e%2e", ts.URL + "/ok/%2E%2E/", ts.URL + "/ok/.", ts.URL + "/", ts.URL,
		ts.URL + "/ok/.hidden.gguf", ts.URL + "/a/..%5C..%5Cy.gguf", "http://../x.gguf", "http://%2e%2e/x.gguf",
	} {
		if res, err := shade.Pull(context.Background(), ref, shade.PullOptions{Dir: dir}); err == nil {
			t.Errorf("%s: installed %s", ref, res.Path)
		}
	}
	for ref, want := range map[string]string{
		ts.URL + "/a/..%2F..%2Fx.gguf":      "x.gguf",
		ts.URL + "/a/y%5C%00%20.gguf":       "y___.gguf",
		ts.URL + "/a/%2Fetc%2Fz.gguf?q=../": "z.gguf",
	} {
		res, err := shade.Pull(context.Background(), ref, shade.PullOptions{Dir: dir})
		if err != nil || filepath.Base(res.Path) != want || filepath.Dir(filepath.Dir(res.Path)) != dir {
			t.Errorf("%s: %s %v, want DIR/HOST/%s", ref, res.Path, err, want)
		}
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Fatalf("the folder itself was replaced: %v %v", fi, err)
	}
	if left, _ := os.ReadDir(parent); len(left) != 1 {
		t.Fatalf("files written beside the folder: %v", left)
	}
}

// flaky is a server whose responses are scripted per request.
type flaky struct {
	mu    sync.Mutex
	n     int
	reqs  []*http.Request
	serve func(n int, w http.ResponseWriter, r *http.Request)
}

func (f *flaky) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.n++
	n := f.n
	f.reqs = append(f.reqs, r)
	f.mu.Unlock()
	f.serve(n, w, r)
}

func noFile(t *testing.T, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s is there", p)
		}
	}
}

// A server that closes halfway without having said the length: the
// truncated file fails validation, is not installed, and the next pull
// does not call it downloaded.
func TestPullRefusesTruncatedFile(t *testing.T) {
	data := payload()
	ts := httptest.NewServer(&flaky{serve: func(n int, w http.ResponseWriter, r *http.Request) {
		w.Write(data[:len(data)/2]) // chunked: no Content-Length
	}})
	defer ts.Close()
	dir := t.TempDir()
	dst := filepath.Join(dir, "alice", "tiny", "tiny.gguf")
	for range 2 {
		_, err := shade.Pull(context.Background(), "alice/tiny/tiny.gguf", shade.PullOptions{Dir: dir, Hub: ts.URL})
		if err == nil || !strings.Contains(err.Error(), "not a valid GGUF") {
			t.Fatalf("truncated download: %v", err)
		}
		noFile(t, dst, dst+".part")
	}
	// A broken file already installed (by an older pull) is replaced.
	os.WriteFile(dst, data[:1000], 0o644)
	good := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(data) }))
	defer good.Close()
	res, err := shade.Pull(context.Background(), "alice/tiny/tiny.gguf", shade.PullOptions{Dir: dir, Hub: good.URL})
	if got, _ := os.ReadFile(dst); err != nil || !res.Downloaded || !bytes.Equal(got, data) {
		t.Fatalf("broken installed file: %+v %v", res, err)
	}
}

// Resuming needs a strong validator: without an ETag the second attempt
// starts over; with one that changed, the server's whole new file is taken
// (If-Range), never a splice of two versions.
func TestPullResumeNeedsValidator(t *testing.T) {
	v1, v2 := ggufFile(1), ggufFile(2)
	for _, c := range []struct {
		name       string
		etag1      string
		etag2      string
		wantRange  bool
		wantResume bool
	}{
		{"no ETag", "", "", false, false},
		{"weak ETag", `W/"a"`, `W/"a"`, false, false},
		{"changed file", `"v1"`, `"v2"`, true, false},
	} {
		f := &flaky{serve: func(n int, w http.ResponseWriter, r *http.Request) {
			if n == 1 {
				if c.etag1 != "" {
					w.Header().Set("ETag", c.etag1)
				}
				w.Header().Set("Content-Length", strconv.Itoa(len(v1)))
				w.Write(v1[:len(v1)/3])
				w.(http.Flusher).Flush()
				panic(http.ErrAbortHandler)
			}
			if c.etag2 != "" {
				w.Header().Set("ETag", c.etag2)
			}
			http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(v2))
		}}
		ts := httptest.NewServer(f)
		dir := t.TempDir()
		res, err := shade.Pull(context.Background(), "alice/tiny/tiny.gguf", shade.PullOptions{Dir: dir, Hub: ts.URL})
		ts.Close()
		got, _ := os.ReadFile(res.Path)
		if err != nil || !bytes.Equal(got, v2) || res.Resumed != c.wantResume {
			t.Errorf("%s: %+v %v (file is v2: %v)", c.name, res, err, bytes.Equal(got, v2))
		}
		if rng := f.reqs[1].Header.Get("Range"); (rng != "") != c.wantRange {
			t.Errorf("%s: second request's Range %q", c.name, rng)
		}
	}
}

// A server that stalls after its headers does not hang pull; the pull of
// a file being pulled fails at once with ErrBusy.
func TestPullStallAndLock(t *testing.T) {
	release := make(chan struct{})
	arrived := make(chan struct{}, 1)
	data := payload()
	ts := httptest.NewServer(&flaky{serve: func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		w.Write(data[:100])
		w.(http.Flusher).Flush()
		arrived <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}})
	defer ts.Close()
	defer close(release)
	dir := t.TempDir()
	done := make(chan error)
	go func() {
		_, err := shade.Pull(context.Background(), "alice/tiny/tiny.gguf", shade.PullOptions{Dir: dir, Hub: ts.URL, Attempts: 1, IdleTimeout: 300 * time.Millisecond})
		done <- err
	}()
	// While the first pull waits on the stalled server, a second one is refused.
	<-arrived
	if _, err := shade.Pull(context.Background(), "alice/tiny/tiny.gguf", shade.PullOptions{Dir: dir, Hub: ts.URL, Attempts: 1}); !errors.Is(err, shade.ErrBusy) {
		t.Errorf("second pull of the same file: %v", err)
	}
	if err := <-done; err == nil || !strings.Contains(err.Error(), "nothing received") {
		t.Fatalf("stalled server: %v", err)
	}
}

// A 404 leaves nothing behind and says what the server said.
func TestPull404LeavesNothing(t *testing.T) {
	ts := httptest.NewServer(http.NotFoundHandler())
	defer ts.Close()
	dir := t.TempDir()
	_, err := shade.Pull(context.Background(), "alice/tiny/tiny.gguf", shade.PullOptions{Dir: dir, Hub: ts.URL})
	if err == nil || !strings.Contains(err.Error(), "404") || strings.Contains(err.Error(), "resume") {
		t.Fatalf("404: %v", err)
	}
	left, _ := filepath.Glob(filepath.Join(dir, "alice", "tiny", "*"))
	if len(left) != 0 {
		t.Fatalf("left behind: %v", left)
	}
}
