package qos

import (
	"context"
	"fmt"
	"sync"

	"shade/elastic"
	"shade/engine"
	"shade/spec"
)

// Elastic is elastic speculative decoding under policy p: the draft-model
// chain of the spec policy, paced by the elastic governor (draft
// preemption, verify batches filled from n-grams, micro-sleeps, and for
// balanced the token-bucket guardrail). Its contention samples are the
// governor's own sensor readings. The governor's baselines come from the
// models' contention calibration, or are measured once per engine before
// the first run (on the quiet machine between runs).
func Elastic(p elastic.Policy, draftMax int) Policy {
	return Policy{Name: p.String(), Summary: fmt.Sprintf("elastic speculation, %v policy (CS target %.2f, guardrail %v; draft chain of %d)", p, p.Target(), p.Guardrail(), draftMax),
		New: func(l *LLM) (Background, error) {
			if l == nil {
				return nil, errNoLLM
			}
			if l.Engine.Draft == nil {
				return nil, fmt.Errorf("qos: policy %v needs a draft model", p)
			}
			base, gains, src, err := elasticSetup(l.Engine)
			if err != nil {
				return nil, err
			}
			g := elastic.New(elastic.Config{Policy: p, Baselines: base, BaselineSource: src, Gains: gains,
				CPUTime: elastic.ProcessCPUTime, Threads: l.Engine.Draft.Pool.Threads()})
			src2 := &governorSamples{g: g}
			w := l.Workload(spec.Config{Mode: spec.ModeChain, DraftMax: draftMax, Deps: spec.Deps{Governor: g}}, src2)
			return BackgroundFunc(func(ctx context.Context) (BackgroundResult, error) {
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

func (s *governorSamples) TakeSamples() []Sample {
	s.buf = s.g.Samples(s.buf[:0], s.since)
	out := make([]Sample, 0, len(s.buf))
	for _, x := range s.buf {
		out = append(out, Sample{T: x.T, Value: float64(x.CS)})
	}
	if len(s.buf) > 0 {
		s.since = s.buf[len(s.buf)-1].T + 1
	}
	return out
}

var (
	elasticMu    sync.Mutex
	elasticCache = map[*engine.Engine]elasticBase{}
)

type elasticBase struct {
	base  *elastic.Baselines
	gains elastic.Gains
	src   string
}

// elasticSetup finds the governor's baselines and gains for an engine once.
func elasticSetup(e *engine.Engine) (*elastic.Baselines, elastic.Gains, string, error) {
	elasticMu.Lock()
	defer elasticMu.Unlock()
	if b, ok := elasticCache[e]; ok {
		return b.base, b.gains, b.src, nil
	}
	var b elasticBase
	c, err := elastic.LoadCalibration(e.Model.File.Path, e.Draft.File.Path)
	if err != nil {
		return nil, elastic.Gains{}, "", err
	}
	if c != nil {
		b = elasticBase{&c.Baselines, c.Gains, "calibrated"}
	} else {
		base, err := elastic.MeasureBaselines(context.Background(), e.Draft, elastic.MeasureOptions{Rows: elastic.StartupRows, Passes: 5})
		if err != nil {
			return nil, elastic.Gains{}, "", err
		}
		b = elasticBase{base, elastic.DefaultGains, "measured at start-up"}
	}
	elasticCache[e] = b
	return b.base, b.gains, b.src, nil
}

func init() {
	for _, p := range []elastic.Policy{elastic.Balanced, elastic.UIFirst} {
		if err := RegisterPolicy(Elastic(p, DefaultDraftMax)); err != nil {
			panic(err)
		}
	}
}
