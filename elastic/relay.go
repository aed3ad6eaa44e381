package elastic

import (
	"context"
	"errors"
	"fmt"
	"shade/cost"
	"time"

	"shade/model"
)

// RelayOptions set up a relay (Åström–Hägglund) experiment for tuning the
// PI gains on this machine.
type RelayOptions struct {
	Draft     *model.Model
	Baselines *Baselines
	// Target is the CS level the relay switches at (default 0.15).
	Target float64
	// Band is the relay's hysteresis around Target (default 0.02), so noise
	// does not chatter it.
	Band     float64
	Duration time.Duration // default 8 s
	// Source switches the contention source (a memory-streaming thread on
	// another core) on or off.
	Source func(on bool)
}

// RelayResult is what the relay experiment found.
type RelayResult struct {
	Ku, Tu   float64 // ultimate gain and period (s)
	Gains    Gains   // Ziegler–Nichols PI gains from them
	Readings int
	// Amplitude is the smoothed CS's oscillation amplitude.
	Amplitude float64
}

// RunRelay closes a loop from the smoothed contention score of the draft's
// layers to a real contention source: the relay turns the source off when
// the score is above Target and on when below. The loop oscillates; its
// period and amplitude give the ultimate gain and period (Ku = 4h/πa with
// relay amplitude h = ½ of the actuation range), and Ziegler–Nichols turns
// them into PI gains. Identifying the source's full swing with the
// actuation's full range is the model: at u = 1 the governor is meant to
// yield about what a busy foreground takes.
func RunRelay(ctx context.Context, o RelayOptions) (RelayResult, error) {
	var res RelayResult
	if o.Draft == nil || o.Source == nil {
		return res, errors.New("elastic: relay experiment needs a draft model and a contention source")
	}
	if o.Target <= 0 {
		o.Target = Balanced.Target()
	}
	if o.Band <= 0 {
		o.Band = 0.02
	}
	if o.Duration <= 0 {
		o.Duration = 8 * time.Second
	}
	sensor := NewSensor(o.Baselines)
	s, err := o.Draft.NewState(128)
	if err != nil {
		return res, err
	}
	vocab := int32(o.Draft.Config.Vocab)
	ctxTokens := make([]int32, 64)
	for i := range ctxTokens {
		ctxTokens[i] = int32(i*7919+13) % vocab
	}
	if err := s.Forward(model.Chain(ctxTokens)); err != nil {
		return res, err
	}
	if err := s.CommitAll(); err != nil {
		return res, err
	}
	var ts, es []float64
	var y float64
	on := true
	o.Source(on)
	defer o.Source(false)
	start := time.Now()
	share := cost.NewCPUShare(ProcessCPUTime, o.Draft.Pool.Threads())
	hook := func(layer int) error {
		cs, ok := sensor.Score(layer, 1, share.Scale(Monotonic(), s.LayerTimes[layer]))
		if !ok {
			return nil
		}
		y += FilterAlpha * (cs - y)
		e := y - o.Target
		ts = append(ts, time.Since(start).Seconds())
		es = append(es, e)
		switch {
		case on && e > o.Band:
			on = false
			o.Source(false)
		case !on && e < -o.Band:
			on = true
			o.Source(true)
		}
		return nil
	}
	for tok := int32(0); time.Since(start) < o.Duration; tok++ {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		if err := s.Begin(model.Chain([]int32{tok % vocab})); err != nil {
			return res, err
		}
		if err := s.RunLayers(0, o.Draft.Config.Layers, hook); err != nil {
			return res, err
		}
		s.Abandon()
	}
	res.Readings = len(es)
	const h = 0.5
	ku, tu, err := RelayUltimate(h, o.Band, ts, es)
	if err != nil {
		return res, fmt.Errorf("%w (%d readings)", err, len(es))
	}
	res.Ku, res.Tu = ku, tu
	res.Amplitude = 4 * h / (3.141592653589793 * ku)
	res.Gains, err = ZieglerNicholsPI(ku, tu)
	return res, err
}
