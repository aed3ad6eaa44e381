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

	"shade/gguf"
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
	// RetryDelay is the wait before the second attempt, doubled for each
	// one after (default 500 ms).
	RetryDelay time.Duration
	// IdleTimeout ends an attempt that receives nothing for this long
	// (default 60 s): a server that stalls does not hang the pull.
	IdleTimeout time.Duration
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

// ErrBusy is wrapped when another pull is downloading the same file.
var ErrBusy = errors.New("another pull of this file is running")

var refRE = regexp.MustCompile(`^([A-Za-z0-9][\w.-]*)/([\w.-]+)/((?:[\w.-]+/)*[\w.-]+\.gguf)$`)

// fileNameRE is what a file name taken from a URL may hold; any other
// character becomes "_".
var fileNameRE = regexp.MustCompile(`[^\w.+-]`)

// Resolve maps a model reference, USER/REPO/FILE.gguf (FILE may have
// folders; on the hub's main revision) or an http(s) URL, to its URL and
// its path in dir. A URL's file goes to dir/HOST/NAME, NAME being the last
// segment of its path with unusual characters replaced; names that would
// leave dir ("..", "%2e%2e", absolute paths) are refused. The name never
// comes from the server (Content-Disposition is not used).
func Resolve(ref, hub, dir string) (src, dst string, err error) {
	if strings.HasPrefix(ref, "http://") || strings.HasPrefix(ref, "https://") {
		u, err := url.Parse(ref)
		if err != nil || u.Host == "" {
			return "", "", fmt.Errorf("shade: bad URL %q", ref)
		}
		segs := strings.Split(u.Path, "/") // decoded: %2e%2e is ".." here
		name := fileNameRE.ReplaceAllString(segs[len(segs)-1], "_")
		if name == "" || strings.Trim(name, ".") == "" || strings.HasPrefix(name, ".") {
			return "", "", fmt.Errorf("shade: URL %q names no file (its path must end in a file name, not %q)", ref, segs[len(segs)-1])
		}
		host := strings.NewReplacer(":", "_", "[", "", "]", "").Replace(strings.ToLower(u.Host))
		if fileNameRE.MatchString(host) || strings.Trim(host, ".") == "" || strings.HasPrefix(host, ".") {
			return "", "", fmt.Errorf("shade: URL %q has an unusable host %q", ref, u.Host)
		}
		dst = filepath.Join(dir, host, name)
	} else {
		m := refRE.FindStringSubmatch(ref)
		if m == nil {
			return "", "", fmt.Errorf("shade: %q is neither USER/REPO/FILE.gguf nor an http(s) URL", ref)
		}
		if strings.Contains("/"+ref, "/.") {
			return "", "", fmt.Errorf("shade: %q: no part of USER/REPO/FILE.gguf may start with \".\" (no .., no hidden files)", ref)
		}
		if hub == "" {
			hub = DefaultHub
		}
		src = strings.TrimSuffix(hub, "/") + "/" + m[1] + "/" + m[2] + "/resolve/main/" + m[3]
		dst = filepath.Join(dir, m[1], m[2], filepath.FromSlash(m[3]))
		ref = src
	}
	// Whatever the reference, the file lands inside dir.
	if rel, err := filepath.Rel(dir, dst); err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", "", fmt.Errorf("shade: %q would be written outside %s", ref, dir)
	}
	return ref, dst, nil
}

