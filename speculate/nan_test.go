package speculate

import (
	"math"
	"testing"
)

// TestRankStatsNaN: a NaN or out-of-range probability never indexes the
// statistics' bins, and none is kept to poison later estimates.
func TestRankStatsNaN(t *testing.T) {
	var st RankStats
	before := st.topProb()
	for _, q := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), -3, 7} {
		if a := st.accept(q, 0); !(a >= 0 && a <= 1) {
			t.Errorf("accept(%v) = %v", q, a)
		}
		if b := probBin(q); b < 0 || b >= probBins {
			t.Errorf("probBin(%v) = %d", q, b)
		}
		st.noteTop(q)
	}
	if got := st.topProb(); got != before {
		t.Errorf("topProb %v after noting bad probabilities, was %v", got, before)
	}
}

func TestFinite(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for _, tc := range []struct {
		x    []float32
		want bool
	}{
		{nil, true}, {[]float32{0, -1, 3e38}, true}, {[]float32{1, nan}, false},
		{[]float32{inf, 1}, false}, {[]float32{1, -inf}, false},
	} {
		if got := finite(tc.x); got != tc.want {
			t.Errorf("finite(%v) = %v", tc.x, got)
		}
	}
}
