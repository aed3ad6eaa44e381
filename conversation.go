package shade

import (
	"context"
	"slices"
	"strings"
	"sync"

	"shade/engine"
)

// Conversation is a chat an app holds across turns: its messages and the
// model's KV state after the last reply, so that each turn prefills only
// what it adds to the conversation (the new message, and the reply where
// the chat template renders it differently from the tokens generated)
// instead of the whole history. Greedy replies are the same as Model.Chat's
// over the same messages. Its methods may be called from several
// goroutines; turns run one at a time.
type Conversation struct {
	m    *Model
	mu   sync.Mutex
	msgs []Message
	kept *engine.Prefix
}

// NewConversation starts a conversation with msgs so far (a system
// message, say; nil for none).
func (m *Model) NewConversation(msgs ...Message) *Conversation {
	return &Conversation{m: m, msgs: slices.Clone(msgs)}
}

// Send adds a user message, generates the assistant's reply (streamed to
// onText, if not nil, as Model.Chat does) and adds the reply to the
// conversation. A generation that fails leaves the conversation as it was;
// one stopped by ctx or onText keeps the reply so far.
func (c *Conversation) Send(ctx context.Context, user string, o GenerateOptions, onText func(string) error) (Result, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	msgs := append(slices.Clone(c.msgs), Message{Role: "user", Content: user})
	ids, err := c.m.tmpl.Encode(c.m.e.Tok, msgs, true)
	if err != nil {
		return Result{}, err
	}
	kept := c.kept
	c.kept = nil // the session owns it now
	r, p, err := c.m.runFrom(ctx, ids, o, onText, kept, true)
	c.kept = p
	if err != nil && r.StopReason != "canceled" {
		return r, err
	}
	c.msgs = append(msgs, Message{Role: "assistant", Content: strings.TrimSpace(r.Text)})
	return r, err
}

// Messages returns the conversation so far.
func (c *Conversation) Messages() []Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.msgs)
}

// Reset forgets the conversation but msgs (a system message, say) and
// frees its KV.
func (c *Conversation) Reset(msgs ...Message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.msgs, c.kept = slices.Clone(msgs), nil
}