// Pull downloads a model into the cache (see Resolve) and returns its
// path. It downloads into FILE.part beside the file, under a lock
// (FILE.lock: a second pull of the same file fails with ErrBusy), and
// resumes a partial download with an HTTP Range request only when the
// server gave a strong validator (ETag, sent back as If-Range), also across
// runs. Before the file is installed it must be whole: the size the server
// announced, the checksum (opt.SHA256, or the one the server reports), and
// a GGUF whose header and tensor table parse and whose tensors lie within
// the file. A file already complete and valid is not fetched again.
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
	if opt.IdleTimeout <= 0 {
		opt.IdleTimeout = 60 * time.Second
	}
	if opt.RetryDelay <= 0 {
		opt.RetryDelay = 500 * time.Millisecond
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
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return res, err
	}
	unlock, err := lockFile(dst + ".lock")
	if err != nil {
		return res, fmt.Errorf("shade: pull %s: %w", dst, err)
	}
	defer unlock()
	part := dst + ".part"
	for _, p := range []string{dst, part, part + ".etag"} {
		if fi, err := os.Lstat(p); err == nil && !fi.Mode().IsRegular() {
			return res, fmt.Errorf("shade: %s exists and is not a regular file (%v): not replacing it", p, fi.Mode().Type())
		}
	}
	if fi, err := os.Stat(dst); err == nil {
		if verr := checkGGUF(dst); verr == nil {
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
		// A broken file (an older pull's, or copied in) is downloaded again
		// and replaced once the new one is whole.
	}
	var lastErr error
	var total int64 = -1
	for attempt := 0; attempt < opt.Attempts; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return res, ctx.Err()
			case <-time.After(opt.RetryDelay << (attempt - 1)):
			}
		}
		var f fetched
		f, lastErr = fetch(ctx, opt, src, part)
		res.Resumed = res.Resumed || f.resumed
		if f.sum != "" && want == "" && opt.SHA256 == "" {
			want = f.sum
		}
		if f.total >= 0 {
			total = f.total
		}
		if lastErr == nil || ctx.Err() != nil || errors.Is(lastErr, errPermanent) {
			break
		}
	}
	if lastErr != nil {
		if ctx.Err() != nil {
			lastErr = ctx.Err()
		}
		return res, fmt.Errorf("shade: pull %s: %w%s", src, lastErr, keptNote(part))
	}
	fail := func(err error) (PullResult, error) {
		removePart(part)
		return res, fmt.Errorf("shade: pull %s: %w (the download was deleted)", src, err)
	}
	fi, err := os.Stat(part)
	if err != nil {
		return res, err
	}
	if total >= 0 && fi.Size() != total {
		return fail(fmt.Errorf("got %d bytes, the server announced %d", fi.Size(), total))
	}
	sum, err := fileSHA256(part)
	if err != nil {
		return res, err
	}
	res.SHA256 = sum
	if want != "" {
		if sum != want {
			return fail(fmt.Errorf("%w: got %s, want %s", ErrChecksum, sum, want))
		}
		res.Verified = true
	}
	if err := checkGGUF(part); err != nil {
		return fail(err)
	}
	if err := os.Rename(part, dst); err != nil {
		return res, err
	}
	os.Remove(part + ".etag")
	res.Bytes, res.Downloaded = fi.Size(), true
	return res, nil
}

// keptNote says what became of a partial download after a failed pull: it
// is kept only when it can be resumed (it has bytes and a strong validator).
func keptNote(part string) string {
	fi, err := os.Stat(part)
	_, verr := os.Stat(part + ".etag")
	if err == nil && fi.Size() > 0 && verr == nil {
		return fmt.Sprintf(" (the partial file %s is kept: run again to resume)", part)
	}
	removePart(part)
	return ""
}

func removePart(part string) {
	os.Remove(part)
	os.Remove(part + ".etag")
}

var (
	errPermanent = errors.New("permanent error")
	errStalled   = errors.New("stalled")
)

// fetched is what one attempt learned.
type fetched struct {
	resumed bool
	sum     string // checksum the server reported, if any
	total   int64  // the file's size as the server announced it (-1: unknown)
}

