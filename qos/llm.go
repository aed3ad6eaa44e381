package qos

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"shade/engine"
	"shade/sample"
	"shade/spec"
)

// LLM is the background language model: an engine (with its draft, if
// any) that generates greedily from a set of prompts, one after another,
// starting over when a generation ends, for as long as a workload runs.
type LLM struct {
	Engine    *engine.Engine
	Prompts   []string
	MaxTokens int // per generation (default 128)
	Ctx       int // context size (default 1024)

	mu   sync.Mutex
	next int // the prompt the next generation starts from
}

// StartAt makes the next generation start from prompt i (mod the
// prompts), so that the runs an experiment compares decode the same text:
// speculation's speed depends on how well the draft guesses it.
func (l *LLM) StartAt(i int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.next = i
}

// SampleSource is a contention sensor that keeps time-stamped readings:
// TakeSamples returns those taken since the last call.
type SampleSource interface {
	TakeSamples() []Sample
}

// Workload is a Background that generates continuously with the given
// speculation settings (whose Governor paces it). Its samples come from
// sensor when it is non-nil; otherwise from the per-layer timings the
// decoder reports at its yield points (see LayerScores).
func (l *LLM) Workload(cfg spec.Config, sensor SampleSource) Background {
	return BackgroundFunc(func(ctx context.Context) (BackgroundResult, error) {
		return l.run(ctx, cfg, sensor)
	})
}

func (l *LLM) run(ctx context.Context, cfg spec.Config, sensor SampleSource) (BackgroundResult, error) {
	var res BackgroundResult
	if l.Engine == nil || len(l.Prompts) == 0 {
		return res, errors.New("qos: the LLM workload needs an engine and prompts")
	}
	rec := &layerRecorder{inner: cfg.Deps.Governor}
	cfg.Deps.Governor = rec
	maxTok, n := l.MaxTokens, l.Ctx
	if maxTok <= 0 {
		maxTok = 128
	}
	if n <= 0 {
		n = 1024
	}
	notes := map[string]float64{}
	ready := false
	for ctx.Err() == nil {
		l.mu.Lock()
		prompt := l.Prompts[l.next%len(l.Prompts)]
		l.next++
		l.mu.Unlock()
		st, before, err := l.generate(ctx, prompt, maxTok, n, cfg, &ready)
		res.Tokens += st.GenTokens - before
		res.Busy += st.PromptDuration + st.GenDuration
		if s := st.Spec; s != nil {
			res.Sleep += s.Sleep
			notes["steps"] += float64(s.Steps)
			notes["drafted"] += float64(s.Drafted)
			notes["accepted"] += float64(s.Accepted)
			notes["preempted"] += float64(s.Preempted)
			notes["filled"] += float64(s.Filled)
			notes["filled_accepted"] += float64(s.FilledAccepted)
		}
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			return res, fmt.Errorf("qos: background generation: %w", err)
		}
	}
	res.Notes = notes
	if sensor != nil {
		res.Samples = sensor.TakeSamples()
	} else {
		res.Samples = LayerScores(rec.records)
	}
	return res, nil
}

// generate runs one greedy generation step by step. After the first step
// that produced a token (the prompt is in), it tells the harness the
// workload is in its steady state (Ready), once per run; when the harness
// was waiting for that, the tokens made before it are not the measured
// run's and are returned as before.
func (l *LLM) generate(ctx context.Context, prompt string, maxTok, n int, cfg spec.Config, ready *bool) (engine.Stats, int, error) {
	ss, err := l.Engine.NewSession(engine.Request{Prompt: prompt, MaxTokens: maxTok, Ctx: n,
		Sampling: sample.Params{Temp: 0}, IgnoreEOS: true, Spec: cfg}, nil)
	if err != nil {
		return engine.Stats{}, 0, err
	}
	defer ss.Close()
	before := 0
	for {
		done, err := ss.Step(ctx, func(string) error { return nil })
		if !*ready && err == nil {
			if st := ss.Stats(); st.GenTokens > 0 {
				*ready = true
				if Ready(ctx) {
					before = st.GenTokens
				}
			}
		}
		if err != nil || done {
			return ss.Stats(), before, err
		}
	}
}

// LayerTiming is one layer's duration as the decoder reported it at a
// yield point.
type LayerTiming struct {
	T     int64         // CLOCK_MONOTONIC ns when it was reported
	Draft bool          // a draft-model layer (else a target layer)
	Layer int           //
	Rows  int           // rows of the pass
	Took  time.Duration //
}

// maxLayerTimings bounds what a recorder keeps (an hour at ≈300 layers/s).
const maxLayerTimings = 1 << 20

// layerRecorder wraps a policy's Governor (or none) and records every layer
// timing it sees, changing nothing.
type layerRecorder struct {
	inner   spec.Governor
	records []LayerTiming
}

func (r *layerRecorder) add(draft bool, layer, rows int, took time.Duration) {
	if len(r.records) < maxLayerTimings {
		r.records = append(r.records, LayerTiming{T: Now(), Draft: draft, Layer: layer, Rows: rows, Took: took})
	}
}

func (r *layerRecorder) DraftLayer(layer, rows int, took time.Duration) bool {
	r.add(true, layer, rows, took)
	return r.inner != nil && r.inner.DraftLayer(layer, rows, took)
}

func (r *layerRecorder) VerifyRows(drafted int) int {
	if r.inner == nil {
		return 0
	}
	return r.inner.VerifyRows(drafted)
}

func (r *layerRecorder) VerifyLayer(layer, rows int, took time.Duration) time.Duration {
	r.add(false, layer, rows, took)
	if r.inner == nil {
		return 0
	}
	return r.inner.VerifyLayer(layer, rows, took)
}

func (r *layerRecorder) StepDone(tokens int, took time.Duration) time.Duration {
	if r.inner == nil {
		return 0
	}
	return r.inner.StepDone(tokens, took)
}

// minBaselineCount is how many timings of one (kind, layer, rows) a
// baseline needs.
const minBaselineCount = 8

// LayerScores turns layer timings into contention scores
// CS = (took − base) / base, where base is the 10th percentile of the
// timings of the same layer of the same model at the same rows within the
// run: the layer's time when the foreground was between bursts. (A
// calibrated quiet-machine baseline, as the elastic sensor keeps, is the
// better reference; this one needs nothing beforehand and serves
// correlation, not control.) Layers with too few timings give no samples.
func LayerScores(ts []LayerTiming) []Sample {
	type key struct {
		draft       bool
		layer, rows int
	}
	groups := map[key][]float64{}
	for _, t := range ts {
		k := key{t.Draft, t.Layer, t.Rows}
		groups[k] = append(groups[k], float64(t.Took))
	}
	base := map[key]float64{}
	for k, v := range groups {
		if len(v) < minBaselineCount {
			continue
		}
		slices.Sort(v)
		if b := Percentile(v, 10); b > 0 {
			base[k] = b
		}
	}
	var out []Sample
	for _, t := range ts {
		if b, ok := base[key{t.Draft, t.Layer, t.Rows}]; ok {
			out = append(out, Sample{T: t.T, Value: (float64(t.Took) - b) / b})
		}
	}
	return out
}
