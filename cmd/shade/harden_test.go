package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"shade/internal/gguftest"
)

// TestHostileInput: inputs a user (or a file) can give that must end in a
// clear error, never a panic, fatal error, hang or unbounded allocation.
func TestHostileInput(t *testing.T) {
	model := sharedFile(t, "conformance/stories260K.gguf")
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.gguf")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	prompt := filepath.Join(dir, "prompt.txt")
	os.WriteFile(prompt, []byte("Once"), 0o644)
	big := filepath.Join(dir, "big.txt")
	os.WriteFile(big, []byte(strings.Repeat("a", 2<<20)), 0o644)
	nan := gguftest.Rewrite(t, model, "NAN.gguf", nil, gguftest.FillF32("output.weight", float32(math.NaN())))
	badRope := gguftest.Rewrite(t, model, "rope.gguf", map[string]any{"llama.rope.freq_base": float32(math.NaN())}, nil)
	existing := filepath.Join(dir, "existing.gguf")
	os.WriteFile(existing, []byte("keep me"), 0o644)
	link := filepath.Join(dir, "link.gguf")
	os.Symlink(existing, link)
	synthTo := func(out string, extra ...string) []string {
		return append([]string{"synth", "--shape", "tiny", "--type", "Q8_0", "--quiet", "-o", out}, extra...)
	}
	cases := []struct {
		args []string
		code int
		want string
	}{
		// -f and -p (11)
		{[]string{"run", "-m", model, "-f", "/dev/zero"}, 1, "longer than"},
		{[]string{"run", "-m", model, "-f", big, "--ctx", "64"}, 1, "prompt too long"},
		{[]string{"run", "-m", model, "-p", "x", "-f", prompt}, 1, "-p and -f both"},
		{[]string{"run", "-m", model, "-f", dir}, 1, "is a directory"},
		{[]string{"perplexity", "-m", model, "-f", dir}, 1, "is a directory"},
		{[]string{"perplexity", "-m", model, "-f", big, "--ctx", "1000000"}, 1, "trained for 2048"},
		// context sizes (3)
		{[]string{"run", "-m", model, "-p", "x", "--ctx", "1000000000"}, 1, "at most 2048"},
		{[]string{"chat", "-m", model, "--ctx", "1000000000"}, 1, "trained for 2048"},
		{[]string{"serve", "-m", model, "--port", "0", "--ctx", "1000000000"}, 1, "trained for 2048"},
		{[]string{"run", "-m", model, "-p", "x", "--ctx", "-5"}, 1, "negative"},
		// model paths that are not files (13)
		{[]string{"run", "-m", dir, "-p", "x"}, 1, "is a directory"},
		{[]string{"inspect", dir}, 1, "is a directory"},
		{[]string{"inspect", fifo}, 1, "a FIFO"},
		{[]string{"run", "-m", fifo, "-p", "x"}, 1, "a FIFO"},
		{[]string{"serve", "-m", fifo, "--port", "0"}, 1, "a FIFO"},
		{[]string{"bench", "-m", fifo}, 1, "a FIFO"},
		{[]string{"bench", "-m", model, "--reps", "0"}, 1, "--reps"},
		{[]string{"bench", "-m", model, "--reps", "100000000"}, 1, "--reps"},
		{[]string{"bench", "-m", model, "--decode-tokens", "-1"}, 1, "--decode-tokens"},
		{[]string{"bench", "-m", model, "--bw-mib", "100000000"}, 1, "--bw-mib"},
		{[]string{"bench", "-m", model, "--depth", "0"}, 1, "--depth"},
		{[]string{"bench", "-m", model, "--depth", "-3"}, 1, "--depth"},
		{[]string{"run", "-m", model, "--draft", fifo, "-p", "x"}, 1, "a FIFO"},
		{[]string{"inspect", "/dev/null"}, 1, "character device"},
		// values out of range (15)
		{[]string{"run", "-m", model, "-p", "x", "--temp", "-1"}, 1, "[0, 100]"},
		{[]string{"run", "-m", model, "-p", "x", "--temp", "-Inf"}, 1, "[0, 100]"},
		{[]string{"chat", "-m", model, "--temp", "-1"}, 1, "[0, 100]"},
		{[]string{"run", "-m", model, "-p", "x", "--threads", "100000"}, 1, "threads"},
		{[]string{"run", "-m", model, "--draft", model, "--spec", "lever", "-p", "x", "--prune-layer", "99"}, 1, "prune layer 99"},
		{[]string{"run", "-m", badRope, "-p", "x"}, 1, "rope.freq_base NaN"},
		// NaN logits (2)
		{[]string{"run", "-m", model, "--draft", nan, "-p", "Once", "-n", "10", "--temp", "0"}, 0, "generated 10 tokens"},
		{[]string{"run", "-m", model, "--draft", nan, "--spec", "lever", "-p", "Once", "-n", "10"}, 0, "generated 10 tokens"},
		{[]string{"run", "-m", nan, "-p", "Once", "-n", "10"}, 1, "NaN or infinite logits"},
		// synth -o (12)
		{synthTo("/dev/null"), 1, "device"},
		{synthTo(fifo), 1, "FIFO"},
		{synthTo(link), 1, "symbolic link"},
		{synthTo(dir), 1, "directory"},
		{synthTo(existing), 1, "--force"},
		{[]string{"synth", "--draft-of", sharedFile(t, "conformance/llama-tiny-q8_0.gguf"), "--layers", "1", "--agreement", "1000000000000", "-o", filepath.Join(dir, "d.gguf")}, 1, "--agreement"},
	}
	for _, tc := range cases {
		done := make(chan struct{})
		go func() {
			select {
			case <-done:
			case <-time.After(2 * time.Minute):
				panic("shade " + strings.Join(tc.args, " ") + ": still running after 2 minutes")
			}
		}()
		code, _, errOut := shade(t, tc.args...)
		close(done)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("shade %s: exit %d (want %d), stderr %q (want %q)", strings.Join(tc.args, " "), code, tc.code, errOut, tc.want)
		}
	}
	if b, _ := os.ReadFile(existing); string(b) != "keep me" {
		t.Errorf("synth replaced an existing file without --force")
	}
	if code, _, errOut := shade(t, synthTo(existing, "--force")...); code != 0 {
		t.Errorf("synth --force: exit %d, %s", code, errOut)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*.tmp")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// TestInspectHostileMetadata: metadata with control characters is printed
// escaped (no escape sequence reaches the terminal, no line is forged),
// and --json holds NaN and infinite floats as strings.
func TestInspectHostileMetadata(t *testing.T) {
	model := sharedFile(t, "conformance/stories260K.gguf")
	path := gguftest.Rewrite(t, model, "hostile.gguf", map[string]any{
		"general.name":        "evil\x1b[2J\x1b]0;pwned\x07\nforged.key                                   forged",
		"general.description": "right\u202eleft\tcol\xff",
		"x.nan":               float32(math.NaN()),
		"x.inf":               math.Inf(-1),
		"x.floats":            []float32{1, float32(math.NaN()), float32(math.Inf(1))},
		"evil\nkey\x1b[31m":   uint32(1),
	}, nil)
	code, out, errOut := shade(t, "inspect", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if strings.ContainsAny(out, "\x1b\x07\u202e\xff\r") {
		t.Errorf("control characters reached the output:\n%q", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "forged") || strings.HasPrefix(line, "key") {
			t.Errorf("a metadata value forged the line %q", line)
		}
	}
	if !strings.Contains(out, `evil\x1b[2J`) || !strings.Contains(out, `\nforged.key`) || !strings.Contains(out, `right\u202eleft\tcol\xff`) {
		t.Errorf("escaped values missing from\n%s", out)
	}
	code, out, errOut = shade(t, "inspect", "--json", path)
	if code != 0 {
		t.Fatalf("--json: exit %d: %s", code, errOut)
	}
	var r inspectReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("--json output is not JSON: %v", err)
	}
	if r.Metadata["x.nan"] != "NaN" || r.Metadata["x.inf"] != "-Inf" {
		t.Errorf("non-finite floats: %v, %v", r.Metadata["x.nan"], r.Metadata["x.inf"])
	}
	if fl, ok := r.Metadata["x.floats"].([]any); !ok || len(fl) != 3 || fl[0] != 1.0 || fl[1] != "NaN" || fl[2] != "+Inf" {
		t.Errorf("float array: %#v", r.Metadata["x.floats"])
	}
	if r.Metadata["general.name"] != "evil\x1b[2J\x1b]0;pwned\x07\nforged.key                                   forged" {
		t.Errorf("--json changed a string: %q", r.Metadata["general.name"])
	}
}

// TestChatLongLine: a line over 1 MiB is skipped with a message and the
// chat goes on (it used to end at once, exit 0, in silence).
func TestChatLongLine(t *testing.T) {
	model := sharedFile(t, "conformance/stories260K.gguf")
	defer func() { chatInput = os.Stdin }()
	chatInput = strings.NewReader(strings.Repeat("x", 3<<20) + "\nHello\n/exit\n")
	code, out, errOut := shade(t, "chat", "-m", model, "--temp", "0", "-n", "4")
	if code != 0 || !strings.Contains(errOut, "longer than 1 MiB") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if strings.Count(out, "> ") != 3 {
		t.Errorf("the chat did not go on after the long line: %q", out)
	}
}

// TestChatNaNModel: a model computing NaN ends the chat with the error
// (every later turn would fail the same way).
func TestChatNaNModel(t *testing.T) {
	model := sharedFile(t, "conformance/stories260K.gguf")
	nan := gguftest.Rewrite(t, model, "NAN.gguf", nil, gguftest.FillF32("output.weight", float32(math.NaN())))
	defer func() { chatInput = os.Stdin }()
	chatInput = strings.NewReader("Hello\nHello again\n/exit\n")
	code, _, errOut := shade(t, "chat", "-m", nan, "-n", "4")
	if code != 1 || !strings.Contains(errOut, "NaN or infinite logits") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

func TestReadLines(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string // "!" is a line that was too long
	}{
		{"a\nb\r\n\nc", []string{"a", "b", "", "c"}},
		{strings.Repeat("y", 40) + "\nok\n", []string{"!", "ok"}},
		{"ok\n" + strings.Repeat("y", 40), []string{"ok", "!"}},
		{strings.Repeat("y", 16) + "\n", []string{strings.Repeat("y", 16)}},
		{"", nil},
	} {
		ch := make(chan chatLine)
		go readLines(strings.NewReader(tc.in), 16, ch)
		var got []string
		for l := range ch {
			switch {
			case l.err != nil:
				t.Fatal(l.err)
			case l.tooLong:
				got = append(got, "!")
			default:
				got = append(got, l.text)
			}
		}
		if strings.Join(got, "|") != strings.Join(tc.want, "|") || len(got) != len(tc.want) {
			t.Errorf("readLines(%.20q…) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestReadTextLimit(t *testing.T) {
	if _, err := readText("/dev/zero", 1<<10); err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Errorf("/dev/zero with a 1 KiB limit: %v", err)
	}
	path := filepath.Join(t.TempDir(), "t.txt")
	os.WriteFile(path, []byte("four"), 0o644)
	if b, err := readText(path, 4); err != nil || string(b) != "four" {
		t.Errorf("a file at the limit: %q, %v", b, err)
	}
}

// FuzzReadLines: readLines splits any input into the lines a Scanner
// would give, except that lines over the limit come as tooLong, and never
// sends a line longer than the limit.
func FuzzReadLines(f *testing.F) {
	f.Add("a\nb\r\n\nc", 4)
	f.Add(strings.Repeat("z", 100)+"\n\n", 7)
	f.Fuzz(func(t *testing.T, in string, limit int) {
		if limit < 1 || limit > 1<<12 {
			return
		}
		ch := make(chan chatLine)
		go readLines(strings.NewReader(in), limit, ch)
		var want []string
		if in != "" {
			want = strings.Split(strings.TrimSuffix(in, "\n"), "\n")
		}
		i := 0
		for l := range ch {
			if l.err != nil {
				t.Fatal(l.err)
			}
			if i >= len(want) {
				t.Fatalf("line %d beyond the %d of %q", i, len(want), in)
			}
			w := strings.TrimSuffix(want[i], "\r")
			switch {
			case l.tooLong && len(want[i]) <= limit:
				t.Fatalf("line %q of %d bytes called too long (limit %d)", want[i], len(want[i]), limit)
			case !l.tooLong && l.text != w:
				t.Fatalf("line %d: %q, want %q", i, l.text, w)
			case len(l.text) > limit:
				t.Fatalf("a line of %d bytes sent (limit %d)", len(l.text), limit)
			}
			i++
		}
		if i != len(want) {
			t.Fatalf("%d lines of %d from %q", i, len(want), in)
		}
	})
}

// FuzzClean: clean's output has no control character, bidirectional
// override or invalid UTF-8, and leaves printable text as it was.
func FuzzClean(f *testing.F) {
	f.Add("plain text é 漢字")
	f.Add("a\x1b[31mred\n\t\xff\u202e")
	f.Fuzz(func(t *testing.T, s string) {
		out := clean(s)
		if !utf8.ValidString(out) {
			t.Fatalf("clean(%q) = %q: invalid UTF-8", s, out)
		}
		for _, r := range out {
			if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
				t.Fatalf("clean(%q) = %q keeps %U", s, out, r)
			}
		}
		safe := utf8.ValidString(s)
		for _, r := range s {
			if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
				safe = false
			}
		}
		if safe && out != s {
			t.Fatalf("clean changed printable %q to %q", s, out)
		}
	})
}
