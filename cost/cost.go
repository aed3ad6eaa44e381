// Package cost owns shade's device profile, the per-device cost model of a
// speculative step: how long each draft layer and a draft pass take for a
// batch of b rows, how long one target layer takes to compute over b rows,
// how long the target's LM head takes per row, and how long reading one
// streamed target layer from storage takes. Layer times are compute only,
// scaled by the process's CPU share (CPUShare), the same quantity elastic
// speculation's sensor reads, which takes the draft layers as baselines.
// It measures them (Measure, reading storage the way package weights'
// streamer does) and answers what a step of a given shape will cost (Draft,
// Verify, Head); its Estimator corrects that table online by what steps
// actually take. The gain-cost tree builder in package spec spends its rows
// by them; flash mode and auto mode teach them. It does not stream weights
// itself or decide what is resident: the engine tells it how many layers
// are streamed.
package cost

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"shade/quant"
)

// Model is a measured cost model. Times are in seconds.
type Model struct {
	Batches     []int     `json:"batches"`      // batch sizes measured, ascending
	DraftPass   []float64 `json:"draft_pass"`   // (len(Batches)) one draft pass: every layer and the head, per batch size
	TargetLayer []float64 `json:"target_layer"` // (len(Batches)) one target layer's compute, per batch size
	TargetHead  []float64 `json:"target_head"`  // (len(Batches)) the target's final norm and LM head, per rows
	// DraftLayers[l][i] is the draft's layer l at Batches[i]: its compute,
	// scaled by the process's CPU share (LayerProfile). Elastic
	// speculation's sensor scores every draft layer against it. Empty
	// without a draft.
	DraftLayers [][]float64 `json:"draft_layers,omitempty"`
	// DraftModel identifies the draft file measured (calib.Key's Model:
	// size and hash), so that a profile is not used for another draft.
	DraftModel string `json:"draft_model,omitempty"`
	// Threads is the worker threads the timings ran on: a profile
	// measured on one thread does not price (or baseline) a run on two.
	Threads    int     `json:"threads,omitempty"`
	Layers     int     `json:"layers"`      // target layers
	LayerBytes int64   `json:"layer_bytes"` // mean bytes of one target layer's matrices
	DiskBps    float64 `json:"disk_bps"`    // O_DIRECT read bandwidth of the model file, bytes/s (0: unknown)
	Direct     bool    `json:"direct"`      // whether DiskBps was read with O_DIRECT
	// StreamedLayers is how many target layers each target pass reads from
	// storage. It depends on the DRAM budget of the run, not on the device,
	// so it is set by the caller and not stored.
	StreamedLayers int `json:"-"`
	// Streamed, if set (one per layer), says which layers stream; else
	// they are the last StreamedLayers.
	Streamed []bool `json:"-"`
	// StreamBps, when set, replaces DiskBps: the streamer's own measured
	// read rate during this run.
	StreamBps float64 `json:"-"`
	// PrereadLayers is how many of a pass's first streamed layers the
	// streamer can read before the pass asks for them: its layer
	// buffers, which it fills with the next pass's first layers as soon
	// as the previous pass is done with them. Drafting between two
	// passes hides that much reading (see Overlap). Set by the caller.
	PrereadLayers int `json:"-"`
	// ComputeScale and DraftScale, when set, scale the measured target
	// compute (layers and head) and draft passes: what a run learns of
	// how much slower (or faster) the machine is now than when measured,
	// a shared machine's load say. 0 means 1.
	ComputeScale float64 `json:"-"`
	DraftScale   float64 `json:"-"`

	Measured time.Time     `json:"measured"`
	Took     time.Duration `json:"took_ns"`
}

