package elastic

import "testing"

// FuzzParseCalibration: a calibration file's value either parses into
// something usable (valid baselines and gains whose lookups are finite) or
// is refused with an error; never a panic.
func FuzzParseCalibration(f *testing.F) {
	f.Add([]byte(`{"baselines":{"rows":[1,2,4],"ns":[[1e6,1.5e6,2e6],[1e6,1.4e6,2.1e6]]},"gains":{"kp":2,"ki":8},"gains_from":"default"}`))
	f.Add([]byte(`{"baselines":{"rows":[],"ns":[]},"gains":{"kp":0,"ki":0}}`))
	f.Add([]byte(`{"baselines":{"rows":[2,1],"ns":[[1,1]]},"gains":{"kp":-1,"ki":1}}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseCalibration(data)
		if err != nil {
			return
		}
		for l := range c.Baselines.NS {
			for _, r := range []int{1, 3, 100} {
				if v, ok := c.Baselines.Lookup(l, r); !ok || !(v > 0) {
					t.Fatalf("valid calibration, Lookup(%d, %d) = %v, %v", l, r, v, ok)
				}
			}
		}
		g := New(Config{Policy: Balanced, Baselines: &c.Baselines, Gains: c.Gains})
		g.DraftLayer(0, 1, 1000)
	})
}
