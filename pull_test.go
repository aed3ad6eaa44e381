package shade_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"math/rand/v2"
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
	"shade/gguf"
	"shade/quant"
)

// hub is a local stand-in for a model hub: it serves one GGUF-looking
// file at /USER/REPO/resolve/main/FILE with Range support and reports its
// checksum as Hugging Face does; it can cut the first response short.
type hub struct {
	data     []byte
	cutAfter int    // >0: the first response stops after this many bytes
	sum      string // reported checksum (default: the right one)
	mu       sync.Mutex
	ranges   []string
	requests int
}

func (h *hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/alice/tiny/resolve/main/tiny.gguf" {
		http.NotFound(w, r)
		return
	}
	h.mu.Lock()
	h.requests++
	first := h.requests == 1
	h.ranges = append(h.ranges, r.Header.Get("Range"))
	h.mu.Unlock()
	sum := h.sum
	if sum == "" {
		s := sha256.Sum256(h.data)
		sum = hex.EncodeToString(s[:])
	}
	w.Header().Set("X-Linked-Etag", `"`+sum+`"`)
	w.Header().Set("ETag", `"v1"`)
	if first && h.cutAfter > 0 {
		w.Header().Set("Content-Length", strconv.Itoa(len(h.data)))
		w.WriteHeader(200)
		w.Write(h.data[:h.cutAfter])
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // the connection drops mid-file
	}
	http.ServeContent(w, r, "tiny.gguf", time.Time{}, bytes.NewReader(h.data))
}

// payload is a valid 3 MiB GGUF file: one F32 tensor of random values.
func payload() []byte { return ggufFile(1) }

func ggufFile(seed uint64) []byte {
	var buf bytes.Buffer
	w := gguf.NewWriter(&buf)
	w.Set("general.architecture", "llama")
	w.AddTensor("t", quant.F32, 1024, 768)
	w.WriteHeader()
	b := make([]byte, 1024*768*4)
	r := rand.New(rand.NewPCG(seed, 2))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	w.Write(b)
	if err := w.Close(); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

func TestPullResumeProgressChecksum(t *testing.T) {
	h := &hub{data: payload(), cutAfter: 1 << 20}
	ts := httptest.NewServer(h)
	defer ts.Close()
	dir := t.TempDir()
	var last, total int64
	res, err := shade.Pull(context.Background(), "alice/tiny/tiny.gguf", shade.PullOptions{
		Dir: dir, Hub: ts.URL, Progress: func(d, t int64) { last, total = d, t },
	})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(res.Path)
	if !bytes.Equal(got, h.data) || res.Path != filepath.Join(dir, "alice", "tiny", "tiny.gguf") {
		t.Fatalf("file %s differs (%d bytes)", res.Path, len(got))
	}
	if !res.Verified || !res.Resumed || !res.Downloaded || last != int64(len(h.data)) || total != last {
		t.Fatalf("result %+v, progress %d/%d", res, last, total)
	}
	if len(h.ranges) != 2 || h.ranges[1] != "bytes=1048576-" {
		t.Fatalf("ranges asked: %q", h.ranges)
	}
	if _, err := os.Stat(res.Path + ".part"); !os.IsNotExist(err) {
		t.Fatal("partial file left behind")
	}
	// Already there: no request.
	n := h.requests
	if res, err := shade.Pull(context.Background(), "alice/tiny/tiny.gguf", shade.PullOptions{Dir: dir, Hub: ts.URL}); err != nil || res.Downloaded || h.requests != n {
		t.Fatalf("second pull: %+v %v (%d requests)", res, err, h.requests-n)
	}
}

// A .part left by an earlier run is resumed from its end.
func TestPullResumesAcrossRuns(t *testing.T) {
	h := &hub{data: payload()}
	ts := httptest.NewServer(h)
	defer ts.Close()
	dir := t.TempDir()
	dst := filepath.Join(dir, "alice", "tiny", "tiny.gguf")
	os.MkdirAll(filepath.Dir(dst), 0o755)
	os.WriteFile(dst+".part", h.data[:12345], 0o644)
	os.WriteFile(dst+".part.etag", []byte(`"v1"`), 0o644) // the validator the first run stored
	res, err := shade.Pull(context.Background(), ts.URL+"/alice/tiny/resolve/main/tiny.gguf", shade.PullOptions{Dir: dir})
	if err == nil {
		// A URL goes to DIR/HOST/FILE, not USER/REPO: nothing to resume there.
		if res.Resumed {
			t.Fatal("resumed a file of another path")
		}
	}
	res, err = shade.Pull(context.Background(), "alice/tiny/tiny.gguf", shade.PullOptions{Dir: dir, Hub: ts.URL})
	if err != nil || !res.Resumed || h.ranges[len(h.ranges)-1] != "bytes=12345-" {
		t.Fatalf("%+v %v ranges %q", res, err, h.ranges)
	}
}

func TestPullChecksumMismatch(t *testing.T) {
	h := &hub{data: payload(), sum: strings.Repeat("ab", 32)}
	ts := httptest.NewServer(h)
	defer ts.Close()
	dir := t.TempDir()
	_, err := shade.Pull(context.Background(), "alice/tiny/tiny.gguf", shade.PullOptions{Dir: dir, Hub: ts.URL})
	if !errors.Is(err, shade.ErrChecksum) {
		t.Fatalf("err %v", err)
	}
	left, _ := filepath.Glob(filepath.Join(dir, "alice", "tiny", "*"))
	for _, f := range left {
		if !strings.HasSuffix(f, ".etag") {
			t.Fatalf("file left after a bad checksum: %s", f)
		}
	}
	// An explicit checksum wins over the server's.
	s := sha256.Sum256(h.data)
	if _, err := shade.Pull(context.Background(), "alice/tiny/tiny.gguf", shade.PullOptions{Dir: dir, Hub: ts.URL, SHA256: hex.EncodeToString(s[:])}); err != nil {
		t.Fatal(err)
	}
}

func TestPullErrors(t *testing.T) {
	ts := httptest.NewServer(&hub{data: []byte("not a gguf file")})
	defer ts.Close()
	dir := t.TempDir()
	for _, ref := range []string{"alice/tiny/missing.gguf", "../../etc/passwd.gguf", "alice/tiny", "ftp://x/y.gguf"} {
		if _, err := shade.Pull(context.Background(), ref, shade.PullOptions{Dir: dir, Hub: ts.URL}); err == nil {
			t.Errorf("%s: no error", ref)
		}
	}
	if _, err := shade.Pull(context.Background(), "alice/tiny/tiny.gguf", shade.PullOptions{Dir: dir, Hub: ts.URL}); err == nil || !strings.Contains(err.Error(), "not a GGUF") {
		t.Errorf("non-GGUF: %v", err)
	}
}