// Validate checks that a model (loaded from a file, say) is usable.
func (m *Model) Validate() error {
	n := len(m.Batches)
	if n == 0 {
		return errors.New("cost: no batch sizes measured")
	}
	if len(m.DraftPass) != n || len(m.TargetLayer) != n || len(m.TargetHead) != n {
		return fmt.Errorf("cost: %d batch sizes but %d draft, %d layer and %d head timings", n, len(m.DraftPass), len(m.TargetLayer), len(m.TargetHead))
	}
	for i, b := range m.Batches {
		if b < 1 || (i > 0 && b <= m.Batches[i-1]) {
			return fmt.Errorf("cost: batch sizes %v are not ascending positive numbers", m.Batches)
		}
	}
	if len(m.DraftLayers) > 4096 {
		return fmt.Errorf("cost: %d draft layers is too many", len(m.DraftLayers))
	}
	for l, xs := range m.DraftLayers {
		if len(xs) != n {
			return fmt.Errorf("cost: draft layer %d has %d timings for %d batch sizes", l, len(xs), n)
		}
		for _, x := range xs {
			if !(x > 0) {
				return fmt.Errorf("cost: draft layer %d: timing %v is not positive", l, x)
			}
		}
	}
	for _, xs := range append([][]float64{m.DraftPass, m.TargetLayer, m.TargetHead}, m.DraftLayers...) {
		for _, x := range xs {
			if !(x >= 0) || math.IsInf(x, 0) || x > 3600 {
				return fmt.Errorf("cost: timing %v is not a plausible duration in seconds", x)
			}
		}
	}
	if m.Layers < 1 || m.Layers > 1<<12 || m.LayerBytes < 0 || !(m.DiskBps >= 0) || math.IsInf(m.DiskBps, 0) {
		return fmt.Errorf("cost: %d layers of %d bytes at %v B/s is not a plausible model", m.Layers, m.LayerBytes, m.DiskBps)
	}
	return nil
}

// at interpolates ys (one per measured batch size) at batch size b. Beyond
// a full kernel tile (quant.TileRows), when that size was measured, a
// batch costs its full tiles plus its remainder as a batch of its own: the
// kernels run the remainder as one more, narrower tile over the same
// weights, so the 17th row costs far more than the 16th did (8B-shape
// target, all layers resident: a pass over 17 rows measured 0.48 s, as
// this predicts from the 16- and 1-row measurements; a straight line
// between 16 and 32 rows said 0.38 s).
// Otherwise it is interpolate's.
func (m *Model) at(ys []float64, b int) float64 {
	if b > quant.TileRows {
		if i, ok := slices.BinarySearch(m.Batches, quant.TileRows); ok {
			full := float64(b/quant.TileRows) * ys[i]
			if r := b % quant.TileRows; r > 0 {
				return full + m.interpolate(ys, r)
			}
			return full
		}
	}
	return m.interpolate(ys, b)
}

// interpolate interpolates ys linearly between measured sizes, and along
// the last segment's slope beyond the largest (costs grow about linearly
// with rows once compute dominates). Below the smallest size it is the
// smallest's cost.
func (m *Model) interpolate(ys []float64, b int) float64 {
	bs := m.Batches
	if len(bs) == 0 {
		return 0
	}
	if b <= bs[0] || len(bs) == 1 {
		if len(bs) == 1 && b > bs[0] {
			return ys[0] * float64(b) / float64(bs[0])
		}
		return ys[0]
	}
	i, found := slices.BinarySearch(bs, b)
	if found {
		return ys[i]
	}
	if i == len(bs) {
		i = len(bs) - 1
	}
	x0, x1 := float64(bs[i-1]), float64(bs[i])
	y0, y1 := ys[i-1], ys[i]
	return max(0, y0+(y1-y0)*(float64(b)-x0)/(x1-x0))
}

// Draft is the time of one draft pass over b rows, head included.
func (m *Model) Draft(b int) float64 {
	if b <= 0 {
		return 0
	}
	return m.at(m.DraftPass, b) * scale(m.DraftScale)
}

func scale(s float64) float64 {
	if s > 0 {
		return s
	}
	return 1
}

// Layer is the compute time of one target layer over b rows.
func (m *Model) Layer(b int) float64 {
	if b <= 0 {
		return 0
	}
	return m.at(m.TargetLayer, b) * scale(m.ComputeScale)
}

// Head is the time of the target's LM head over b rows.
func (m *Model) Head(b int) float64 {
	if b <= 0 {
		return 0
	}
	return m.at(m.TargetHead, b) * scale(m.ComputeScale)
}

