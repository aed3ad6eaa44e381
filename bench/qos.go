package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"shade/elastic"
	"shade/engine"
	"shade/qos"
	"shade/sample"
	"shade/speculate"
)

// This file is the background side of `shade bench qos`: the language
// model that generates beside the foreground, and the policies it runs
// under (package qos measures; these decide).

// QoSLLM is the background language model: an engine (with its draft, if
// any) that generates greedily from a set of prompts, one after another,
// starting over when a generation ends, for as long as a workload runs.
type QoSLLM struct {
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
func (l *QoSLLM) StartAt(i int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.next = i
}

// SampleSource is a contention sensor that keeps time-stamped readings:
// TakeSamples returns those taken since the last call.
type SampleSource interface {
	TakeSamples() []qos.Sample
}

// Workload is a Background that generates continuously with the given
// speculation settings (whose Governor paces it). Its samples come from
// sensor when it is non-nil; otherwise from the per-layer timings the
// decoder reports at its yield points (see qos.LayerScores).
func (l *QoSLLM) Workload(cfg speculate.Config, sensor SampleSource) qos.Background {
	return qos.BackgroundFunc(func(ctx context.Context) (qos.BackgroundResult, error) {
		return l.run(ctx, cfg, sensor)
	})
}

func (l *QoSLLM) run(ctx context.Context, cfg speculate.Config, sensor SampleSource) (qos.BackgroundResult, error) {
	var res qos.BackgroundResult
	if l.Engine == nil || len(l.Prompts) == 0 {
		return res, errors.New("bench qos: the LLM workload needs an engine and prompts")
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
			return res, fmt.Errorf("bench qos: background generation: %w", err)
		}
	}
	res.Notes = notes
	if sensor != nil {
		res.Samples = sensor.TakeSamples()
	} else {
		res.Samples = qos.LayerScores(rec.records)
	}
	return res, nil
}

// generate runs one greedy generation step by step. After the first step
// that produced a token (the prompt is in), it tells the harness the
// workload is in its steady state (Ready), once per run; when the harness
// was waiting for that, the tokens made before it are not the measured
// run's and are returned as before.
func (l *QoSLLM) generate(ctx context.Context, prompt string, maxTok, n int, cfg speculate.Config, ready *bool) (engine.Stats, int, error) {
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
				if qos.Ready(ctx) {
					before = st.GenTokens
				}
			}
		}
		if err != nil || done {
			return ss.Stats(), before, err
		}
	}
}

// maxLayerTimings bounds what a recorder keeps (an hour at ≈300 layers/s).
const maxLayerTimings = 1 << 20

// layerRecorder wraps a policy's Governor (or none) and records every layer
// timing it sees, changing nothing.
type layerRecorder struct {
	inner   speculate.Governor
	records []qos.LayerTiming
}

