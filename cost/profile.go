package cost

import (
	"context"
	"fmt"
	"slices"
	"time"

	"shade/model"
)

// ProfileOptions set up a per-layer timing of a model.
type ProfileOptions struct {
	Rows   []int // batch sizes timed (default 1, 2, 4, 8)
	Passes int   // passes per batch size; the median is kept (default 5)
	Ctx    int   // context already in the KV cache (default 64 tokens)
	// CPUTime, if set, is the process's CPU time in ns: each layer's time
	// is then scaled by the share of it the process ran (CPUShare).
	CPUTime func() int64
}

// LayerProfile times every layer of m over each batch size, Passes
// times, interleaving the sizes so that a slow spell hits them all alike,
// and returns the medians in seconds, [layer][row size]: compute only (a
// layer's LayerTimes, not its weights' wait), scaled by the CPU share when
// o.CPUTime is set. It is the one measurement of a model's per-layer
// latency: the device profile's draft layers (Measure) and elastic
// speculation's sensor baselines both come from it.
func LayerProfile(ctx context.Context, m *model.Model, o ProfileOptions) ([][]float64, error) {
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
		return nil, fmt.Errorf("cost: layer profile batch sizes must be in [1, 512], got %v", o.Rows)
	}
	layers := m.Config.Layers
	s, err := m.NewState(o.Ctx + rows[len(rows)-1] + 1)
	if err != nil {
		return nil, err
	}
	vocab := int32(m.Config.Vocab)
	toks := make([]int32, max(o.Ctx, rows[len(rows)-1]))
	for i := range toks {
		toks[i] = int32(i*7919+13) % vocab
	}
	if err := s.Forward(model.Chain(toks[:o.Ctx])); err != nil {
		return nil, err
	}
	if err := s.CommitAll(); err != nil {
		return nil, err
	}
	times := make([][][]float64, layers) // [layer][row size][pass]
	for l := range times {
		times[l] = make([][]float64, len(rows))
	}
	share := NewCPUShare(o.CPUTime, m.Pool.Threads())
	epoch := time.Now()
	now := func() int64 { return int64(time.Since(epoch)) + 1 }
	var lastTook time.Duration
	hook := func(l int) error {
		lastTook = share.Scale(now(), s.LayerTimes[l])
		return nil
	}
	for range o.Passes {
		for ri, r := range rows {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if err := s.Begin(model.Chain(toks[:r])); err != nil {
				return nil, err
			}
			share.Scale(now(), 0) // the window starts at the pass
			for l := range layers {
				if err := s.RunLayers(l, l+1, hook); err != nil {
					return nil, err
				}
				times[l][ri] = append(times[l][ri], lastTook.Seconds())
			}
			s.Abandon()
		}
	}
	out := make([][]float64, layers)
	for l := range layers {
		for ri := range rows {
			out[l] = append(out[l], median(times[l][ri]))
		}
	}
	return out, nil
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
