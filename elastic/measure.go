package elastic

import (
	"encoding/json"
	"errors"
	"fmt"
	"shade/cost"
	"slices"
	"time"

	"shade/calib"
)

// BaselinesFrom is the sensor's baselines from a device profile (the cost
// model measured by shade calibrate or at start-up): its draft layers'
// latencies at its batch sizes.
func BaselinesFrom(p *cost.Model) (*Baselines, error) {
	if p == nil || len(p.DraftLayers) == 0 {
		return nil, errors.New("elastic: the device profile has no draft-layer timings (measure it with the draft loaded)")
	}
	return baselines(p.Batches, p.DraftLayers)
}

func baselines(rows []int, secs [][]float64) (*Baselines, error) {
	b := &Baselines{Rows: slices.Clone(rows), NS: make([][]float64, len(secs))}
	for l, xs := range secs {
		for _, x := range xs {
			b.NS[l] = append(b.NS[l], x*1e9)
		}
	}
	return b, b.Validate()
}

// Calibration is what `shade calibrate --contention` stores (calib kind
// CalibKind, beside the target model, for one draft model on one CPU): the
// PI gains. The sensor's baselines are not in it: they are the device
// profile's draft layers (calib kind Cost), the one measurement of them.
type Calibration struct {
	Draft calib.Key `json:"draft"` // the draft model the gains were found with
	Gains Gains     `json:"gains"`
	// GainsFrom says how Gains were found: "ziegler-nichols relay" or
	// "default" (when the relay experiment did not oscillate).
	GainsFrom string  `json:"gains_from"`
	Ku        float64 `json:"ku,omitempty"`
	TuSeconds float64 `json:"tu_s,omitempty"`
	Pinned    bool    `json:"pinned"` // the relay ran with the LLM on one pinned core
	Created   string  `json:"created,omitempty"`
}

// CalibKind is the calib kind of contention calibrations.
const CalibKind = calib.Contention

// Validate checks a calibration read from disk.
func (c *Calibration) Validate() error {
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
