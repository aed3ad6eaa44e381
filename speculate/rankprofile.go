package speculate

import (
	"fmt"
	"math"
)

// RankProfile is what a RankStats has learned of a draft and target pair:
// acceptance by sibling rank, by the draft's confidence and by depth. It is
// stored beside the target (shade calibrate --pruner) so that gain-cost
// trees start from the pair's observed agreement instead of the draft's
// raw probabilities: a small draft over a large vocabulary is unsure yet
// right, and a cold start under-grows trees until it has learned that.
type RankProfile struct {
	// Draft identifies the draft model the profile was learned with
	// (calib.Key's Model string); a profile of another draft is not used.
	Draft        string                 `json:"draft"`
	Drafted      [maxRanks]float64      `json:"drafted"`
	Accepted     [maxRanks]float64      `json:"accepted"`
	ProbDrafted  [2][probBins]float64   `json:"prob_drafted"`
	ProbAccepted [2][probBins]float64   `json:"prob_accepted"`
	Top          float64                `json:"top"`
	TopN         int                    `json:"top_n"`
	DepthPred    [maxDepthStats]float64 `json:"depth_pred"`
	DepthAcc     [maxDepthStats]float64 `json:"depth_acc"`
}

// Profile returns a copy of what st has learned.
func (st *RankStats) Profile() RankProfile {
	st.mu.Lock()
	defer st.mu.Unlock()
	return RankProfile{Drafted: st.drafted, Accepted: st.accepted, ProbDrafted: st.probDrafted, ProbAccepted: st.probAccepted,
		Top: st.top, TopN: st.topN, DepthPred: st.depthPred, DepthAcc: st.depthAcc}
}

// Nodes is about how many verified tree nodes the profile rests on
// (decayed: recent ones count most).
func (p RankProfile) Nodes() float64 {
	var n float64
	for _, x := range p.Drafted {
		n += x
	}
	return n
}

// Acceptance is the share of the draft's first-ranked proposals the target
// accepted, and the share of its other proposals (each 0 where none were
// drafted).
func (p RankProfile) Acceptance() (first, others float64) {
	if p.Drafted[0] > 0 {
		first = p.Accepted[0] / p.Drafted[0]
	}
	var drafted, accepted float64
	for i := 1; i < len(p.Drafted); i++ {
		drafted += p.Drafted[i]
		accepted += p.Accepted[i]
	}
	if drafted > 0 {
		others = accepted / drafted
	}
	return first, others
}

// Validate checks that a profile (read from a file, say) is usable: every
// count finite, non-negative, and no more accepted than drafted.
func (p *RankProfile) Validate() error {
	ok := func(x float64) bool { return x >= 0 && !math.IsInf(x, 0) && !math.IsNaN(x) }
	for i := range p.Drafted {
		if !ok(p.Drafted[i]) || !ok(p.Accepted[i]) || p.Accepted[i] > p.Drafted[i]*(1+1e-9)+1e-9 {
			return fmt.Errorf("speculate: acceptance profile: rank %d: %v of %v accepted", i, p.Accepted[i], p.Drafted[i])
		}
	}
	for r := range p.ProbDrafted {
		for i := range p.ProbDrafted[r] {
			if !ok(p.ProbDrafted[r][i]) || !ok(p.ProbAccepted[r][i]) || p.ProbAccepted[r][i] > p.ProbDrafted[r][i]*(1+1e-9)+1e-9 {
				return fmt.Errorf("speculate: acceptance profile: confidence bin %d: %v of %v accepted", i, p.ProbAccepted[r][i], p.ProbDrafted[r][i])
			}
		}
	}
	for i := range p.DepthPred {
		if !ok(p.DepthPred[i]) || !ok(p.DepthAcc[i]) {
			return fmt.Errorf("speculate: acceptance profile: depth %d: %v accepted against %v estimated", i, p.DepthAcc[i], p.DepthPred[i])
		}
	}
	if !ok(p.Top) || p.Top > 1 || p.TopN < 0 {
		return fmt.Errorf("speculate: acceptance profile: top probability %v over %d drafts", p.Top, p.TopN)
	}
	return nil
}

// SetProfile makes st start from a profile learned before (which must
// Validate): what it learns from here on is added to it, with the same
// decay.
func (st *RankStats) SetProfile(p RankProfile) error {
	if err := p.Validate(); err != nil {
		return err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	st.drafted, st.accepted = p.Drafted, p.Accepted
	st.probDrafted, st.probAccepted = p.ProbDrafted, p.ProbAccepted
	st.top, st.topN = p.Top, p.TopN
	st.depthPred, st.depthAcc = p.DepthPred, p.DepthAcc
	return nil
}
