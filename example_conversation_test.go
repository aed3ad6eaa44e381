package shade_test

import (
	"context"
	"fmt"
	"log"

	"shade"
)

func ExampleConversation() {
	m, err := shade.Open(storiesPath, &shade.Options{Threads: 2})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	// A conversation keeps its messages and the model's KV: each turn
	// prefills only what it adds, not the whole history again.
	c := m.NewConversation(shade.Message{Role: "system", Content: "You tell stories."})
	for _, msg := range []string{"Tell me about a cat.", "What did the cat eat?"} {
		res, err := c.Send(context.Background(), msg, shade.GenerateOptions{MaxTokens: 12}, nil)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%d prompt tokens, %d of them kept from the last turn\n", res.PromptTokens, res.CachedTokens)
	}
	fmt.Println(len(c.Messages()), "messages")
	// Output:
	// 58 prompt tokens, 0 of them kept from the last turn
	// 101 prompt tokens, 58 of them kept from the last turn
	// 5 messages
}
