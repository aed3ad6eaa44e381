package main

import (
	"context"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"shade/chat"
	"shade/engine"
	"shade/sample"
)

// shade chat keeps the conversation's KV from turn to turn: later turns
// prefill only what they add, and the replies are those of fresh sessions.
func TestChatKeepsTheConversation(t *testing.T) {
	model := sharedFile(t, "conformance/stories260K.gguf")
	sigs := make(chan os.Signal, 1)
	chatInterrupts = func() (<-chan os.Signal, func()) { return sigs, func() {} }
	defer func() { chatInput = os.Stdin }()
	turns := []string{"Tell me a story", "What did the cat do?", "And the dog?"}
	chatInput = strings.NewReader(strings.Join(turns, "\n") + "\n/exit\n")
	code, out, errOut := shade(t, "chat", "-m", model, "--temp", "0", "-n", "16", "--system", "Be kind.", "--stats")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	stats := regexp.MustCompile(`\(prompt (\d+) tokens, (\d+) from the kept conversation`).FindAllStringSubmatch(errOut, -1)
	if len(stats) != len(turns) {
		t.Fatalf("%d stats lines in %q", len(stats), errOut)
	}
	prev := 0
	for i, m := range stats {
		prompt, _ := strconv.Atoi(m[1])
		cached, _ := strconv.Atoi(m[2])
		if i == 0 && cached != 0 || i > 0 && (cached < prev || cached >= prompt) {
			t.Errorf("turn %d: %d of %d prompt tokens from the kept KV (the last prompt was %d)", i, cached, prompt, prev)
		}
		prev = prompt
	}

	// The same conversation with fresh sessions.
	e, err := engine.Load(model, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	tmpl, _ := chat.FromGGUF(&e.Model.File.Meta, e.Tok)
	history := []chat.Message{{Role: "system", Content: "Be kind."}}
	replies := strings.Split(out, "> ")[1:]
	for i, turn := range turns {
		history = append(history, chat.Message{Role: "user", Content: turn})
		ids, err := tmpl.Encode(e.Tok, history, true)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		s, err := e.NewSession(engine.Request{MaxTokens: 16, Sampling: sample.Params{Temp: 0, RepeatPenalty: 1, RepeatLastN: 64}}, ids)
		if err != nil {
			t.Fatal(err)
		}
		for !s.Done() {
			if _, err := s.Step(context.Background(), func(x string) error { b.WriteString(x); return nil }); err != nil {
				t.Fatal(err)
			}
		}
		if got := strings.TrimSpace(replies[i]); got != strings.TrimSpace(b.String()) {
			t.Fatalf("turn %d: chat replied %q, a fresh session %q", i, got, b.String())
		}
		history = append(history, chat.Message{Role: "assistant", Content: strings.TrimSpace(b.String())})
	}
}
