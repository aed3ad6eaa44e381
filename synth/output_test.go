package synth

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestWriteOutputs: a model is written only over nothing or a regular
// file; links, FIFOs, devices and directories are refused; a canceled
// write leaves neither the file nor its temporary.
func TestWriteOutputs(t *testing.T) {
	o, err := Demo()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	regular := filepath.Join(dir, "old.gguf")
	os.WriteFile(regular, []byte("old"), 0o644)
	link := filepath.Join(dir, "link.gguf")
	os.Symlink(regular, link)
	for _, tc := range []struct {
		path string
		ok   bool
	}{
		{filepath.Join(dir, "new.gguf"), true},
		{regular, true},
		{link, false},
		{fifo, false},
		{"/dev/null", false},
		{dir, false},
	} {
		err := WriteFile(tc.path, o)
		if tc.ok != (err == nil) || (!tc.ok && !errors.Is(err, ErrNotRegular)) {
			t.Errorf("WriteFile(%s): %v", tc.path, err)
		}
	}
	if b, _ := os.ReadFile(regular); string(b) == "old" {
		t.Error("the regular file was not replaced")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	stopped := filepath.Join(dir, "stopped.gguf")
	if err := WriteFileContext(ctx, stopped, o); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled write: %v", err)
	}
	if _, err := os.Stat(stopped); err == nil {
		t.Error("a canceled write left its file")
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*.tmp")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}
