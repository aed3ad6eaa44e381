package model

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"golang.org/x/sys/unix"

	"shade/gguf"
)

// copyFile copies a conformance model to a temporary file the test may cut.
func copyFile(t *testing.T, name string) string {
	t.Helper()
	src, err := os.Open(filepath.Join(conformanceDir, name))
	if err != nil {
		t.Skipf("conformance model: %v", err)
	}
	defer src.Close()
	path := filepath.Join(t.TempDir(), name)
	dst, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestTruncatedUnderForward cuts the mapped file while a forward pass runs
// (between two layers, and before the LM head): reading the cut pages
// raises SIGBUS, which must come back as an error wrapping
// gguf.ErrModelFileChanged, not end the process, on the calling goroutine
// and on the pool's workers alike, and leave the pool usable.
func TestTruncatedUnderForward(t *testing.T) {
	if !faultsHaveAddr(t) {
		t.Skip("this platform reports SIGBUS without its address (qemu-user does), so a fault cannot be traced to its file")
	}
	for _, tc := range []struct {
		name    string
		threads int
		cutAt   int // layer after which the file is cut; -1: before the head
	}{
		{"layers/1thread", 1, 0},
		{"layers/2threads", 2, 0},
		{"head/2threads", 2, -1},
		{"head/3threads", 3, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := copyFile(t, "llama-tiny-q8_0.gguf")
			m, err := Open(path, tc.threads)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			s, err := m.NewState(64)
			if err != nil {
				t.Fatal(err)
			}
			cut := func() {
				if err := os.Truncate(path, 4096); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Begin(Chain([]int32{1, 15043, 3186, 29892})); err != nil {
				t.Fatal(err)
			}
			err = s.RunLayers(0, m.Config.Layers, func(l int) error {
				if l == tc.cutAt {
					cut()
				}
				return nil
			})
			if tc.cutAt < 0 {
				if err != nil {
					t.Fatal(err)
				}
				cut()
				err = s.Logits([]int{3}, make([]float32, m.Config.Vocab))
			}
			if !errors.Is(err, gguf.ErrModelFileChanged) {
				t.Fatalf("got %v, want an error wrapping ErrModelFileChanged", err)
			}
			// The pool's workers recovered and still run loops.
			var hits [64]int
			for range 3 {
				m.Pool.For(len(hits), func(lo, hi int) {
					for i := lo; i < hi; i++ {
						hits[i]++
					}
				})
			}
			for i, h := range hits {
				if h != 3 {
					t.Fatalf("after the fault, pool loop index %d ran %d times of 3", i, h)
				}
			}
			// Another call meets the same fault, again as an error.
			if err := s.Begin(Chain([]int32{1})); err == nil {
				err = s.RunLayers(0, m.Config.Layers, nil)
				if !errors.Is(err, gguf.ErrModelFileChanged) {
					t.Fatalf("second pass: got %v", err)
				}
			} else if !errors.Is(err, gguf.ErrModelFileChanged) {
				t.Fatalf("second Begin: got %v", err)
			}
		})
	}
}

// TestFaultOutsideMappingStillPanics: only faults on a mapped model file
// become errors; any other panic in a forward pass is a bug and goes on.
func TestFaultOutsideMappingStillPanics(t *testing.T) {
	if err := gguf.FaultError(errors.New("not a runtime error")); err != nil {
		t.Fatalf("FaultError of a plain error: %v", err)
	}
	defer func() {
		r := recover()
		if r == nil {
			t.Fatal("a nil dereference was swallowed")
		}
		if gguf.FaultError(r) != nil {
			t.Fatalf("a nil dereference was taken for a model file fault: %v", r)
		}
	}()
	var err error
	func() {
		defer gguf.CatchFault(&err)
		defer gguf.GuardFaults()()
		var p *int
		_ = *p
	}()
	t.Fatalf("no panic, err %v", err)
}

// faultsHaveAddr reports whether a read past the end of a truncated mapped
// file faults with its address, as Linux reports it; qemu-user gives none.
func faultsHaveAddr(t *testing.T) (ok bool) {
	path := filepath.Join(t.TempDir(), "probe")
	page := os.Getpagesize()
	if err := os.WriteFile(path, make([]byte, 2*page), 0o644); err != nil {
		t.Fatal(err)
	}
	fd, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	data, err := unix.Mmap(int(fd.Fd()), 0, 2*page, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(data)
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_, ok = recover().(interface{ Addr() uintptr })
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	faultSink = data[page]
	return false
}

var faultSink byte
