package server

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"shade/elastic"
	"shade/engine"
)

// metrics are the server's Prometheus series, in a registry of its own (so
// that two servers in one process, as in tests, do not collide).
type metrics struct {
	reg *prometheus.Registry

	requests     *prometheus.CounterVec // by endpoint, HTTP status code
	promptTokens prometheus.Counter
	genTokens    prometheus.Counter
	tokPerSec    prometheus.Gauge
	duration     *prometheus.HistogramVec // by priority
	ttft         *prometheus.HistogramVec // by priority
	drafted      prometheus.Counter
	accepted     prometheus.Counter
	specSteps    prometheus.Counter
	acceptRate   prometheus.Gauge
	meanAccepted prometheus.Gauge
	contention   prometheus.Gauge
	controller   *prometheus.CounterVec // by action
	resident     prometheus.Gauge
	streamed     prometheus.CounterFunc
	queueDepth   *prometheus.GaugeVec // by priority
	preemptions  prometheus.Counter
	rejected     prometheus.Counter
	policy       *prometheus.GaugeVec // 1 for the current policy
	// The elastic governor's view (background requests).
	csP95       prometheus.Gauge
	control     prometheus.Gauge
	verifyBatch *prometheus.CounterVec // by rows asked for
	sleepSec    prometheus.Counter
	deficit     prometheus.Gauge
	fallbackSec prometheus.Counter
	inFallback  prometheus.Gauge
}

// newMetrics makes the server's metrics; streamedBytes reports the weight
// bytes read from storage so far (nil: none are streamed).
func newMetrics(streamedBytes func() float64) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	f := func(c prometheus.Collector) { m.reg.MustRegister(c) }
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shade_requests_total",
		Help: "HTTP requests by endpoint and status code."}, []string{"endpoint", "code"})
	m.promptTokens = prometheus.NewCounter(prometheus.CounterOpts{Name: "shade_prompt_tokens_total", Help: "Prompt tokens processed (tokens in)."})
	m.genTokens = prometheus.NewCounter(prometheus.CounterOpts{Name: "shade_generated_tokens_total", Help: "Tokens generated (tokens out)."})
	m.tokPerSec = prometheus.NewGauge(prometheus.GaugeOpts{Name: "shade_generation_tokens_per_second", Help: "Decode speed of the last finished generation."})
	buckets := []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "shade_request_duration_seconds",
		Help: "Time from a generation request's arrival to its end.", Buckets: buckets}, []string{"priority"})
	m.ttft = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "shade_time_to_first_token_seconds",
		Help: "Time from a generation request's arrival to its first text.", Buckets: buckets}, []string{"priority"})
	m.drafted = prometheus.NewCounter(prometheus.CounterOpts{Name: "shade_spec_drafted_tokens_total", Help: "Draft tokens proposed by speculative decoding."})
	m.accepted = prometheus.NewCounter(prometheus.CounterOpts{Name: "shade_spec_accepted_tokens_total", Help: "Draft tokens accepted by the target."})
	m.specSteps = prometheus.NewCounter(prometheus.CounterOpts{Name: "shade_spec_steps_total", Help: "Decoding steps (target verification passes)."})
	m.acceptRate = prometheus.NewGauge(prometheus.GaugeOpts{Name: "shade_spec_acceptance_rate", Help: "Accepted ÷ drafted tokens over all generations so far."})
	m.meanAccepted = prometheus.NewGauge(prometheus.GaugeOpts{Name: "shade_spec_mean_accepted_length", Help: "Mean draft tokens accepted per step over all generations so far."})
	m.contention = prometheus.NewGauge(prometheus.GaugeOpts{Name: "shade_contention_score",
		Help: "Mean contention score CS = (T - T_base)/T_base of the draft-layer readings of the last background step (0: none, or no elastic governor)."})
	m.controller = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shade_controller_actions_total",
		Help: "Elastic controller decisions by action: preempt (a draft cut short), sleep (a micro-sleep between target layers), widen_verify (an n-gram-filled verify batch), relax (the guardrail relaxed the target), fallback (the guardrail suspended control)."}, []string{"action"})
	m.csP95 = prometheus.NewGauge(prometheus.GaugeOpts{Name: "shade_contention_score_p95", Help: "95th percentile of the contention score over the elastic governor's readings so far."})
	m.control = prometheus.NewGauge(prometheus.GaugeOpts{Name: "shade_elastic_control_output", Help: "The elastic PI controller's output: 0 (no action) to 1 (full)."})
	m.verifyBatch = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shade_elastic_verify_batches_total",
		Help: "Verify passes by the batch the elastic governor asked for (0: the tree as drafted)."}, []string{"rows"})
	m.sleepSec = prometheus.NewCounter(prometheus.CounterOpts{Name: "shade_elastic_sleep_seconds_total", Help: "Micro-sleep time between target layers."})
	m.deficit = prometheus.NewGauge(prometheus.GaugeOpts{Name: "shade_elastic_guardrail_deficit_tokens", Help: "Tokens the token-bucket guardrail is owed (negative: ahead)."})
	m.fallbackSec = prometheus.NewCounter(prometheus.CounterOpts{Name: "shade_elastic_fallback_seconds_total", Help: "Generation time spent in the guardrail's fallback to uncontrolled speculation."})
	m.inFallback = prometheus.NewGauge(prometheus.GaugeOpts{Name: "shade_elastic_in_fallback", Help: "1 while the guardrail has suspended elastic control."})
	m.resident = prometheus.NewGauge(prometheus.GaugeOpts{Name: "shade_resident_bytes", Help: "Resident set size of the process."})
	if streamedBytes == nil {
		streamedBytes = func() float64 { return 0 }
	}
	m.streamed = prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "shade_streamed_weight_bytes_total",
		Help: "Weight bytes streamed from storage under the DRAM budget (0 while every weight is resident)."}, streamedBytes)
	m.queueDepth = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "shade_queue_depth",
		Help: "Generation requests waiting or running, by priority."}, []string{"priority"})
	m.preemptions = prometheus.NewCounter(prometheus.CounterOpts{Name: "shade_preemptions_total", Help: "Background generations paused for a foreground one."})
	m.rejected = prometheus.NewCounter(prometheus.CounterOpts{Name: "shade_queue_rejected_total", Help: "Requests refused with 429 because the queue was full."})
	m.policy = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "shade_background_policy",
		Help: "1 for the background policy in force."}, []string{"policy"})
	for _, c := range []prometheus.Collector{m.requests, m.promptTokens, m.genTokens, m.tokPerSec, m.duration, m.ttft,
		m.drafted, m.accepted, m.specSteps, m.acceptRate, m.meanAccepted, m.contention, m.controller, m.resident,
		m.streamed, m.queueDepth, m.preemptions, m.rejected, m.policy,
		m.csP95, m.control, m.verifyBatch, m.sleepSec, m.deficit, m.fallbackSec, m.inFallback,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})} {
		f(c)
	}
	for _, a := range []string{"preempt", "sleep", "widen_verify", "relax", "fallback"} {
		m.controller.WithLabelValues(a)
	}
	for _, p := range []string{"foreground", "background"} {
		m.queueDepth.WithLabelValues(p)
	}
	return m
}

