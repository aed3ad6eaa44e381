package cost

import (
	"context"
	"fmt"
	"slices"
	"time"

	"shade/gguf"
	"shade/model"
	"shade/quant"
	"shade/weights"
)

// Options bound a measurement.
type Options struct {
	Batches []int // batch sizes (default 1, 2, 4, …, 64)
	Layers  int   // target layers timed per pass (default 2): a few representative ones, not all
	Reps    int   // repetitions, the fastest kept (default 2)
	// DiskBytes bounds the storage read probe (default 512 MiB); < 0
	// skips it.
	DiskBytes int64
	// DraftPasses is how many passes per batch size the draft's layer
	// profile takes, medians kept (default Reps+1, at least 3): elastic
	// speculation's sensor scores every draft layer against it.
	DraftPasses int
	// CPUTime, if set, is the process's CPU time in ns: the draft's layer
	// times are scaled by the share of them the process ran, as the
	// sensor's readings are (CPUShare).
	CPUTime  func() int64
	Progress func(what string)
}

// Quick are the options of the measurement an engine makes at start-up
// when no calibrated cost model is stored: one layer, four batch sizes
// (the rest interpolated), one repetition, a short read of the file.
func Quick() Options {
	return Options{Batches: []int{1, 4, 16, 64}, Layers: 1, Reps: 1, DiskBytes: 128 << 20}
}

func (o *Options) defaults() {
	if len(o.Batches) == 0 {
		o.Batches = []int{1, 2, 4, 8, 16, 32, 64}
	}
	if o.Layers <= 0 {
		o.Layers = 2
	}
	if o.Reps <= 0 {
		o.Reps = 2
	}
	if o.DiskBytes == 0 {
		o.DiskBytes = 512 << 20
	}
	if o.DraftPasses <= 0 {
		o.DraftPasses = max(o.Reps+1, 3)
	}
}

// measureDraft records the draft's layer profile (LayerProfile over the
// batch sizes) and its head's time per batch size; a draft pass is their
// sum. One measurement serves both users of a draft's latency: the
// gain-cost tree builder prices drafting by DraftPass, and elastic
// speculation's sensor takes DraftLayers as its quiet-machine baselines.
func (m *Model) measureDraft(draft *model.Model, bs []int, o Options, progress func(string, ...any)) error {
	progress("draft: %d layers at batch sizes %v, %d passes", draft.Config.Layers, bs, o.DraftPasses)
	layers, err := LayerProfile(context.Background(), draft, ProfileOptions{Rows: bs, Passes: o.DraftPasses, CPUTime: o.CPUTime})
	if err != nil {
		return err
	}
	maxB := bs[len(bs)-1]
	ds, err := draft.NewState(maxB + 1)
	if err != nil {
		return err
	}
	logits := make([]float32, maxB*draft.Config.Vocab)
	rows := make([]int, maxB)
	for i := range rows {
		rows[i] = i
	}
	head := make([]float64, len(bs))
	for i, b := range bs {
		var took []float64
		for range o.DraftPasses {
			if err := ds.Begin(model.Chain(tokens(b, draft.Config.Vocab))); err != nil {
				return err
			}
			if err := ds.RunLayers(0, draft.Config.Layers, nil); err != nil {
				return err
			}
			t := time.Now()
			if err := ds.Logits(rows[:b], logits[:b*draft.Config.Vocab]); err != nil {
				return err
			}
			took = append(took, time.Since(t).Seconds())
			ds.Abandon()
		}
		head[i] = median(took)
	}
	m.DraftLayers = layers
	for i := range bs {
		m.DraftPass[i] = head[i]
		for l := range layers {
			m.DraftPass[i] += layers[l][i]
		}
	}
	return nil
}

