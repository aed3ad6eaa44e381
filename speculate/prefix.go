package speculate

import (
	"fmt"

	"shade/model"
	"shade/sample"
)

// StartCached is Start for a target whose cache already holds the KV of
// prompt[:cached] (a conversation's earlier turns, kept by the caller):
// only the rest of the prompt but its last token is prefilled. cached must
// leave the last prompt token out (it is the pending token, whose logits
// the first step computes) and must not exceed what the target holds. The
// drafter's cache, if any, is not reset: its next draft keeps the longest
// prefix it shares with the prompt and feeds the rest.
func (d *Decoder) StartCached(prompt []int32, cached int) error {
	if len(prompt) == 0 {
		return fmt.Errorf("speculate: empty prompt")
	}
	if cached < 0 || cached > len(prompt)-1 || cached > d.target.Len() {
		return fmt.Errorf("speculate: %d cached tokens for a prompt of %d with %d in the target's cache", cached, len(prompt), d.target.Len())
	}
	if err := d.target.Truncate(cached); err != nil {
		return err
	}
	body := prompt[cached : len(prompt)-1]
	for i := 0; i < len(body); i += d.Prefill {
		chunk := body[i:min(i+d.Prefill, len(body))]
		if err := d.forward(model.Chain(chunk)); err != nil {
			return err
		}
		if err := d.target.CommitAll(); err != nil {
			return err
		}
	}
	d.ctx = append(d.ctx[:0], prompt...)
	return nil
}

// Context is the accepted text so far, prompt included; its last token is
// the pending one, whose KV the target does not hold yet. It is valid until
// the next Step.
func (d *Decoder) Context() []int32 { return d.ctx }

// NewModelDrafterOn is NewModelDrafter on a state that already holds the
// KV of seen (a drafter's state given back by Detach): its next Draft keeps
// the longest prefix seen shares with the context and feeds the rest.
func NewModelDrafterOn(s *model.State, seen []int32, params sample.Params) (*ModelDrafter, error) {
	if len(seen) > s.Len() {
		return nil, fmt.Errorf("speculate: %d seen tokens but %d in the draft's cache", len(seen), s.Len())
	}
	if err := s.Truncate(len(seen)); err != nil {
		return nil, err
	}
	d, err := newModelDrafter(s, params)
	if err != nil {
		return nil, err
	}
	d.seen = append(d.seen, seen...)
	return d, nil
}

// Detach gives up the drafter's state and the tokens whose KV it holds
// (any pass in flight dropped), for a later NewModelDrafterOn; the drafter
// must not be used afterwards.
func (d *ModelDrafter) Detach() (*model.State, []int32) {
	s, seen := d.s, d.seen
	if len(seen) > s.Len() {
		seen = seen[:s.Len()]
	}
	if s.Truncate(len(seen)) != nil {
		return nil, nil
	}
	d.s, d.seen = nil, nil
	return s, seen
}
