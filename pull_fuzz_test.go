package shade_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"shade"
	"shade/gguf"
)

// FuzzResolve: any reference either is refused or lands strictly inside
// the folder, under a name that is not hidden.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{"alice/tiny/tiny.gguf", "http://h/ok/..", "http://h/ok/%2e%2e", "https://h:8/a/b.gguf?x=../..",
		"http://../x", "http://[::1]:80/%2F..%2F..%2Fetc%2Fpasswd", "a/b/../c.gguf", "a/b/./c.gguf", "http://h/a%00b", "http://h/\\..\\x"} {
		f.Add(s)
	}
	dir := filepath.Join(os.TempDir(), "shade-fuzz-dir")
	f.Fuzz(func(t *testing.T, ref string) {
		src, dst, err := shade.Resolve(ref, "", dir)
		if err != nil {
			return
		}
		rel, rerr := filepath.Rel(dir, dst)
		if rerr != nil || rel == "." || strings.HasPrefix(rel, "..") || filepath.IsAbs(rel) || strings.HasPrefix(filepath.Base(dst), ".") || src == "" {
			t.Fatalf("%q resolved to %q (%q) from %q", ref, dst, rel, src)
		}
	})
}

// response is a scripted HTTP response for Pull.
type response struct {
	status                     int
	contentRange, etag, linked string
	contentLength              int64
	body                       []byte
}

type scripted []response

func (s *scripted) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(*s) == 0 {
		return nil, io.ErrUnexpectedEOF
	}
	c := (*s)[0]
	*s = (*s)[1:]
	h := http.Header{}
	for k, v := range map[string]string{"Content-Range": c.contentRange, "ETag": c.etag, "X-Linked-Etag": c.linked} {
		if v != "" {
			h.Set(k, v)
		}
	}
	return &http.Response{StatusCode: c.status, Status: strconv.Itoa(c.status), Header: h, ContentLength: c.contentLength,
		Body: io.NopCloser(bytes.NewReader(c.body)), Request: r}, nil
}

// FuzzPullResponse: whatever two responses a server sends (status,
// Content-Range, ETag, checksum headers, length and body), Pull ends with
// an error or installs a whole, valid GGUF inside its folder, and leaves
// no partial file without a validator to resume it by.
func FuzzPullResponse(f *testing.F) {
	good := ggufFile(3)[:64<<10+256]
	var buf bytes.Buffer
	w := gguf.NewWriter(&buf)
	w.AddTensor("t", 0, 64, 4)
	w.WriteHeader()
	w.Write(make([]byte, 64*4*4))
	w.Close()
	small := buf.Bytes()
	f.Add(200, "", `"v1"`, "", int64(len(small)), small, 206, "bytes 10-/20", "", int64(-1), small[:10])
	f.Add(200, "", `"v1"`, "", int64(-1), small[:len(small)/2], 206, "bytes 100-"+strconv.Itoa(len(small)-1)+"/"+strconv.Itoa(len(small)), `"v1"`, int64(-1), small[100:])
	f.Add(206, "bytes 0-3/4", "", "", int64(4), []byte("GGUF"), 416, "bytes */4", "", int64(0), []byte{})
	f.Add(404, "", "", "", int64(0), []byte{}, 200, "", `W/"x"`, int64(3), good[:3])
	f.Fuzz(func(t *testing.T, st1 int, cr1, etag1, linked1 string, cl1 int64, body1 []byte,
		st2 int, cr2, etag2 string, cl2 int64, body2 []byte) {
		fix := func(st int, cl int64, body []byte) (int, int64) {
			if st < 100 || st > 599 {
				st = 200
			}
			if cl > int64(len(body)) || cl < -1 {
				cl = -1 // a transport never delivers more than it has
			}
			return st, cl
		}
		st1, cl1 = fix(st1, cl1, body1)
		st2, cl2 = fix(st2, cl2, body2)
		rt := &scripted{{st1, cr1, etag1, linked1, cl1, body1}, {st2, cr2, etag2, "", cl2, body2}}
		dir := t.TempDir()
		res, err := shade.Pull(context.Background(), "alice/tiny/tiny.gguf", shade.PullOptions{
			Dir: dir, Hub: "http://hub.test", Client: &http.Client{Transport: rt}, Attempts: 2, IdleTimeout: time.Second, RetryDelay: time.Microsecond,
		})
		dst := filepath.Join(dir, "alice", "tiny", "tiny.gguf")
		if err == nil {
			if res.Path != dst {
				t.Fatalf("installed at %s", res.Path)
			}
			g, gerr := gguf.Open(dst)
			if gerr != nil {
				t.Fatalf("installed a broken file: %v", gerr)
			}
			g.Close()
		} else if _, serr := os.Stat(dst); serr == nil {
			t.Fatalf("failed (%v) but installed %s", err, dst)
		}
		if _, perr := os.Stat(dst + ".part"); perr == nil {
			if _, eerr := os.Stat(dst + ".part.etag"); eerr != nil {
				t.Fatalf("a .part without a validator is left (%v)", err)
			}
		}
	})
}
