package server

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// The official openai npm client talks to the server, streaming and not
// (every server/testdata/openai-node/*.mjs, one subtest each: one script per
// feature). .ci/run installs the client with
// npm; without it the test skips.
func TestOpenAINodeClient(t *testing.T) {
	dir := filepath.Join("testdata", "openai-node")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "openai")); err != nil {
		t.Skip("the openai npm package is not installed: run (cd server/testdata/openai-node && npm ci), as .ci/run does")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	s := New(stories(t), Options{APIKey: "test-key"})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error)
	go func() { served <- s.Serve(ctx, ln) }()
	defer func() { cancel(); <-served }()

	files, err := filepath.Glob(filepath.Join(dir, "*.mjs"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no client scripts in %s: %v", dir, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			cmdCtx, stop := context.WithTimeout(context.Background(), 2*time.Minute)
			defer stop()
			cmd := exec.CommandContext(cmdCtx, node, filepath.Base(f))
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "SHADE_URL=http://"+ln.Addr().String())
			out, err := cmd.CombinedOutput()
			t.Logf("node %s:\n%s", filepath.Base(f), out)
			if err != nil {
				t.Fatalf("the openai client failed: %v", err)
			}
		})
	}
	waitFor(t, "the aborted stream's job to leave", func() bool { return s.sched.jobs() == 0 })
}
