package elastic

import (
	"encoding/json"
	"testing"

	"shade/cost"
)

// FuzzParseCalibration: a calibration file's value either parses into
// something usable (gains a governor runs with) or is refused with an
// error; never a panic. Files written before the baselines moved to the
// device profile still carry a "baselines" object, which is ignored.
func FuzzParseCalibration(f *testing.F) {
	f.Add([]byte(`{"baselines":{"rows":[1,2,4],"ns":[[1e6,1.5e6,2e6],[1e6,1.4e6,2.1e6]]},"gains":{"kp":2,"ki":8},"gains_from":"default"}`))
	f.Add([]byte(`{"gains":{"kp":0,"ki":0}}`))
	f.Add([]byte(`{"gains":{"kp":-1,"ki":1}}`))
	f.Add([]byte(`null`))
	base := &Baselines{Rows: []int{1, 4}, NS: [][]float64{{1e6, 2e6}}}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseCalibration(data)
		if err != nil {
			return
		}
		g := New(Config{Policy: Balanced, Baselines: base, Gains: c.Gains})
		g.DraftLayer(0, 1, 1000)
	})
}

// FuzzBaselinesFrom: a device profile read from a file either gives
// baselines whose lookups are finite and positive, or an error.
func FuzzBaselinesFrom(f *testing.F) {
	f.Add([]byte(`{"batches":[1,4],"draft_pass":[0.01,0.02],"target_layer":[0.1,0.2],"target_head":[0.01,0.02],"draft_layers":[[0.001,0.002],[0.001,0.003]],"layers":2,"layer_bytes":100}`))
	f.Add([]byte(`{"batches":[1],"draft_pass":[0],"target_layer":[0],"target_head":[0],"draft_layers":[[0]],"layers":1}`))
	f.Add([]byte(`{"batches":[1,2],"draft_layers":[[1e300,1]]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var p cost.Model
		if json.Unmarshal(data, &p) != nil || p.Validate() != nil {
			return
		}
		b, err := BaselinesFrom(&p)
		if err != nil {
			return
		}
		for l := range b.NS {
			for _, r := range []int{1, 3, 100} {
				if v, ok := b.Lookup(l, r); !ok || !(v > 0) {
					t.Fatalf("valid profile, Lookup(%d, %d) = %v, %v", l, r, v, ok)
				}
			}
		}
	})
}
