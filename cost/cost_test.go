package cost

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"shade/model"
	"shade/quant"
)

func toy() *Model {
	return &Model{
		Batches:     []int{1, 2, 4},
		DraftPass:   []float64{1, 1.5, 2.5},
		TargetLayer: []float64{0.1, 0.1, 0.2},
		TargetHead:  []float64{0.05, 0.06, 0.08},
		Layers:      10,
		LayerBytes:  100,
		DiskBps:     200, // 0.5 s per streamed layer
		Direct:      true,
	}
}

func TestInterpolation(t *testing.T) {
	m := toy()
	cases := []struct {
		name string
		got  float64
		want float64
	}{
		{"draft at a measured size", m.Draft(2), 1.5},
		{"draft between sizes", m.Draft(3), 2},
		{"draft beyond the largest", m.Draft(6), 3.5},
		{"draft of nothing", m.Draft(0), 0},
		{"layer below the smallest", m.Layer(1), 0.1},
		{"head between", m.Head(3), 0.07},
		{"verify resident", m.VerifyRows(4), 2},
	}
	for _, c := range cases {
		if math.Abs(c.got-c.want) > 1e-12 {
			t.Errorf("%s: %v, want %v", c.name, c.got, c.want)
		}
	}
	// Streamed layers cost their read time whatever the rows, until compute
	// takes longer.
	m.StreamedLayers = 4
	if got, want := m.VerifyRows(1), 6*0.1+4*0.5; math.Abs(got-want) > 1e-12 {
		t.Errorf("verify with 4 streamed layers: %v, want %v", got, want)
	}
	if m.VerifyRows(4)-m.VerifyRows(1) > 6*0.1+1e-12 {
		t.Error("streamed layers' read was charged per row")
	}
	// Pruning after layer 5: the remaining layers run only the kept rows.
	m.StreamedLayers = 0
	if got, want := m.Verify(4, 1, 5), 5*0.2+5*0.1; math.Abs(got-want) > 1e-12 {
		t.Errorf("verify pruned at 5: %v, want %v", got, want)
	}
	m.StreamBps = 100
	if m.LayerIO() != 1 {
		t.Errorf("the streamer's rate is not used: %v", m.LayerIO())
	}
}

func TestValidate(t *testing.T) {
	bad := []func(m *Model){
		func(m *Model) { m.Batches = nil },
		func(m *Model) { m.Batches = []int{1, 1, 2} },
		func(m *Model) { m.DraftPass = m.DraftPass[:2] },
		func(m *Model) { m.TargetLayer[1] = math.NaN() },
		func(m *Model) { m.TargetHead[0] = -1 },
		func(m *Model) { m.Layers = 0 },
		func(m *Model) { m.DiskBps = math.Inf(1) },
		func(m *Model) { m.DraftLayers = [][]float64{{1e-3}} },            // one timing for three sizes
		func(m *Model) { m.DraftLayers = [][]float64{{1e-3, 0, 2e-3}} },   // a layer that took no time
		func(m *Model) { m.DraftLayers = [][]float64{{1e-3, 2e-3, 1e9}} }, // implausible
	}
	if err := toy().Validate(); err != nil {
		t.Fatal(err)
	}
	for i, f := range bad {
		m := toy()
		f(m)
		if m.Validate() == nil {
			t.Errorf("case %d: invalid model accepted", i)
		}
	}
}

