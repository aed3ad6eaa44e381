package shade

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// DefaultHub is where USER/REPO/FILE references are fetched from; the
// environment variable SHADE_HF_ENDPOINT (or HF_ENDPOINT) overrides it.
const DefaultHub = "https://huggingface.co"

// ModelDir is the model cache: os.UserCacheDir()/shade/models.
func ModelDir() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("shade: no cache directory: %w", err)
	}
	return filepath.Join(dir, "shade", "models"), nil
}

// PullOptions configure Pull. The zero value is valid.
type PullOptions struct {
	Dir      string       // destination directory (default: ModelDir())
	Hub      string       // base URL for USER/REPO/FILE references (default: SHADE_HF_ENDPOINT, HF_ENDPOINT or DefaultHub)
	SHA256   string       // expected checksum (hex); default: the one the server reports (X-Linked-Etag / ETag), if any
	Client   *http.Client // default: one with connection and header timeouts
	Attempts int          // tries, each resuming where the last stopped (default 3)
	// Progress, if set, is called as bytes arrive (total < 0 when unknown).
	Progress func(done, total int64)
}

// PullResult says what Pull did.
type PullResult struct {
	Path       string // the file in the cache
	Bytes      int64
	SHA256     string // hex of the file's checksum
	Verified   bool   // SHA256 matched an expected checksum
	Resumed    bool   // a partial download was continued
	Downloaded bool   // false if the file was already there
}

// ErrChecksum is wrapped when a download's checksum is not the expected one.
var ErrChecksum = errors.New("checksum mismatch")

var refRE = regexp.MustCompile(`^([A-Za-z0-9][\w.-]*)/([\w.-]+)/((?:[\w.-]+/)*[\w.-]+\.gguf)$`)

// Resolve maps a model reference, USER/REPO/FILE.gguf (FILE may have
// folders; on the hub's main revision) or an http(s) URL, to its URL and
// its path in dir.
func Resolve(ref, hub, dir string) (src, dst string, err error) {
	if strings.HasPrefix(ref, "http://") || strings.HasPrefix(ref, "https://") {
		u, err := url.Parse(ref)
		if err != nil || u.Host == "" {
			return "", "", fmt.Errorf("shade: bad URL %q", ref)
		}
		name := filepath.Base(u.Path)
		if name == "/" || name == "." || name == "" {
			return "", "", fmt.Errorf("shade: URL %q names no file", ref)
		}
		host := strings.NewReplacer(":", "_").Replace(u.Host)
		return ref, filepath.Join(dir, host, name), nil
	}
	m := refRE.FindStringSubmatch(ref)
	if m == nil || strings.Contains(ref, "..") {
		return "", "", fmt.Errorf("shade: %q is neither USER/REPO/FILE.gguf nor an http(s) URL", ref)
	}
	if hub == "" {
		hub = DefaultHub
	}
	src = strings.TrimSuffix(hub, "/") + "/" + m[1] + "/" + m[2] + "/resolve/main/" + m[3]
	return src, filepath.Join(dir, m[1], m[2], filepath.FromSlash(m[3])), nil
}

// Pull downloads a model into the cache (see Resolve) and returns its
// path. A partial download (FILE.part) is resumed with an HTTP Range
// request, also across runs; a file already complete is not fetched
// again. The checksum is checked against opt.SHA256 or the one the server
// reports, and the file must start with the GGUF magic.
func Pull(ctx context.Context, ref string, opt PullOptions) (PullResult, error) {
	var res PullResult
	if opt.Dir == "" {
		var err error
		if opt.Dir, err = ModelDir(); err != nil {
			return res, err
		}
	}
	if opt.Hub == "" {
		opt.Hub = os.Getenv("SHADE_HF_ENDPOINT")
		if opt.Hub == "" {
			opt.Hub = os.Getenv("HF_ENDPOINT")
		}
	}
	if opt.Client == nil {
		opt.Client = &http.Client{Transport: &http.Transport{
			Proxy: http.ProxyFromEnvironment, ResponseHeaderTimeout: 60 * time.Second,
			TLSHandshakeTimeout: 30 * time.Second, IdleConnTimeout: 90 * time.Second,
		}}
	}
	if opt.Attempts <= 0 {
		opt.Attempts = 3
	}
	want := strings.ToLower(strings.TrimSpace(opt.SHA256))
	if want != "" && !isSHA256(want) {
		return res, fmt.Errorf("shade: --sha256 %q is not 64 hex digits", opt.SHA256)
	}
	src, dst, err := Resolve(ref, opt.Hub, opt.Dir)
	if err != nil {
		return res, err
	}
	res.Path = dst
	if fi, err := os.Stat(dst); err == nil && fi.Mode().IsRegular() {
		res.Bytes = fi.Size()
		if want == "" {
			return res, nil
		}
		sum, err := fileSHA256(dst)
		if err != nil {
			return res, err
		}
		res.SHA256, res.Verified = sum, sum == want
		if sum != want {
			return res, fmt.Errorf("shade: %s: %w: have %s, want %s (delete it to download again)", dst, ErrChecksum, sum, want)
		}
		return res, nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return res, err
	}
	part := dst + ".part"
	var lastErr error
	for attempt := 0; attempt < opt.Attempts; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return res, ctx.Err()
			case <-time.After(time.Duration(attempt) * 500 * time.Millisecond):
			}
		}
		var resumed bool
		var reported string
		resumed, reported, lastErr = fetch(ctx, opt, src, part)
		res.Resumed = res.Resumed || resumed
		if reported != "" && want == "" {
			want = reported
		}
		if lastErr == nil || ctx.Err() != nil || errors.Is(lastErr, errPermanent) {
			break
		}
	}
	if lastErr != nil {
		return res, fmt.Errorf("shade: pull %s: %w (the partial file %s is kept: run again to resume)", src, lastErr, part)
	}
	sum, err := fileSHA256(part)
	if err != nil {
		return res, err
	}
	res.SHA256 = sum
	if want != "" {
		if sum != want {
			os.Remove(part)
			return res, fmt.Errorf("shade: pull %s: %w: got %s, want %s (the download was deleted)", src, ErrChecksum, sum, want)
		}
		res.Verified = true
	}
	if err := checkMagic(part); err != nil {
		os.Remove(part)
		return res, fmt.Errorf("shade: pull %s: %w (the download was deleted)", src, err)
	}
	if err := os.Rename(part, dst); err != nil {
		return res, err
	}
	os.Remove(part + ".etag")
	fi, _ := os.Stat(dst)
	res.Bytes, res.Downloaded = fi.Size(), true
	return res, nil
}

