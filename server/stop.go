package server

import "strings"

// stopper finds stop sequences in streamed text. Text that could be the
// start of a stop sequence is held back until it is known not to be.
type stopper struct {
	stops   []string
	pending string
}

// add takes the next piece of text and returns what may be sent now, and
// whether a stop sequence was found (the text before it is returned; the
// sequence and everything after are dropped).
func (s *stopper) add(text string) (out string, stopped bool) {
	if len(s.stops) == 0 {
		return text, false
	}
	s.pending += text
	cut := -1
	for _, st := range s.stops {
		if i := strings.Index(s.pending, st); i >= 0 && (cut < 0 || i < cut) {
			cut = i
		}
	}
	if cut >= 0 {
		out, s.pending = s.pending[:cut], ""
		return out, true
	}
	// Hold back the longest suffix that is a prefix of some stop sequence.
	hold := 0
	for _, st := range s.stops {
		for n := min(len(st)-1, len(s.pending)); n > hold; n-- {
			if strings.HasSuffix(s.pending, st[:n]) {
				hold = n
				break
			}
		}
	}
	out = s.pending[:len(s.pending)-hold]
	s.pending = s.pending[len(s.pending)-hold:]
	return out, false
}

// flush returns the text held back at the end of generation.
func (s *stopper) flush() string {
	out := s.pending
	s.pending = ""
	return out
}
