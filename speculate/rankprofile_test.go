package speculate

import (
	"math"
	"testing"
)

func TestRankProfileRoundTrip(t *testing.T) {
	var st RankStats
	st.drafted[0], st.accepted[0] = 10, 8
	st.drafted[1], st.accepted[1] = 6, 1
	st.probDrafted[0][9], st.probAccepted[0][9] = 5, 5
	st.depthPred[3], st.depthAcc[3] = 2, 3
	st.top, st.topN = 0.4, 7
	p := st.Profile()
	if p.Nodes() != 16 {
		t.Fatalf("Nodes() = %v, want 16", p.Nodes())
	}
	if first, others := p.Acceptance(); first != 0.8 || math.Abs(others-1.0/6) > 1e-12 {
		t.Fatalf("Acceptance() = %v, %v, want 0.8, 1/6", first, others)
	}
	if first, others := (RankProfile{}).Acceptance(); first != 0 || others != 0 {
		t.Fatalf("empty profile: Acceptance() = %v, %v", first, others)
	}
	var fresh RankStats
	if err := fresh.SetProfile(p); err != nil {
		t.Fatal(err)
	}
	if fresh.Profile() != p {
		t.Fatalf("round trip changed the profile:\n%+v\n%+v", fresh.Profile(), p)
	}
	// What the profile says is what estimates start from.
	if a, b := fresh.accept(0.95, 0), new(RankStats).accept(0.95, 0); a == b {
		t.Errorf("a profile did not change the first-rank estimate (%v)", a)
	}
	if f := fresh.depthFactor(3); f != (3.0+2)/(2+2) {
		t.Errorf("depth factor %v after the profile", f)
	}
}

func TestRankProfileValidate(t *testing.T) {
	bad := map[string]func(p *RankProfile){
		"NaN count":               func(p *RankProfile) { p.Drafted[2] = math.NaN() },
		"negative count":          func(p *RankProfile) { p.Accepted[0] = -1 },
		"more accepted":           func(p *RankProfile) { p.Drafted[1], p.Accepted[1] = 2, 3 },
		"more accepted in a bin":  func(p *RankProfile) { p.ProbAccepted[1][4] = 1 },
		"infinite depth estimate": func(p *RankProfile) { p.DepthPred[5] = math.Inf(1) },
		"probability above 1":     func(p *RankProfile) { p.Top = 1.5 },
		"negative top count":      func(p *RankProfile) { p.TopN = -2 },
	}
	good := RankProfile{}
	good.Drafted[0], good.Accepted[0] = 3, 2
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, f := range bad {
		p := good
		f(&p)
		var st RankStats
		if err := st.SetProfile(p); err == nil {
			t.Errorf("%s: accepted", name)
		}
		if st.Profile() != (RankProfile{}) {
			t.Errorf("%s: a refused profile changed the stats", name)
		}
	}
}
