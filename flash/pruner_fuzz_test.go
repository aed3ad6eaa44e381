package flash

import (
	"encoding/json"
	"testing"
)

// FuzzPruner: a stored predictor is a file anyone can edit; decoding and
// validating it never panics, and one that validates scores any features
// within [0, 1].
func FuzzPruner(f *testing.F) {
	good, _ := json.Marshal(aggressivePruner(3))
	f.Add(good, 5)
	f.Add([]byte(`{"layer":1,"mean":[0,0,0,0,0,0],"std":[1,1,1,1,1,1],"weights":[1,1,1,1,1,1],"version":1,"min_keep":1}`), 2)
	f.Add([]byte(`{"layer":9,"weights":[1]}`), 4)
	f.Fuzz(func(t *testing.T, data []byte, layers int) {
		var p Pruner
		if json.Unmarshal(data, &p) != nil || p.Validate(layers) != nil {
			return
		}
		for _, x := range []float64{-1e300, -1, 0, 0.5, 1, 1e300} {
			var feat [PruneFeatures]float64
			for i := range feat {
				feat[i] = x
			}
			if s := p.Score(feat[:]); !(s >= 0 && s <= 1) {
				t.Fatalf("score %v outside [0, 1]", s)
			}
		}
	})
}