// fetch writes src into part, continuing part if the server confirms
// (through If-Range) that it is still the file part holds.
func fetch(ctx context.Context, opt PullOptions, src, part string) (res fetched, err error) {
	res.total = -1
	var have int64
	if fi, err := os.Stat(part); err == nil {
		have = fi.Size()
	}
	validator, _ := os.ReadFile(part + ".etag")
	if len(validator) == 0 {
		have = 0 // without a strong validator a partial file cannot be trusted to match
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	idle := time.AfterFunc(opt.IdleTimeout, func() { cancel(errStalled) })
	defer idle.Stop()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, src, nil)
	if err != nil {
		return res, fmt.Errorf("%w: %v", errPermanent, err)
	}
	req.Header.Set("User-Agent", "shade-pull/1")
	if have > 0 {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-", have))
		req.Header.Set("If-Range", string(validator)) // a changed file comes back whole (200)
	}
	stalled := func(err error) error {
		if context.Cause(ctx) == errStalled {
			return fmt.Errorf("%w: nothing received for %v", errStalled, opt.IdleTimeout)
		}
		return err
	}
	resp, err := opt.Client.Do(req)
	if err != nil {
		return res, stalled(err)
	}
	defer resp.Body.Close()
	res.sum = reportedSHA256(resp.Header)
	etag := resp.Header.Get("ETag")
	strong := etag != "" && !strings.HasPrefix(etag, "W/")
	switch resp.StatusCode {
	case http.StatusOK:
		have = 0
		if resp.ContentLength >= 0 {
			res.total = resp.ContentLength
		}
	case http.StatusPartialContent:
		start, size, ok := parseContentRange(resp.Header.Get("Content-Range"))
		if !ok || start != have || (strong && etag != string(validator)) {
			removePart(part)
			return res, fmt.Errorf("server answered range %q (ETag %s) to a request from byte %d of ETag %s: starting over",
				resp.Header.Get("Content-Range"), etag, have, validator)
		}
		res.resumed, res.total = true, size
	case http.StatusRequestedRangeNotSatisfiable:
		// Everything is there already if the size is what we have.
		if _, size, ok := parseContentRange(resp.Header.Get("Content-Range")); ok && size == have && have > 0 {
			res.resumed, res.total = true, size
			return res, nil
		}
		removePart(part)
		return res, fmt.Errorf("the partial file does not fit the server's: starting over")
	case http.StatusNotFound, http.StatusUnauthorized, http.StatusForbidden, http.StatusGone:
		return res, fmt.Errorf("%w: the server said %s", errPermanent, resp.Status)
	default:
		return res, fmt.Errorf("the server said %s", resp.Status)
	}
	flags := os.O_WRONLY | os.O_CREATE
	if have == 0 {
		flags |= os.O_TRUNC
	}
	f, err := os.OpenFile(part, flags, 0o644)
	if err != nil {
		return res, err
	}
	defer f.Close()
	if _, err := f.Seek(have, io.SeekStart); err != nil {
		return res, err
	}
	// The validator is what a later attempt resumes with: only a strong one.
	if strong && resp.StatusCode == http.StatusOK {
		if err := os.WriteFile(part+".etag", []byte(etag), 0o644); err != nil {
			return res, err
		}
	} else if !strong {
		os.Remove(part + ".etag")
	}
	if opt.Progress != nil {
		opt.Progress(have, res.total)
	}
	var body io.Reader = resp.Body
	if res.total >= 0 {
		body = io.LimitReader(resp.Body, res.total-have+1) // a server sending more than it said is caught below
	}
	w := &progressWriter{w: f, done: have, total: res.total, report: opt.Progress}
	n, err := io.Copy(w, &idleReader{r: body, t: idle, d: opt.IdleTimeout})
	if err != nil {
		return res, stalled(err)
	}
	if res.total >= 0 && have+n != res.total {
		if have+n > res.total {
			removePart(part)
			return res, fmt.Errorf("%w: the server sent more than the %d bytes it announced", errPermanent, res.total)
		}
		return res, fmt.Errorf("connection closed after %d of %d bytes", have+n, res.total)
	}
	if opt.Progress != nil {
		opt.Progress(have+n, max(res.total, have+n))
	}
	return res, f.Close()
}

// idleReader restarts the idle timer on every read that brings bytes.
type idleReader struct {
	r io.Reader
	t *time.Timer
	d time.Duration
}

func (r *idleReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if n > 0 {
		r.t.Reset(r.d)
	}
	return n, err
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

// checkGGUF refuses a file that is not a whole GGUF: its header and tensor
// table must parse and every tensor's data lie within the file.
func checkGGUF(path string) error {
	f, err := gguf.Open(path)
	if err != nil {
		return fmt.Errorf("not a valid GGUF file: %w", err)
	}
	return f.Close()
}
