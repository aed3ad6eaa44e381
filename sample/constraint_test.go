package sample

import "testing"

// evenOnly allows even tokens until it has accepted n tokens, then odd ones.
type evenOnly struct {
	n, seen int
	mask    []uint64
}

func (e *evenOnly) Mask() []uint64 {
	pattern := uint64(0x5555555555555555)
	if e.seen >= e.n {
		pattern <<= 1
	}
	for i := range e.mask {
		e.mask[i] = pattern
	}
	return e.mask
}
func (e *evenOnly) Accept(int32) { e.seen++ }

func TestConstraintMasks(t *testing.T) {
	logits := make([]float32, 130)
	for i := range logits {
		logits[i] = float32(i % 7)
	}
	logits[13] = 100 // the best token, odd
	for _, p := range []Params{{Temp: 0}, {Temp: 0, RepeatPenalty: 1.5}, Defaults(), {Temp: 1.3, Seed: 9}} {
		s, err := New(p)
		if err != nil {
			t.Fatal(err)
		}
		s.Accept(3) // a prompt token, before the constraint
		c := &evenOnly{n: 2, mask: make([]uint64, 3)}
		s.SetConstraint(c)
		for step := 0; step < 4; step++ {
			tok := s.Sample(logits)
			wantOdd := step >= 2
			if (tok%2 == 1) != wantOdd {
				t.Fatalf("%+v step %d: token %d, want odd=%v", p, step, tok, wantOdd)
			}
			for _, cd := range s.Distribution(logits) {
				if (cd.ID%2 == 1) != wantOdd {
					t.Fatalf("%+v step %d: distribution has token %d", p, step, cd.ID)
				}
			}
			s.Accept(tok)
		}
		if c.seen != 4 {
			t.Fatalf("constraint saw %d tokens, want 4 (not the prompt's)", c.seen)
		}
	}
}