func (r *layerRecorder) add(draft bool, layer, rows int, took time.Duration) {
	if len(r.records) < maxLayerTimings {
		r.records = append(r.records, qos.LayerTiming{T: qos.Now(), Draft: draft, Layer: layer, Rows: rows, Took: took})
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

// QoSOptions are the knobs of the policies QoSPolicies makes.
type QoSOptions struct {
	DraftMax    int           // draft chain of spec and the elastic policies (default DefaultDraftMax)
	RateCap     float64       // freq-limit's cap in tok/s (default DefaultRateCap)
	ChunkLayers int           // chunk-sleep's layers per chunk (default DefaultChunkLayers)
	ChunkSleep  time.Duration // chunk-sleep's sleep (default DefaultChunkSleep)
}

// QoSPolicies are the rows of `shade bench qos`, in order: native (the
// foreground alone), plain decoding (ar), speculation (spec), two
// baselines that slow plain decoding down (freq-limit, chunk-sleep), and
// elastic speculation under each of its policies. l is the background
// LLM; nil when the experiment has none, and then every policy but native
// fails to build.
func QoSPolicies(l *QoSLLM, o QoSOptions) []qos.Policy {
	if o.DraftMax <= 0 {
		o.DraftMax = DefaultDraftMax
	}
	if o.RateCap == 0 {
		o.RateCap = DefaultRateCap
	}
	if o.ChunkLayers == 0 {
		o.ChunkLayers = DefaultChunkLayers
	}
	if o.ChunkSleep == 0 {
		o.ChunkSleep = DefaultChunkSleep
	}
	ps := []qos.Policy{qos.Native(), ARPolicy(l), SpecPolicy(l, o.DraftMax), FreqLimitPolicy(l, o.RateCap), ChunkSleepPolicy(l, o.ChunkLayers, o.ChunkSleep)}
	for _, p := range []elastic.Policy{elastic.Balanced, elastic.UIFirst} {
		ps = append(ps, ElasticPolicy(l, p, o.DraftMax))
	}
	return ps
}

var errNoLLM = errors.New("bench qos: this policy needs a background LLM")

// ARPolicy is plain autoregressive decoding, uncontrolled.
func ARPolicy(l *QoSLLM) qos.Policy {
	return qos.Policy{Name: "ar", Summary: "plain decoding, no control",
		New: func() (qos.Background, error) {
			if l == nil {
				return nil, errNoLLM
			}
			return l.Workload(speculate.Config{Mode: speculate.ModeOff}, nil), nil
		}}
}

// SpecPolicy is plain speculative decoding (a chain of DraftMax tokens from the
// draft model, or n-gram lookup without one), uncontrolled.
func SpecPolicy(l *QoSLLM, draftMax int) qos.Policy {
	return qos.Policy{Name: "spec", Summary: fmt.Sprintf("speculative decoding (draft-model chain of %d, no control)", draftMax),
		New: func() (qos.Background, error) {
			if l == nil {
				return nil, errNoLLM
			}
			mode := speculate.ModeChain
			if l.Engine.Draft == nil {
				mode = speculate.ModeNgram
			}
			return l.Workload(speculate.Config{Mode: mode, DraftMax: draftMax}, nil), nil
		}}
}

// FreqLimitPolicy caps plain decoding at tokPerS: after each step it pauses until
// the tokens made so far are no more than the cap allows.
func FreqLimitPolicy(l *QoSLLM, tokPerS float64) qos.Policy {
	return qos.Policy{Name: "freq-limit", Summary: fmt.Sprintf("plain decoding capped at %g tok/s", tokPerS),
		New: func() (qos.Background, error) {
			if l == nil {
				return nil, errNoLLM
			}
			if !(tokPerS > 0) {
				return nil, fmt.Errorf("bench qos: freq-limit rate %v tok/s must be positive", tokPerS)
			}
			return l.Workload(speculate.Config{Mode: speculate.ModeOff, Deps: speculate.Deps{Governor: &RateCap{TokPerS: tokPerS}}}, nil), nil
		}}
}

// ChunkSleepPolicy is plain decoding that sleeps for sleep after every chunk of
// layers target layers.
func ChunkSleepPolicy(l *QoSLLM, layers int, sleep time.Duration) qos.Policy {
	return qos.Policy{Name: "chunk-sleep", Summary: fmt.Sprintf("plain decoding, %v sleep after every %d layers", sleep, layers),
		New: func() (qos.Background, error) {
			if l == nil {
				return nil, errNoLLM
			}
			if layers < 1 || sleep < 0 || sleep > time.Second {
				return nil, fmt.Errorf("bench qos: chunk-sleep needs ≥ 1 layer per chunk and a sleep in [0, 1s]")
			}
			return l.Workload(speculate.Config{Mode: speculate.ModeOff, Deps: speculate.Deps{Governor: &ChunkSleeper{Layers: layers, Sleep: sleep}}}, nil), nil
		}}
}

// Defaults of the built-in baselines.
const (
	DefaultDraftMax    = 8
	DefaultRateCap     = 8.0 // tok/s: about half of plain decoding of a 1B Q4_0 model on one core here
	DefaultChunkLayers = 4
	DefaultChunkSleep  = 4 * time.Millisecond
)

// RateCap is a speculate.Governor that holds the average rate since its first
// step to at most TokPerS, pausing after a step that got ahead. A gap of
// over a second between steps (the workload was off) starts the average
// afresh, so that idle time does not become a burst allowance.
type RateCap struct {
	TokPerS float64
	start   time.Time
	last    time.Time
	tokens  int
}

func (*RateCap) DraftLayer(int, int, time.Duration) bool           { return false }
func (*RateCap) VerifyRows(int) int                                { return 0 }
func (*RateCap) VerifyLayer(int, int, time.Duration) time.Duration { return 0 }

// StepDone pauses until tokens so far ÷ time since the first step's start
// is at most the cap.
func (g *RateCap) StepDone(tokens int, took time.Duration) time.Duration {
	now := time.Now()
	if g.start.IsZero() || now.Sub(g.last)-took > time.Second {
		g.start, g.tokens = now.Add(-took), 0
	}
	g.tokens += tokens
	due := g.start.Add(time.Duration(float64(g.tokens) / g.TokPerS * float64(time.Second)))
	pause := max(0, due.Sub(now))
	g.last = now.Add(pause)
	return pause
}

// ChunkSleeper is a speculate.Governor that sleeps for Sleep after every Layers
// target layers.
type ChunkSleeper struct {
	Layers int
	Sleep  time.Duration
}

func (*ChunkSleeper) DraftLayer(int, int, time.Duration) bool   { return false }
func (*ChunkSleeper) VerifyRows(int) int                        { return 0 }
func (*ChunkSleeper) StepDone(int, time.Duration) time.Duration { return 0 }

// VerifyLayer sleeps after the last layer of each chunk.
func (g *ChunkSleeper) VerifyLayer(layer, rows int, took time.Duration) time.Duration {
	if (layer+1)%g.Layers == 0 {
		return g.Sleep
	}
	return 0
}

// ElasticPolicy is elastic speculative decoding under policy p: the draft-model
// chain of the spec policy, paced by the elastic governor (draft
// preemption, verify batches filled from n-grams, micro-sleeps, and for
// balanced the token-bucket guardrail). Its contention samples are the
// governor's own sensor readings. The governor's baselines come from the
// models' contention calibration, or are measured once per engine before
// the first run (on the quiet machine between runs).
func ElasticPolicy(l *QoSLLM, p elastic.Policy, draftMax int) qos.Policy {
	return qos.Policy{Name: p.String(), Summary: fmt.Sprintf("elastic speculation, %v policy (CS target %.2f, guardrail %v; draft chain of %d)", p, p.Target(), p.Guardrail(), draftMax),
		New: func() (qos.Background, error) {
			if l == nil {
				return nil, errNoLLM
			}
			if l.Engine.Draft == nil {
				return nil, fmt.Errorf("bench qos: policy %v needs a draft model", p)
			}
			st, err := l.Engine.ElasticStart(context.Background())
			if err != nil {
				return nil, err
			}
			g := st.Governor(p)
			src2 := &governorSamples{g: g}
			w := l.Workload(speculate.Config{Mode: speculate.ModeChain, DraftMax: draftMax, Deps: speculate.Deps{Governor: g}}, src2)
			return qos.BackgroundFunc(func(ctx context.Context) (qos.BackgroundResult, error) {
				if src2.since == 0 {
					src2.since = elastic.Monotonic()
				}
				res, err := w.Run(ctx)
				st := g.GovernorStats()
				if res.Notes == nil {
					res.Notes = map[string]float64{}
				}
				res.Notes["governor_preemptions"] = float64(st.Preemptions)
				res.Notes["governor_sleeps"] = float64(st.Sleeps)
				res.Notes["governor_contended_frac"] = float64(st.Contended) / max(1, float64(st.Readings))
				res.Notes["governor_cs_mean"] = st.CSMean
				res.Notes["governor_cs_p95"] = st.CSP95
				res.Notes["guardrail_relaxations"] = float64(st.Relaxations)
				res.Notes["guardrail_fallbacks"] = float64(st.Fallbacks)
				res.Notes["guardrail_fallback_s"] = st.FallbackTime.Seconds()
				for rows, n := range st.VerifyBatch {
					res.Notes[fmt.Sprintf("verify_batch_%d", rows)] = float64(n)
				}
				return res, err
			}), nil
		}}
}

// governorSamples hands the harness the governor's sensor log.
type governorSamples struct {
	g     *elastic.Governor
	since int64
	buf   []elastic.Sample
}

func (s *governorSamples) TakeSamples() []qos.Sample {
	s.buf = s.g.Samples(s.buf[:0], s.since)
	out := make([]qos.Sample, 0, len(s.buf))
	for _, x := range s.buf {
		out = append(out, qos.Sample{T: x.T, Value: float64(x.CS)})
	}
	if len(s.buf) > 0 {
		s.since = s.buf[len(s.buf)-1].T + 1
	}
	return out
}
