package speculate

// plain is the strategy of plain decoding (ModeOff), and what the others
// build on: nothing drafted, a whole target pass, one head pass over the
// draft's first-child chain (or row by row, RowByRowHead), nothing learned.
type plain struct{}

func (plain) Init(*Step) error               { return nil }
func (plain) Draft(*Step) (DraftKind, error) { return DraftNone, nil }
func (plain) Verify(s *Step) error           { return s.Forward(s.Batch) }
func (plain) Observe(*Step)                  {}

// Head is the draft's first-child chain, in one pass: one pass over the LM
// head's weights for all of them costs about what one row does when
// decoding is memory-bound; rows off that path are computed on demand, so
// the LM head still never runs on rows nobody asked for.
func (plain) Head(s *Step) []int {
	if s.Config.RowByRowHead {
		return nil
	}
	return s.MainPathRows(nil)
}

// modelDraft drafts a fixed shape with the draft model (ModeChain, ModeTree).
type modelDraft struct {
	plain
	shape Shape
}

func (m *modelDraft) Draft(s *Step) (DraftKind, error) {
	sh := m.shape
	sh.Max = min(sh.Max, s.Room)
	return DraftModel, s.Drafter.Draft(s.Context, sh, s.Tree)
}

// ngramDraft proposes what followed the same n-gram earlier (ModeNgram).
type ngramDraft struct {
	plain
	ngram *Ngram
}

func (g *ngramDraft) Draft(s *Step) (DraftKind, error) {
	if s.proposeNgram(g.ngram, min(s.Config.DraftMax, s.Room)) > 0 {
		return DraftNgram, nil
	}
	return DraftNone, nil
}
