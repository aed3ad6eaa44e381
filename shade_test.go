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

// A DRAM budget streams layers from the file and an elastic policy paces
// speculation; neither changes what greedy decoding says.
func TestBudgetAndPolicy(t *testing.T) {
	gen := func(o *shade.Options) (string, *shade.Model) {
		t.Helper()
		m, err := shade.Open(storiesPath, o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		res, err := m.Generate(context.Background(), "Once upon a time", shade.GenerateOptions{MaxTokens: 24}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return res.Text, m
	}
	want, plain := gen(&shade.Options{Threads: 2})
	if s, l := plain.Streaming(); s != 0 || l == 0 {
		t.Errorf("no budget: %d of %d layers streamed", s, l)
	}
	if plain.Policy() != "off" {
		t.Errorf("no policy: %q", plain.Policy())
	}
	if err := plain.SetPolicy("balanced"); err == nil {
		t.Error("a policy without a draft accepted")
	}
	got, budgeted := gen(&shade.Options{Threads: 2, DRAMBudget: "0%"})
	if s, l := budgeted.Streaming(); s != l || got != want {
		t.Errorf("budget 0%%: %d of %d layers streamed, text %q, want every layer and %q", s, l, got, want)
	}
	// The model drafts for itself: every draft is accepted, and its layers
	// are the sensor.
	got, governed := gen(&shade.Options{Threads: 2, Draft: storiesPath, Spec: "chain", Policy: "balanced", DRAMBudget: "60%"})
	if got != want || governed.Policy() != "balanced" {
		t.Errorf("balanced: text %q, policy %q; want %q, balanced", got, governed.Policy(), want)
	}
	if err := governed.SetPolicy("ui-first"); err != nil || governed.Policy() != "ui-first" {
		t.Errorf("SetPolicy(ui-first): %v, policy %q", err, governed.Policy())
	}
	// Switching while a generation runs does not wait for it.
	done := make(chan error)
	go func() {
		_, err := governed.Generate(context.Background(), "Once upon a time", shade.GenerateOptions{MaxTokens: 48}, nil)
		done <- err
	}()
	for _, p := range []string{"off", "balanced", "ui-first", "off"} {
		if err := governed.SetPolicy(p); err != nil {
			t.Error(err)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	_, later := gen(&shade.Options{Threads: 2, Draft: storiesPath, Spec: "chain"})
	if err := later.SetPolicy("balanced"); err != nil || later.Policy() != "balanced" {
		t.Errorf("SetPolicy(balanced) after Open: %v, policy %q", err, later.Policy())
	}
	for _, o := range []shade.Options{
		{DRAMBudget: "lots"},
		{DRAMBudget: "150%"},
		{Policy: "turbo"},
		{Policy: "balanced"}, // no draft
		{Draft: storiesPath, Spec: "off", Policy: "balanced"}, // nothing drafts
	} {
		if m, err := shade.Open(storiesPath, &o); err == nil {
			m.Close()
			t.Errorf("%+v accepted", o)
		}
	}
	if err := plain.SetPolicy("turbo"); err == nil {
		t.Error("an unknown policy accepted")
	}
}