var errPermanent = errors.New("permanent error")

// fetch appends the rest of src to part. It returns whether it resumed
// and the checksum the server reported, if any.
func fetch(ctx context.Context, opt PullOptions, src, part string) (resumed bool, sum string, err error) {
	f, err := os.OpenFile(part, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return false, "", err
	}
	defer f.Close()
	have, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return false, "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, src, nil)
	if err != nil {
		return false, "", fmt.Errorf("%w: %v", errPermanent, err)
	}
	req.Header.Set("User-Agent", "shade-pull/1")
	validator, _ := os.ReadFile(part + ".etag")
	if have > 0 {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-", have))
		if len(validator) > 0 {
			req.Header.Set("If-Range", string(validator)) // a changed file comes back whole (200)
		}
	}
	resp, err := opt.Client.Do(req)
	if err != nil {
		return false, "", err
	}
	defer resp.Body.Close()
	sum = reportedSHA256(resp.Header)
	if et := resp.Header.Get("ETag"); et != "" && !strings.HasPrefix(et, "W/") {
		os.WriteFile(part+".etag", []byte(et), 0o644)
	}
	total := int64(-1)
	switch resp.StatusCode {
	case http.StatusOK:
		if err := f.Truncate(0); err != nil {
			return false, sum, err
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return false, sum, err
		}
		have = 0
		if resp.ContentLength >= 0 {
			total = resp.ContentLength
		}
	case http.StatusPartialContent:
		start, size, ok := parseContentRange(resp.Header.Get("Content-Range"))
		if !ok || start != have {
			return false, sum, fmt.Errorf("server answered range %q to a request from byte %d", resp.Header.Get("Content-Range"), have)
		}
		resumed, total = true, size
	case http.StatusRequestedRangeNotSatisfiable:
		// Everything is there already if the size is what we have.
		if _, size, ok := parseContentRange(resp.Header.Get("Content-Range")); ok && size == have {
			return true, sum, nil
		}
		f.Truncate(0)
		return false, sum, fmt.Errorf("the partial file does not fit the server's: starting over")
	case http.StatusNotFound, http.StatusUnauthorized, http.StatusForbidden, http.StatusGone:
		return false, sum, fmt.Errorf("%w: %s", errPermanent, resp.Status)
	default:
		return false, sum, fmt.Errorf("server said %s", resp.Status)
	}
	if opt.Progress != nil {
		opt.Progress(have, total)
	}
	w := &progressWriter{w: f, done: have, total: total, report: opt.Progress}
	n, err := io.Copy(w, resp.Body)
	if err != nil {
		return resumed, sum, err
	}
	if total >= 0 && have+n != total {
		return resumed, sum, fmt.Errorf("connection closed after %d of %d bytes", have+n, total)
	}
	if opt.Progress != nil {
		opt.Progress(have+n, max(total, have+n))
	}
	return resumed, sum, nil
}

type progressWriter struct {
	w           io.Writer
	done, total int64
	last        time.Time
	report      func(done, total int64)
}

func (p *progressWriter) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	p.done += int64(n)
	if p.report != nil && time.Since(p.last) > 100*time.Millisecond {
		p.last = time.Now()
		p.report(p.done, p.total)
	}
	return n, err
}

// parseContentRange reads "bytes START-END/SIZE" or "bytes */SIZE".
func parseContentRange(s string) (start, size int64, ok bool) {
	s, found := strings.CutPrefix(s, "bytes ")
	if !found {
		return 0, 0, false
	}
	rng, total, found := strings.Cut(s, "/")
	if !found {
		return 0, 0, false
	}
	size, err := strconv.ParseInt(total, 10, 64)
	if err != nil {
		size = -1
	}
	if rng == "*" {
		return 0, size, err == nil
	}
	a, _, found := strings.Cut(rng, "-")
	start, err2 := strconv.ParseInt(a, 10, 64)
	return start, size, found && err2 == nil
}

// reportedSHA256 is the checksum a hub reports: Hugging Face sends an LFS
// file's SHA-256 as X-Linked-Etag (or ETag).
func reportedSHA256(h http.Header) string {
	for _, k := range []string{"X-Linked-Etag", "ETag"} {
		v := strings.ToLower(strings.Trim(strings.TrimPrefix(h.Get(k), "W/"), `"`))
		if isSHA256(v) {
			return v
		}
	}
	return ""
}

func isSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func checkMagic(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var magic [4]byte
	if _, err := io.ReadFull(f, magic[:]); err != nil || string(magic[:]) != "GGUF" {
		return fmt.Errorf("not a GGUF file (it starts with %q)", magic[:])
	}
	return nil
}