// finished records a generation's totals.
func (m *metrics) finished(st engine.Stats, totalDrafted, totalAccepted, totalSteps *int) {
	m.promptTokens.Add(float64(st.PromptTokens))
	if st.GenTPS > 0 {
		m.tokPerSec.Set(st.GenTPS)
	}
	m.resident.Set(float64(engine.ResidentBytes()))
	if s := st.Spec; s != nil {
		m.drafted.Add(float64(s.Drafted))
		m.accepted.Add(float64(s.Accepted))
		m.specSteps.Add(float64(s.Steps))
		*totalDrafted += s.Drafted
		*totalAccepted += s.Accepted
		*totalSteps += s.Steps
		if *totalDrafted > 0 {
			m.acceptRate.Set(float64(*totalAccepted) / float64(*totalDrafted))
		}
		if *totalSteps > 0 {
			m.meanAccepted.Set(float64(*totalAccepted) / float64(*totalSteps))
		}
	}
}

func (m *metrics) setPolicy(p string) {
	m.policy.Reset()
	m.policy.WithLabelValues(p).Set(1)
}

// governorObserver turns the elastic governor's running totals into metric
// increments.
type governorObserver struct {
	last    elastic.Stats
	samples []elastic.Sample
	since   int64
}

func (o *governorObserver) observe(m *metrics, g *elastic.Governor) {
	st := g.GovernorStats()
	m.controller.WithLabelValues("preempt").Add(float64(max(0, st.Preemptions-o.last.Preemptions)))
	m.controller.WithLabelValues("sleep").Add(float64(max(0, st.Sleeps-o.last.Sleeps)))
	m.controller.WithLabelValues("relax").Add(float64(max(0, st.Relaxations-o.last.Relaxations)))
	m.controller.WithLabelValues("fallback").Add(float64(max(0, st.Fallbacks-o.last.Fallbacks)))
	widened := 0
	for rows, n := range st.VerifyBatch {
		d := n - o.last.VerifyBatch[rows]
		if d > 0 {
			m.verifyBatch.WithLabelValues(strconv.Itoa(rows)).Add(float64(d))
			if rows > 0 {
				widened += d
			}
		}
	}
	m.controller.WithLabelValues("widen_verify").Add(float64(widened))
	m.sleepSec.Add(max(0, (st.SleepTime - o.last.SleepTime).Seconds()))
	m.fallbackSec.Add(max(0, (st.FallbackTime - o.last.FallbackTime).Seconds()))
	m.csP95.Set(st.CSP95)
	m.control.Set(g.Output())
	m.deficit.Set(st.Deficit)
	m.inFallback.Set(map[bool]float64{true: 1}[st.InFallback])
	o.samples = g.Samples(o.samples[:0], o.since)
	if len(o.samples) > 0 {
		var sum float64
		for _, s := range o.samples {
			sum += float64(s.CS)
		}
		m.contention.Set(sum / float64(len(o.samples)))
		o.since = o.samples[len(o.samples)-1].T + 1
	}
	o.last = st
}
