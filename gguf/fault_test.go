package gguf

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFaultOnMapping: a read past the end of a file cut after Open is an
// error wrapping ErrModelFileChanged that names the file.
func TestFaultOnMapping(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(sharedDir, "conformance", "stories260K.gguf"))
	if err != nil {
		t.Skip(err)
	}
	path := filepath.Join(t.TempDir(), "cut.gguf")
	if err := os.WriteFile(path, src, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	read := func() (b byte, err error) {
		defer CatchFault(&err)
		defer GuardFaults()()
		return f.Bytes()[len(f.Bytes())-1], nil
	}
	_, err = read()
	if !errors.Is(err, ErrModelFileChanged) {
		t.Fatalf("got %v", err)
	}
	if want := "cut.gguf"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not name %s", err, want)
	}
}

// BenchmarkGuard is what the guard costs every guarded forward-pass call.
func BenchmarkGuard(b *testing.B) {
	x := 0
	for b.Loop() {
		func() (err error) {
			defer CatchFault(&err)
			defer GuardFaults()()
			x++
			return nil
		}()
	}
}
