package shade

import (
	"context"
	"errors"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// A Background generation pauses between steps while a Foreground one
// runs, resumes after it, and gives the same text as when alone.
func TestBackgroundYieldsToForeground(t *testing.T) {
	m, err := Open(filepath.Join("..", "shared", "testdata", "conformance", "stories260K.gguf"), &Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	bgOpts := GenerateOptions{MaxTokens: 120, IgnoreEOS: true, Priority: Background}
	alone, err := m.Generate(context.Background(), "Once upon a time", bgOpts, nil)
	if err != nil {
		t.Fatal(err)
	}

	var fgRunning, fgDone atomic.Bool
	var during atomic.Int32 // background pieces emitted while the foreground ran
	fgRes := make(chan Result, 1)
	pieces := 0
	bg, err := m.Generate(context.Background(), "Once upon a time", bgOpts, func(string) error {
		if fgRunning.Load() && !fgDone.Load() {
			during.Add(1)
		}
		if pieces++; pieces == 5 {
			fgRunning.Store(true)
			go func() {
				r, err := m.Generate(context.Background(), "The dog", GenerateOptions{MaxTokens: 30, IgnoreEOS: true}, nil)
				if err != nil {
					t.Error(err)
				}
				fgDone.Store(true)
				fgRes <- r
			}()
			// This step holds the model: the foreground is counted as
			// soon as it is called, and waits for its turn.
			for m.foreground.Load() == 0 {
				runtime.Gosched()
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if r := <-fgRes; r.Tokens != 30 {
		t.Errorf("foreground: %d tokens", r.Tokens)
	}
	if n := during.Load(); n > 1 {
		t.Errorf("the background emitted %d pieces while the foreground ran (at most the step in flight)", n)
	}
	if bg.Text != alone.Text || bg.Tokens != 120 {
		t.Errorf("preempted background: %d tokens %q, alone %q", bg.Tokens, bg.Text, alone.Text)
	}
}

func TestPriorityErrors(t *testing.T) {
	m, err := Open(filepath.Join("..", "shared", "testdata", "conformance", "stories260K.gguf"), &Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Generate(context.Background(), "Hi", GenerateOptions{Priority: 7}, nil); err == nil {
		t.Error("priority 7 accepted")
	}
	// A background generation waiting for its turn ends with its context.
	m.foreground.Add(1)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	n := 0
	_, err = m.Generate(ctx, "Hi", GenerateOptions{MaxTokens: 50, IgnoreEOS: true, Priority: Background}, func(string) error {
		n++
		return nil
	})
	if !errors.Is(err, context.DeadlineExceeded) || n != 0 {
		t.Errorf("background behind a foreground that never ends: %v after %d pieces", err, n)
	}
	m.foreground.Add(-1)
	m.Close()
	if _, err := m.Generate(context.Background(), "Hi", GenerateOptions{}, nil); !errors.Is(err, errClosed) {
		t.Errorf("generation on a closed model: %v", err)
	}
}
