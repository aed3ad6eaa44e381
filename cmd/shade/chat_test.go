package main

import (
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

// shade chat over scripted input and fake interrupts.
func TestChatCommand(t *testing.T) {
	model := sharedFile(t, "conformance/stories260K.gguf")
	sigs := make(chan os.Signal, 1)
	chatInterrupts = func() (<-chan os.Signal, func()) { return sigs, func() {} }
	defer func() { chatInput, chatBeforeStep = os.Stdin, nil }()
	chatInput = strings.NewReader("Tell me a story\n\n/reset\nWho is Lily?\n/exit\nnot read\n")
	code, out, errOut := shade(t, "chat", "-m", model, "--temp", "0", "-n", "12", "--system", "Be kind.")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if strings.Count(out, "> ") != 5 || !strings.Contains(errOut, "template llama-2") || !strings.Contains(errOut, "forgotten") {
		t.Fatalf("stdout %q\nstderr %q", out, errOut)
	}
	replies := strings.Split(out, "> ")
	if len(strings.TrimSpace(replies[1])) == 0 || len(strings.TrimSpace(replies[4])) == 0 {
		t.Fatalf("empty replies in %q", out)
	}

	// Ctrl-C during a reply stops that reply only.
	chatBeforeStep = func() { time.Sleep(2 * time.Millisecond) }
	chatInput = &interruptingReader{lines: []string{"Tell me a long story\n", "/exit\n"}, sigs: sigs}
	code, out, errOut = shade(t, "chat", "-m", model, "--temp", "0", "-n", "400")
	if code != 0 || !strings.Contains(out, "[stopped]") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// interruptingReader hands out its lines; before the second it "presses
// Ctrl-C" (the first reply is then being generated).
type interruptingReader struct {
	lines []string
	sigs  chan os.Signal
	n     int
}

func (r *interruptingReader) Read(p []byte) (int, error) {
	if r.n >= len(r.lines) {
		return 0, io.EOF
	}
	if r.n == 1 {
		r.sigs <- os.Interrupt
		time.Sleep(50 * time.Millisecond) // let the reply notice it before /exit arrives
	}
	n := copy(p, r.lines[r.n])
	r.n++
	return n, nil
}
