package model

import (
	"math"
	"testing"
)

// TestRopeAngles checks the rotation angles against their definition:
// theta_i = pos · scale · base^(−2i/d) / factor_i.
func TestRopeAngles(t *testing.T) {
	cases := []struct {
		name    string
		scale   float32
		factors []float32
	}{
		{"plain", 1, nil},
		{"linear scaling", 0.25, nil},
		{"llama3 frequency factors", 1, []float32{1, 1, 2.5, 8}},
	}
	for _, tc := range cases {
		c := &Config{RopeDim: 8, RopeBase: 500000, RopeScale: tc.scale}
		s := &State{cfg: c, m: &Model{Weights: &Weights{RopeFreqs: tc.factors}}, n: 2, pos: []int32{0, 1000}}
		s.ropeTables()
		for i := 0; i < 4; i++ {
			theta := 1000 * float64(tc.scale) * math.Pow(500000, -2*float64(i)/8)
			if tc.factors != nil {
				theta /= float64(tc.factors[i])
			}
			got := math.Atan2(float64(s.ropeSin[4+i]), float64(s.ropeCos[4+i]))
			want := math.Atan2(math.Sin(theta), math.Cos(theta))
			if math.Abs(got-want) > 1e-3 {
				t.Errorf("%s: pair %d angle %.5f, want %.5f", tc.name, i, got, want)
			}
			if s.ropeCos[i] != 1 || s.ropeSin[i] != 0 {
				t.Errorf("%s: position 0 rotates pair %d", tc.name, i)
			}
		}
	}
}
