package cost

import (
	"encoding/json"
	"testing"
)

// FuzzModel: a stored cost model is a file anyone can edit; whatever it
// holds, decoding and validating it never panics, and a model that
// validates answers every query with a finite, non-negative time.
func FuzzModel(f *testing.F) {
	good, _ := json.Marshal(toy())
	f.Add(good)
	f.Add([]byte(`{"batches":[1,2],"draft_pass":[1,2],"target_layer":[0.1,0.2],"target_head":[0,0],"layers":3}`))
	f.Add([]byte(`{"batches":[4],"draft_pass":[1],"target_layer":[1],"target_head":[1],"layers":1,"layer_bytes":5,"disk_bps":1e9}`))
	f.Add([]byte(`{"batches":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var m Model
		if json.Unmarshal(data, &m) != nil || m.Validate() != nil {
			return
		}
		m.StreamedLayers = m.Layers / 2
		for _, b := range []int{-1, 0, 1, 3, 64, 1000} {
			for _, v := range []float64{m.Draft(b), m.Layer(b), m.Head(b), m.VerifyRows(b), m.Verify(b, 1, m.Layers/3)} {
				if !(v >= 0) || v > 1e12 {
					t.Fatalf("batch %d: time %v from %s", b, v, data)
				}
			}
		}
		_ = m.Summary()
	})
}