func TestMeasure(t *testing.T) {
	path := filepath.Join("..", "..", "shared", "testdata", "conformance", "stories260K.gguf")
	if _, err := os.Stat(path); err != nil {
		t.Skip("conformance pack missing")
	}
	target, err := model.Open(path, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	o := Quick()
	o.Batches = []int{1, 4, 16}
	m, err := Measure(target, target, path, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.TargetLayer) != 3 || m.Draft(1) <= 0 || m.Layer(16) <= 0 || m.Head(4) <= 0 || m.Layers != target.Config.Layers {
		t.Errorf("implausible measurement: %+v", m)
	}
	// The draft's pass is its profiled layers plus its head.
	if len(m.DraftLayers) != target.Config.Layers || m.Threads != 2 {
		t.Fatalf("draft layers %v, threads %d", m.DraftLayers, m.Threads)
	}
	for i := range m.Batches {
		var sum float64
		for _, l := range m.DraftLayers {
			sum += l[i]
		}
		if !(sum > 0 && sum < m.DraftPass[i]) {
			t.Errorf("batch %d: layers %v s, pass %v s", m.Batches[i], sum, m.DraftPass[i])
		}
	}
	// stories260K is smaller than one of the streamer's reads: its rate
	// stays unknown rather than being made up.
	if m.DiskBps != 0 {
		t.Errorf("storage rate %v from a file smaller than one read", m.DiskBps)
	}
	if _, err := Measure(target, nil, "", Options{Batches: []int{0, 2}}); err == nil {
		t.Error("batch size 0 accepted")
	}
}

func TestFitComputeScale(t *testing.T) {
	m := toy()
	m.StreamedLayers = 2
	for _, want := range []float64{0.5, 1, 3} {
		c := *m
		c.ComputeScale = want
		took := c.Verify(4, 2, 5)
		got, ok := m.FitComputeScale(4, 2, 5, took)
		if !ok || math.Abs(got-want) > 1e-6 {
			t.Errorf("scale %v: fitted %v (%v)", want, got, ok)
		}
	}
	if _, ok := m.FitComputeScale(1, 1, 10, 1e-9); ok {
		t.Error("a pass faster than its reads was explained")
	}
}

func TestOverlap(t *testing.T) {
	// toy: 0.5 s per streamed layer read, 0.1 s per layer of compute at
	// 1–2 rows and 0.2 s at 4: a pre-read layer saves 0.4 s (0.3 s at 4
	// rows) of the pass, and takes 0.5 s of drafting to read.
	cases := []struct {
		name          string
		streamed, pre int
		draft         float64
		rows          int
		want          float64
	}{
		{"nothing streamed", 0, 3, 2, 1, 0},
		{"no buffers", 5, 0, 2, 1, 0},
		{"no drafting", 5, 3, 0, 1, 0},
		{"half a layer", 5, 3, 0.25, 1, 0.2},
		{"two layers", 5, 3, 1, 2, 0.8},
		{"capped by the buffers", 5, 3, 10, 1, 1.2},
		{"capped by the streamed layers", 2, 3, 10, 1, 0.8},
		{"more rows compute longer", 5, 3, 1, 4, 0.6},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := toy()
			m.StreamedLayers, m.PrereadLayers = c.streamed, c.pre
			got := m.Overlap(c.draft, c.rows)
			if math.Abs(got-c.want) > 1e-9 {
				t.Fatalf("Overlap(%v, %d) = %v, want %v", c.draft, c.rows, got, c.want)
			}
			if v := m.VerifyRows(c.rows); got > v {
				t.Fatalf("overlap %v exceeds the whole verify pass %v", got, v)
			}
		})
	}
	// Compute longer than the reads: a pre-read layer saves nothing.
	m := toy()
	m.StreamedLayers, m.PrereadLayers, m.DiskBps = 5, 3, 2000
	if got := m.Overlap(1, 1); got != 0 {
		t.Fatalf("compute-bound: Overlap = %v, want 0", got)
	}
}

func TestTileInterpolation(t *testing.T) {
	if quant.TileRows != 16 {
		t.Skipf("cases written for 16-row tiles, kernels take %d", quant.TileRows)
	}
	// Measured at 1, 4, 16 and 64 rows; a full kernel tile is 16 rows.
	m := &Model{Batches: []int{1, 4, 16, 64}, TargetLayer: []float64{1, 2, 5, 20}, DraftPass: []float64{1, 1, 1, 1}, TargetHead: []float64{1, 1, 1, 1}, Layers: 1}
	cases := []struct {
		rows int
		want float64
	}{
		{8, 2 + 3*4.0/12}, // between measured sizes below a tile: linear
		{16, 5},           // one full tile
		{17, 5 + 1},       // a full tile and a tile of one row
		{20, 5 + 2},       // a full tile and a tile of four
		{32, 10},          // two full tiles
		{40, 10 + 3},      // two full tiles and a tile of eight
	}
	for _, c := range cases {
		if got := m.Layer(c.rows); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("Layer(%d) = %v, want %v", c.rows, got, c.want)
		}
	}
	// Without a measurement at a full tile, sizes beyond it follow the
	// measured points.
	m.Batches, m.TargetLayer = []int{1, 4, 64}, []float64{1, 2, 20}
	if got, want := m.Layer(34), 2+18*30.0/60; math.Abs(got-want) > 1e-12 {
		t.Errorf("no tile measured: Layer(34) = %v, want %v", got, want)
	}
}
