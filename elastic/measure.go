package elastic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"shade/calib"
	"shade/model"
)

// MeasureOptions set up a baseline measurement.
type MeasureOptions struct {
	Rows   []int // batch sizes measured (default 1, 2, 4, 8)
	Passes int   // passes per batch size; the median is kept (default 5)
	Ctx    int   // context already in the KV cache (default 64 tokens)
}

// MeasureBaselines times every layer of m over each batch size, passes
// times, interleaving the sizes so that a slow spell hits them all alike,
// and keeps the medians. Run it on a quiet machine (calibration), or
// briefly at start-up when there is no calibration.
func MeasureBaselines(ctx context.Context, m *model.Model, o MeasureOptions) (*Baselines, error) {
	if len(o.Rows) == 0 {
		o.Rows = []int{1, 2, 4, 8}
	}
	if o.Passes <= 0 {
		o.Passes = 5
	}
	if o.Ctx <= 0 {
		o.Ctx = 64
	}
	rows := slices.Clone(o.Rows)
	slices.Sort(rows)
	rows = slices.Compact(rows)
	if rows[0] < 1 || rows[len(rows)-1] > 512 || o.Passes > 100000 {
		return nil, fmt.Errorf("elastic: baseline batch sizes must be in [1, 512], got %v", o.Rows)
	}
	layers := m.Config.Layers
	s, err := m.NewState(o.Ctx + rows[len(rows)-1] + 1)
	if err != nil {
		return nil, err
	}
	vocab := int32(m.Config.Vocab)
	tokens := make([]int32, max(o.Ctx, rows[len(rows)-1]))
	for i := range tokens {
		tokens[i] = int32(i*7919+13) % vocab
	}
	if err := s.Forward(model.Chain(tokens[:o.Ctx])); err != nil {
		return nil, err
	}
	if err := s.CommitAll(); err != nil {
		return nil, err
	}
	times := make([][][]float64, layers) // [layer][row size][pass]
	for l := range times {
		times[l] = make([][]float64, len(rows))
	}
	// Each layer's time counts only the share of it the process ran, as
	// the governor's readings do: a baseline measured on a busy machine
	// would otherwise include other processes' turns on the core.
	share := newCPUShare(ProcessCPUTime, m.Pool.Threads())
	var lastTook time.Duration
	hook := func(l int) error {
		lastTook = share.scale(Monotonic(), s.LayerTimes[l])
		return nil
	}
	for range o.Passes {
		for ri, r := range rows {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if err := s.Begin(model.Chain(tokens[:r])); err != nil {
				return nil, err
			}
			share.scale(Monotonic(), 0) // the window starts at the pass
			for l := range layers {
				if err := s.RunLayers(l, l+1, hook); err != nil {
					return nil, err
				}
				times[l][ri] = append(times[l][ri], float64(lastTook))
			}
			s.Abandon()
		}
	}
	b := &Baselines{Rows: rows, NS: make([][]float64, layers)}
	for l := range layers {
		for ri := range rows {
			b.NS[l] = append(b.NS[l], median(times[l][ri]))
		}
	}
	return b, b.Validate()
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	v = slices.Clone(v)
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// Calibration is what `shade calibrate --contention` stores (calib kind
// CalibKind, beside the target model, for one draft model on one CPU).
type Calibration struct {
	Draft     calib.Key `json:"draft"` // the draft model the baselines are of
	Baselines Baselines `json:"baselines"`
	Passes    int       `json:"passes"`
	Pinned    bool      `json:"pinned"` // measured on one pinned core
	Gains     Gains     `json:"gains"`
	// GainsFrom says how Gains were found: "ziegler-nichols relay" or
	// "default" (when the relay experiment did not oscillate).
	GainsFrom string  `json:"gains_from"`
	Ku        float64 `json:"ku,omitempty"`
	TuSeconds float64 `json:"tu_s,omitempty"`
	Created   string  `json:"created,omitempty"`
}

// CalibKind is the calib kind of contention calibrations.
const CalibKind = calib.Contention

// Validate checks a calibration read from disk.
func (c *Calibration) Validate() error {
	if err := c.Baselines.Validate(); err != nil {
		return err
	}
	if err := c.Gains.Validate(); err != nil {
		return err
	}
	if c.Gains == (Gains{}) {
		return errors.New("elastic: calibration has zero gains")
	}
	return nil
}

// ParseCalibration decodes and checks one calibration value.
func ParseCalibration(data []byte) (*Calibration, error) {
	var c Calibration
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("elastic: calibration: %w", err)
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// LoadCalibration reads the contention calibration stored for target and
// draft on this machine; nil (no error) when there is none, or when the
// one stored is of another draft file.
func LoadCalibration(targetPath, draftPath string) (*Calibration, error) {
	var raw json.RawMessage
	ok, err := calib.Load(targetPath, CalibKind, &raw)
	if err != nil || !ok {
		return nil, err
	}
	c, err := ParseCalibration(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", calib.Path(targetPath, CalibKind), err)
	}
	key, err := calib.KeyFor(draftPath)
	if err != nil {
		return nil, err
	}
	if key != c.Draft {
		return nil, nil
	}
	return c, nil
}

// SaveCalibration stores c for target on this machine and returns the file.
func SaveCalibration(targetPath string, c *Calibration) (string, error) {
	if err := c.Validate(); err != nil {
		return "", err
	}
	if c.Created == "" {
		c.Created = time.Now().UTC().Format(time.RFC3339)
	}
	return calib.Save(targetPath, CalibKind, c)
}
