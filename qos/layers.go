package qos

import (
	"slices"
	"time"
)

// LayerTiming is one layer's duration as the decoder reported it at a
// yield point.
type LayerTiming struct {
	T     int64         // CLOCK_MONOTONIC ns when it was reported
	Draft bool          // a draft-model layer (else a target layer)
	Layer int           //
	Rows  int           // rows of the pass
	Took  time.Duration //
}

// minBaselineCount is how many timings of one (kind, layer, rows) a
// baseline needs.
const minBaselineCount = 8

// LayerScores turns layer timings into contention scores
// CS = (took − base) / base, where base is the 10th percentile of the
// timings of the same layer of the same model at the same rows within the
// run: the layer's time when the foreground was between bursts. (A
// calibrated quiet-machine baseline, as the elastic sensor keeps, is the
// better reference; this one needs nothing beforehand and serves
// correlation, not control.) Layers with too few timings give no samples.
func LayerScores(ts []LayerTiming) []Sample {
	type key struct {
		draft       bool
		layer, rows int
	}
	groups := map[key][]float64{}
	for _, t := range ts {
		k := key{t.Draft, t.Layer, t.Rows}
		groups[k] = append(groups[k], float64(t.Took))
	}
	base := map[key]float64{}
	for k, v := range groups {
		if len(v) < minBaselineCount {
			continue
		}
		slices.Sort(v)
		if b := Percentile(v, 10); b > 0 {
			base[k] = b
		}
	}
	var out []Sample
	for _, t := range ts {
		if b, ok := base[key{t.Draft, t.Layer, t.Rows}]; ok {
			out = append(out, Sample{T: t.T, Value: (float64(t.Took) - b) / b})
		}
	}
	return out
}
