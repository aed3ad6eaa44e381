package shade_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"

	"shade"
)

// The examples run on the shared test data; without it the package's
// tests say so and skip.
func TestMain(m *testing.M) {
	if _, err := os.Stat(storiesPath); err != nil {
		fmt.Printf("skipping package shade: %s not present (the shared conformance pack is needed)\n", storiesPath)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestGenerateCancelAndErrors(t *testing.T) {
	m, err := shade.Open(storiesPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	res, err := m.Generate(ctx, "Once upon a time", shade.GenerateOptions{IgnoreEOS: true}, func(string) error {
		if n++; n == 5 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) || res.Tokens > 8 || res.StopReason != "canceled" {
		t.Fatalf("canceled: %v, %d tokens, stop %q", err, res.Tokens, res.StopReason)
	}
	stop := errors.New("enough")
	if _, err := m.Generate(context.Background(), "Once", shade.GenerateOptions{}, func(string) error { return stop }); !errors.Is(err, stop) {
		t.Fatalf("callback error: %v", err)
	}
	if _, err := shade.Open(storiesPath, &shade.Options{Spec: "tree"}); err == nil {
		t.Fatal("tree without a draft accepted")
	}
	if _, err := m.Generate(context.Background(), "\xff", shade.GenerateOptions{}, nil); err == nil {
		t.Fatal("invalid UTF-8 accepted")
	}
	// Two goroutines at once take turns.
	errc := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := m.Generate(context.Background(), "Once", shade.GenerateOptions{MaxTokens: 20}, nil)
			errc <- err
		}()
	}
	for range 2 {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
}
