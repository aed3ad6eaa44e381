package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// PromptFormat says, for --help, what a prompt file holds.
const PromptFormat = `JSONL, one {"prompt": "…"} object per line`

// Bounds of a prompt file: a line is one prompt, and no prompt set needs
// more; a bigger file (/dev/zero, a model file given by mistake) is
// refused before it fills memory.
const (
	maxPromptLine  = 1 << 20
	maxPromptBytes = 64 << 20
)

// ReadPrompts reads a prompt file (see ParsePrompts).
func ReadPrompts(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParsePrompts(f, path)
}

// ParsePrompts reads prompts in the one format every command takes
// (PromptFormat): each non-blank line a JSON object whose "prompt" is a
// non-empty string (other fields are ignored). JSON, unlike plain lines,
// holds any prompt, newlines and all, and cannot be misread. name is used
// in errors, which give the line. A file without prompts is an error.
func ParsePrompts(r io.Reader, name string) ([]string, error) {
	return parsePrompts(r, name, maxPromptBytes)
}

func parsePrompts(r io.Reader, name string, limit int64) ([]string, error) {
	lr := &io.LimitedReader{R: r, N: limit + 1}
	tooBig := fmt.Errorf("%s: over %d MiB: not a prompt file", name, limit>>20)
	sc := bufio.NewScanner(lr)
	sc.Buffer(make([]byte, 0, 64<<10), maxPromptLine)
	var out []string
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var rec struct {
			Prompt *string `json:"prompt"`
		}
		if b[0] != '{' || json.Unmarshal(b, &rec) != nil || rec.Prompt == nil || *rec.Prompt == "" {
			if lr.N <= 0 {
				return nil, tooBig // a line cut by the limit
			}
			return nil, fmt.Errorf("%s:%d: want a JSON object with a non-empty \"prompt\" string (%s)", name, line, PromptFormat)
		}
		out = append(out, *rec.Prompt)
	}
	switch err := sc.Err(); {
	case lr.N <= 0:
		return nil, tooBig
	case errors.Is(err, bufio.ErrTooLong):
		return nil, fmt.Errorf("%s:%d: a line over %d KiB: not a prompt file (%s)", name, line+1, maxPromptLine>>10, PromptFormat)
	case err != nil:
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no prompts (%s)", name, PromptFormat)
	}
	return out, nil
}
