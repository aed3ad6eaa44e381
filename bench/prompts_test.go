package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParsePrompts(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string
		err      string
	}{
		{"one per line", `{"prompt":"a"}` + "\n" + `{"prompt":"b\nc","id":7}` + "\n", []string{"a", "b\nc"}, ""},
		{"blank lines and CRLF", "\n" + `{"prompt":"a"}` + "\r\n  \n" + `{"prompt":"b"}`, []string{"a", "b"}, ""},
		{"a plain line is refused, not guessed at", "Once upon a time\n", nil, ":1: want a JSON object"},
		{"a line that starts like JSON but is a prompt", "{not json}\n", nil, ":1:"},
		{"no prompt field", `{"text":"a"}`, nil, ":1:"},
		{"empty prompt", `{"prompt":""}`, nil, ":1:"},
		{"prompt not a string", `{"prompt":3}`, nil, ":1:"},
		{"null", "null", nil, ":1:"},
		{"a string, not an object", `"a"`, nil, ":1:"},
		{"the line is given", `{"prompt":"a"}` + "\n\n" + `[1]`, nil, ":3:"},
		{"empty file", "", nil, "no prompts"},
		{"only blanks", "\n \n", nil, "no prompts"},
		{"a line too long", `{"prompt":"` + strings.Repeat("x", maxPromptLine) + `"}`, nil, "over 1024 KiB"},
	} {
		got, err := ParsePrompts(strings.NewReader(tc.in), "p.jsonl")
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %q, %v; want an error with %q", tc.name, got, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}

// A file larger than any prompt set is refused without being read whole.
func TestParsePromptsBounded(t *testing.T) {
	line := []byte(`{"prompt":"` + strings.Repeat("x", 1000) + `"}` + "\n")
	for _, limit := range []int64{2 << 20, int64(2100 * len(line))} { // cut within a line, and at a line's end
		r := &repeatReader{line: line, left: int(limit)/len(line) + 2}
		if _, err := parsePrompts(r, "big", limit); err == nil || !strings.Contains(err.Error(), "not a prompt file") {
			t.Errorf("a file over %d bytes: %v", limit, err)
		}
	}
}

type repeatReader struct {
	line []byte
	left int
	off  int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) && r.left > 0 {
		c := copy(p[n:], r.line[r.off:])
		n += c
		if r.off += c; r.off == len(r.line) {
			r.off, r.left = 0, r.left-1
		}
	}
	if n == 0 {
		return 0, bytes.ErrTooLarge // never reached: the limit stops first
	}
	return n, nil
}

func TestReadPrompts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.jsonl")
	if err := os.WriteFile(path, []byte(`{"prompt":"hi"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadPrompts(path); err != nil || !slices.Equal(got, []string{"hi"}) {
		t.Errorf("%q, %v", got, err)
	}
	if _, err := ReadPrompts(path + ".missing"); err == nil {
		t.Error("a missing file read")
	}
}

func FuzzParsePrompts(f *testing.F) {
	f.Add([]byte(`{"prompt":"a"}` + "\n" + `{"prompt":"b"}`))
	f.Add([]byte("plain line\n"))
	f.Add([]byte(`{"prompt":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := ParsePrompts(bytes.NewReader(data), "fuzz")
		if err != nil {
			return
		}
		if len(got) == 0 {
			t.Fatal("no prompts and no error")
		}
		for _, p := range got {
			if p == "" {
				t.Fatal("an empty prompt accepted")
			}
		}
	})
}