// Measure times the target (and the draft, if not nil) on this machine.
// modelPath, if not empty, is the target's file, whose O_DIRECT read rate
// is measured too.
func Measure(target, draft *model.Model, modelPath string, o Options) (_ *Model, err error) {
	defer gguf.CatchFault(&err) // it times the head's MatMul on the mapped file directly
	defer gguf.GuardFaults()()
	o.defaults()
	t0 := time.Now()
	bs := slices.Clone(o.Batches)
	slices.Sort(bs)
	bs = slices.Compact(bs)
	if bs[0] < 1 || bs[len(bs)-1] > 512 {
		return nil, fmt.Errorf("cost: batch sizes %v outside [1, 512]", bs)
	}
	// Time the kernels, not the one-time repacking of the first pass.
	target.Repack()
	if draft != nil {
		draft.Repack()
	}
	c := target.Config
	m := &Model{Batches: bs, Layers: c.Layers, Threads: target.Pool.Threads(), Measured: time.Now().UTC()}
	for _, b := range target.Weights.LayerBytes {
		m.LayerBytes += b
	}
	m.LayerBytes /= int64(max(1, c.Layers))
	maxB := bs[len(bs)-1]
	progress := func(f string, a ...any) {
		if o.Progress != nil {
			o.Progress(fmt.Sprintf(f, a...))
		}
	}

	progress("target: %d of %d layers at batch sizes %v", min(o.Layers, c.Layers), c.Layers, bs)
	ts, err := target.NewState(maxB + 1)
	if err != nil {
		return nil, err
	}
	layers := min(o.Layers, c.Layers)
	run := func(s *model.State, b, layers int) error {
		if err := s.Begin(model.Chain(tokens(b, s.Model().Config.Vocab))); err != nil {
			return err
		}
		return s.RunLayers(0, layers, nil)
	}
	if err := run(ts, 1, layers); err != nil { // warm up: fault the pages in
		return nil, err
	}
	for _, b := range bs {
		best := -1.0
		for range o.Reps {
			if err := run(ts, b, layers); err != nil {
				return nil, err
			}
			var sum time.Duration
			for _, t := range ts.LayerTimes[:layers] {
				sum += t
			}
			if per := sum.Seconds() / float64(layers); best < 0 || per < best {
				best = per
			}
		}
		m.TargetLayer = append(m.TargetLayer, best)
	}

	progress("target head at batch sizes %v", bs)
	x := make([]float32, maxB*c.Dim)
	for i := range x {
		x[i] = float32(i%7) * 0.1
	}
	out := make([]float32, maxB*c.Vocab)
	var scratch quant.Scratch
	quant.MatMul(target.Pool, target.Weights.Output, x, 1, out, &scratch)
	for _, b := range bs {
		best := -1.0
		for range o.Reps {
			t := time.Now()
			quant.MatMul(target.Pool, target.Weights.Output, x[:b*c.Dim], b, out[:b*c.Vocab], &scratch)
			if d := time.Since(t).Seconds(); best < 0 || d < best {
				best = d
			}
		}
		m.TargetHead = append(m.TargetHead, best)
	}

	m.DraftPass = make([]float64, len(bs))
	if draft != nil {
		if err := m.measureDraft(draft, bs, o, progress); err != nil {
			return nil, err
		}
	}

	if modelPath != "" && o.DiskBytes > 0 {
		// The streamer's own way of reading (package weights): O_DIRECT,
		// large aligned reads, two readers. A file too small for one read
		// leaves the rate unknown: nothing of it would stream anyway.
		progress("storage: reading %s", modelPath)
		r, err := weights.MeasureDisk(modelPath, weights.DiskOptions{Offset: int64(target.File.DataOffset), Bytes: o.DiskBytes, Readers: []int{2}, Reps: 1})
		if err == nil {
			m.DiskBps, m.Direct = r.GBps*1e9, r.Direct
		}
	}
	// A bigger batch never costs less: smooth out timing noise so that
	// marginal costs are never negative.
	for _, xs := range [][]float64{m.TargetLayer, m.TargetHead, m.DraftPass} {
		for i := 1; i < len(xs); i++ {
			xs[i] = max(xs[i], xs[i-1])
		}
	}
	m.Took = time.Since(t0)
	return m, m.Validate()
}

// tokens is a batch of b distinct, valid token ids.
func tokens(b, vocab int) []int32 {
	out := make([]int32, b)
	for i := range out {
		out[i] = int32((i*7919 + 13) % vocab)
	}
	return out
}
