package shade_test

import (
	"context"
	"testing"

	"shade"
)

// A conversation's replies are Chat's over the same messages, greedy,
// plain and speculative, and its later turns start from the kept KV.
func TestConversationEqualsChat(t *testing.T) {
	for _, opt := range []*shade.Options{{Threads: 2}, {Threads: 2, Draft: storiesF16Path, Spec: "chain"}} {
		m, err := shade.Open(storiesPath, opt)
		if err != nil {
			t.Fatal(err)
		}
		sys := shade.Message{Role: "system", Content: "Be kind."}
		c := m.NewConversation(sys)
		o := shade.GenerateOptions{MaxTokens: 20}
		for i, user := range []string{"Tell me a story.", "Who was in it?", "What happened next?", "The end?"} {
			want, err := m.Chat(context.Background(), append(c.Messages(), shade.Message{Role: "user", Content: user}), o, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.Send(context.Background(), user, o, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got.Text != want.Text || got.PromptTokens != want.PromptTokens {
				t.Fatalf("%s turn %d: %q (%d prompt tokens), Chat %q (%d)", opt.Spec, i, got.Text, got.PromptTokens, want.Text, want.PromptTokens)
			}
			if i > 0 && (got.CachedTokens == 0 || got.CachedTokens >= got.PromptTokens) || i == 0 && got.CachedTokens != 0 || want.CachedTokens != 0 {
				t.Errorf("%s turn %d: %d of %d prompt tokens cached (Chat: %d)", opt.Spec, i, got.CachedTokens, got.PromptTokens, want.CachedTokens)
			}
		}
		if n := len(c.Messages()); n != 9 {
			t.Errorf("%d messages", n)
		}
		// A turn that cannot run leaves the conversation as it was.
		if _, err := c.Send(context.Background(), string(make([]byte, 1<<16)), o, nil); err == nil {
			t.Error("a message longer than the context was answered")
		}
		c.Reset(sys)
		if n := len(c.Messages()); n != 1 {
			t.Errorf("%d messages after Reset", n)
		}
		if r, err := c.Send(context.Background(), "Hi", o, nil); err != nil || r.CachedTokens != 0 {
			t.Errorf("after Reset: %v, %d cached", err, r.CachedTokens)
		}
		m.Close()
	}
}