// FitComputeScale returns the ComputeScale (within [1/8, 8]) under which
// Verify(b, kept, pruneAt) takes `took` seconds: how far this pass's
// compute was from the measurement, the streamed reads taken as known.
// ok is false when no scale explains it (a pass all reads, say).
func (m *Model) FitComputeScale(b, kept, pruneAt int, took float64) (float64, bool) {
	c := *m
	lo, hi := 1.0/8, 8.0
	c.ComputeScale = lo
	if c.Verify(b, kept, pruneAt) >= took {
		return lo, false
	}
	c.ComputeScale = hi
	if c.Verify(b, kept, pruneAt) <= took {
		return hi, false
	}
	for range 40 {
		mid := math.Sqrt(lo * hi)
		c.ComputeScale = mid
		if c.Verify(b, kept, pruneAt) < took {
			lo = mid
		} else {
			hi = mid
		}
	}
	return math.Sqrt(lo * hi), true
}

// LayerIO is the time to read one streamed layer from storage.
func (m *Model) LayerIO() float64 {
	bps := m.DiskBps
	if m.StreamBps > 0 {
		bps = m.StreamBps
	}
	if bps <= 0 || m.LayerBytes <= 0 {
		return 0
	}
	return float64(m.LayerBytes) / bps
}

// Verify is the time of the target's layers over a pass of b rows whose
// first `pruneAt` layers run all b rows and the rest run kept rows (kept =
// b and pruneAt = Layers when nothing is pruned). Streamed layers are read
// ahead while earlier ones compute, so each costs the longer of its read
// and its compute: the read is paid once per pass whatever the rows, which
// is what makes large trees pay when layers are streamed.
func (m *Model) Verify(b, kept, pruneAt int) float64 {
	pruneAt = min(max(pruneAt, 0), m.Layers)
	resident := m.Layers - min(m.StreamedLayers, m.Layers)
	placed := len(m.Streamed) == m.Layers
	io := m.LayerIO()
	var t float64
	for l := range m.Layers {
		rows := b
		if l >= pruneAt {
			rows = kept
		}
		c := m.Layer(rows)
		if (placed && m.Streamed[l]) || (!placed && l >= resident) {
			c = max(c, io)
		}
		t += c
	}
	return t
}

// Overlap is how much shorter the next verify pass of b rows gets when
// `draft` seconds of drafting precede it: while the draft runs, the
// streamer reads the pass's first streamed layers into its free buffers
// (PrereadLayers of them at most, one every LayerIO seconds), and a layer
// already read costs the pass only its compute, not the longer of its read
// and compute. With nothing streamed, or no buffer to read into, it is 0.
// A step of drafting D then verifying costs D + VerifyRows(b) − Overlap(D, b).
func (m *Model) Overlap(draft float64, b int) float64 {
	io := m.LayerIO()
	k := min(m.PrereadLayers, m.StreamedLayers, m.Layers)
	if io <= 0 || k <= 0 || draft <= 0 {
		return 0
	}
	return min(draft/io, float64(k)) * max(0, io-m.Layer(b))
}

// VerifyRows is Verify without pruning.
func (m *Model) VerifyRows(b int) float64 { return m.Verify(b, b, m.Layers) }

// Summary lists the measurements in a few lines, for calibrate and logs.
func (m *Model) Summary() string {
	s := fmt.Sprintf("batch   draft pass   target layer   target head   (ms)\n")
	for i, b := range m.Batches {
		s += fmt.Sprintf("%5d   %10.3f   %12.3f   %11.3f\n", b, 1e3*m.DraftPass[i], 1e3*m.TargetLayer[i], 1e3*m.TargetHead[i])
	}
	how := "O_DIRECT"
	if !m.Direct {
		how = "buffered (O_DIRECT unavailable)"
	}
	io := "unknown"
	if m.DiskBps > 0 {
		io = fmt.Sprintf("%.2f GB/s %s → %.2f ms per streamed layer", m.DiskBps/1e9, how, 1e3*m.LayerIO())
	}
	if len(m.DraftLayers) > 0 {
		s += fmt.Sprintf("draft: %d layers profiled (elastic speculation's sensor baselines)\n", len(m.DraftLayers))
	}
	s += fmt.Sprintf("target: %d layers of %.1f MiB; storage read: %s\n", m.Layers, float64(m.LayerBytes)/(1<<20), io)
	s += fmt.Sprintf("verify pass, all resident: 1 row %.2f ms, 8 rows %.2f ms, 32 rows %.2f ms",
		1e3*m.allResident(1), 1e3*m.allResident(8), 1e3*m.allResident(32))
	return s
}

func (m *Model) allResident(b int) float64 {
	c := *m
	c.StreamedLayers, c.Streamed = 0, nil
	return c.VerifyRows(b)
}
