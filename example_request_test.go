package shade_test

import (
	"context"
	"fmt"
	"log"

	"shade"
)

// Stop sequences end the text inside the generation loop: the tokens
// counted are the ones of the text returned, also under speculation.
func ExampleGenerateOptions_stop() {
	m, err := shade.Open(storiesPath, &shade.Options{Spec: "ngram"})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	res, err := m.Generate(context.Background(), "Once upon a time", shade.GenerateOptions{MaxTokens: 64, Stop: []string{"."}}, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%q: %d tokens, stop: %s\n", res.Text, res.Tokens, res.StopReason)
	// Output: ", there was a little girl named Lily": 10 tokens, stop: stop
}

// Log-probabilities are the model's own, before the sampler's penalties
// and bias; here a bias bans the word greedy decoding would pick first.
func ExampleGenerateOptions_logprobs() {
	m, err := shade.Open(storiesPath, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	o := shade.GenerateOptions{MaxTokens: 3, Logprobs: true, TopLogprobs: 2}
	res, err := m.Generate(context.Background(), "Once upon a time", o, nil)
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range res.Logprobs {
		fmt.Printf("%q %.2f, then %q %.2f\n", t.Text, t.Logprob, t.Top[1].Text, t.Top[1].Logprob)
	}
	o.LogitBias = map[int32]float32{res.Logprobs[0].ID: -100}
	o.PresencePenalty = 0.5
	biased, err := m.Generate(context.Background(), "Once upon a time", o, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("banned %q: %q, its logprob %.2f as before\n", res.Logprobs[0].Text, biased.Text, biased.Logprobs[0].Top[0].Logprob)
	// Output:
	// "," -0.03, then " there" -3.55
	// " there" -0.07, then " in" -2.98
	// " was" -0.02, then " we" -4.84
	// banned ",": " there was a", its logprob -0.03 as before
}
