package bench

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"shade/model"
	"shade/panelcache"
	"shade/quant"
	"shade/weights"
)

// Options configure Run.
type Options struct {
	Batches       []int // batch sizes of the batched-forward measurement
	DecodeTokens  int   // decode steps timed per repetition
	Reps          int   // repetitions of each measurement; medians are reported
	Prefix        int   // tokens in the cache before each decode and batch measurement (llama-bench's -d); ≤ 0: 32
	BandwidthSize int64 // bytes of the bandwidth probe's buffer
	SkipBandwidth bool
	// Prompts are the prompt lengths of the prompt-processing measurement
	// (llama-bench's pp<N>), each run from an empty cache in ubatches of
	// UBatch tokens (≤ 0: 512, llama.cpp's default); none: not measured.
	Prompts []int
	UBatch  int
	// Stream, if set, is the streamer serving the model's layers: the
	// decode measurement then reports streaming against the storage's
	// O_DIRECT bandwidth, read over DiskBytes of the model file (≤ 0: 512 MiB).
	Stream    *weights.Streamer
	DiskBytes int64
	// Progress, if set, is told what is being measured.
	Progress func(what string)
}

// DefaultBatches are the batch sizes `shade bench` measures.
var DefaultBatches = []int{1, 2, 4, 8, 16, 32, 64}

// ForwardResult is the speed of one batch size.
type ForwardResult struct {
	Batch     int     `json:"batch"`
	MsPerPass float64 `json:"ms_per_pass"`
	TokPerS   float64 `json:"tok_per_s"`
	CostVsOne float64 `json:"cost_vs_batch1"` // time of this pass / time of a one-row pass
	GMACs     float64 `json:"g_mac_per_s"`    // matrix multiply-adds per second
	PeakFrac  float64 `json:"int8_peak_fraction"`
}

// PromptResult is the speed of processing one prompt length, measured as
// llama-bench's pp<N> is: N random tokens from an empty cache, in
// ubatches of UBatch tokens (each a batched pass whose keys and values the
// next one attends to), logits of the last token only; tok/s = N / time.
type PromptResult struct {
	Tokens  int     `json:"tokens"`
	UBatch  int     `json:"ubatch"`
	Seconds float64 `json:"seconds"` // median over repetitions
	TokPerS float64 `json:"tok_per_s"`
	GMACs   float64 `json:"g_mac_per_s"` // matrix multiply-adds per second (attention not counted)
	// AttnShare is the share of the pass spent in attention over the cache
	// (q·Kᵀ, softmax, ·V), from the State's own timers.
	AttnShare float64 `json:"attention_share"`
	PeakFrac  float64 `json:"int8_peak_fraction"`
}

// Report is everything one run of Run measured.
type Report struct {
	Model       string  `json:"model"`
	Arch        string  `json:"arch"`
	CPU         CPUInfo `json:"cpu"`
	Threads     int     `json:"threads"`
	Kernels     string  `json:"kernels"`
	WeightBytes int64   `json:"weight_bytes"`
	// Depth is the tokens in the cache before each decode and batch
	// measurement; BytesPerToken what a decode step reads there: the
	// weights it computes with and KVBytesPerToken of keys and values.
	Depth           int             `json:"depth"`
	BytesPerToken   int64           `json:"decode_bytes_per_token"`
	KVBytesPerToken int64           `json:"decode_kv_bytes_per_token"`
	Bandwidth       BandwidthResult `json:"bandwidth"`
	Int8Peak        Int8Peak        `json:"int8_peak"`
	DecodeTokPerS   float64         `json:"decode_tok_per_s"`
	DecodeGBps      float64         `json:"decode_gb_per_s"`
	RooflineTokS    float64         `json:"roofline_tok_per_s"`
	RooflineFrac    float64         `json:"roofline_fraction"`
	// Probes are the bandwidth probes that bracket the decode repetitions
	// (one before each and one after the last, in GB/s); Bandwidth is the
	// median one.
	Probes []float64 `json:"bandwidth_probes_gb_per_s,omitempty"`
	// RepackBytes of weights were repacked into row panels in
	// RepackSeconds before anything was timed (quant.Repackable).
	RepackBytes   int64           `json:"repack_bytes"`
	RepackSeconds float64         `json:"repack_seconds"`
	Forward       []ForwardResult `json:"forward"`
	Prompt        []PromptResult  `json:"prompt,omitempty"`
	Stream        *StreamReport   `json:"stream,omitempty"`

	// Panels says where the repacked panels came from (panelcache).
	Panels panelcache.Result `json:"panels"`
}

func (o *Options) defaults() {
	if len(o.Batches) == 0 {
		o.Batches = DefaultBatches
	}
	if o.DecodeTokens <= 0 {
		o.DecodeTokens = 16
	}
	if o.Reps <= 0 {
		o.Reps = 5
	}
	if o.Prefix <= 0 {
		o.Prefix = 32
	}
	if o.BandwidthSize <= 0 {
		o.BandwidthSize = 1 << 30
	}
	if o.DiskBytes <= 0 {
		o.DiskBytes = 512 << 20
	}
	if o.UBatch <= 0 {
		o.UBatch = 512
	}
}

// Run measures, in one run: the machine's memory-read bandwidth with as
// many threads as the model's pool, decode speed (one token per pass, LM
// head included), and the time of a batched forward pass for each batch
// size (LM head on the last row, as a prompt pass). Decode speed is also
// expressed against the roofline, bandwidth / bytes read per token, with
// the bandwidth probed around every decode repetition.
func Run(m *model.Model, o Options) (Report, error) {
	o.defaults()
	c := m.Config
	// Decode reads the cache's keys and values (F16) of every layer for the
	// context, about Prefix tokens plus half the timed steps.
	kvBytes := int64(c.Layers) * 2 * int64(c.KVDim()) * 2 * int64(o.Prefix+o.DecodeTokens/2)
	r := Report{Model: c.Name, Arch: c.Arch, CPU: DetectCPU(), Threads: m.Pool.Threads(), Kernels: quant.Kernels(),
		WeightBytes: m.WeightBytes(), Depth: o.Prefix, BytesPerToken: m.DecodeBytes() + kvBytes, KVBytesPerToken: kvBytes}
	say := func(format string, args ...any) {
		if o.Progress != nil {
			o.Progress(fmt.Sprintf(format, args...))
		}
	}
	t0 := time.Now()
	r.RepackBytes = m.Repack()
	r.RepackSeconds = time.Since(t0).Seconds()
	r.Panels = m.PanelStats()
	maxBatch := 1
	for _, b := range o.Batches {
		if b < 1 {
			return r, fmt.Errorf("bench: batch size %d", b)
		}
		maxBatch = max(maxBatch, b)
	}
	ctx := o.Prefix + max(maxBatch, o.DecodeTokens) + 1
	if ctx > c.ContextLen {
		return r, fmt.Errorf("bench: a depth of %d tokens and %d more after it exceed the model's context of %d", o.Prefix, ctx-o.Prefix, c.ContextLen)
	}
	for _, p := range o.Prompts {
		if p < 1 {
			return r, fmt.Errorf("bench: prompt length %d", p)
		}
		ctx = max(ctx, p)
	}
	s, err := m.NewState(ctx)
	if err != nil {
		return r, err
	}
	rng := rand.New(rand.NewPCG(1, 2))
	tokens := func(n int) []int32 {
		t := make([]int32, n)
		for i := range t {
			t[i] = int32(rng.IntN(c.Vocab))
		}
		return t
	}
	logits := make([]float32, c.Vocab)
	prefix := tokens(o.Prefix)
	fill := func() error {
		if err := s.Truncate(0); err != nil {
			return err
		}
		say("depth: %d tokens into the cache", len(prefix))
		for lo := 0; lo < len(prefix); lo += o.UBatch {
			if err := s.Forward(model.Chain(prefix[lo:min(lo+o.UBatch, len(prefix))])); err != nil {
				return err
			}
			if err := s.CommitAll(); err != nil {
				return err
			}
		}
		return nil
	}
	if err := fill(); err != nil {
		return r, err
	}
	// The bandwidth of a shared machine drifts by half from second to
	// second, so a roofline probed once would flatter or shame decode
	// depending on the moment. Instead a probe runs before every decode
	// repetition and after the last; each repetition is compared with the
	// mean of the two probes around it, and the median ratio is reported.
	var bw *bandwidthProbe
	var probes []BandwidthResult
	probeOnce := func() {
		if bw != nil {
			probes = append(probes, bw.measure(bandwidthProbeReps))
		}
	}
	if !o.SkipBandwidth {
		say("memory bandwidth: %d threads, 1-8 streams each, before and after every decode repetition", r.Threads)
		bw = newBandwidthProbe(r.Threads, o.BandwidthSize)
		probeOnce()
	}

	// Decode: per-token times over all repetitions, median.
	say("decode: %d tokens × %d", o.DecodeTokens, o.Reps)
	var perToken, repGBps []float64
	one := []int32{0}
	if o.Stream != nil {
		say("disk: O_DIRECT reads of %s between the decode repetitions", m.File.Path)
	}
	probe := startStream(&o, m.File.Path, int64(m.File.DataOffset))
	for rep := range o.Reps {
		if probe != nil && rep > 0 {
			probe.measureDisk()
		}
		s.Truncate(o.Prefix)
		var times []float64
		for _, t := range tokens(o.DecodeTokens) {
			one[0] = t
			t0 := time.Now()
			if err := s.Forward(model.Chain(one)); err != nil {
				return r, err
			}
			if err := s.Logits([]int{0}, logits); err != nil {
				return r, err
			}
			if err := s.CommitAll(); err != nil {
				return r, err
			}
			times = append(times, time.Since(t0).Seconds())
			if probe != nil {
				probe.wall += time.Since(t0)
			}
		}
		perToken = append(perToken, times...)
		repGBps = append(repGBps, float64(r.BytesPerToken)/median(times)/1e9)
		probeOnce()
	}
	bw = nil // let the probe's buffer go before the batched passes
	r.DecodeTokPerS = 1 / median(perToken)
	r.DecodeGBps = r.DecodeTokPerS * float64(r.BytesPerToken) / 1e9
	if probe != nil {
		say("disk: O_DIRECT reads again")
		if r.Stream, err = probe.finish(r.DecodeTokPerS); err != nil {
			return r, err
		}
	}

	// Batched forward passes after the prefix, rolled back after each.
	var oneRow float64
	for _, b := range o.Batches {
		say("forward: batch %d × %d", b, o.Reps)
		batch := tokens(b)
		var times []float64
		for range o.Reps {
			s.Truncate(o.Prefix)
			t0 := time.Now()
			if err := s.Forward(model.Chain(batch)); err != nil {
				return r, err
			}
			if err := s.Logits([]int{b - 1}, logits); err != nil {
				return r, err
			}
			times = append(times, time.Since(t0).Seconds())
		}
		sec := median(times)
		if b == 1 {
			oneRow = sec
		}
		macs := float64(b)*float64(m.LayerMACs()) + float64(m.HeadMACs())
		fr := ForwardResult{Batch: b, MsPerPass: sec * 1e3, TokPerS: float64(b) / sec, GMACs: macs / sec / 1e9}
		if oneRow > 0 {
			fr.CostVsOne = sec / oneRow
		}
		r.Forward = append(r.Forward, fr)
	}

	for _, n := range o.Prompts {
		say("prompt: %d tokens in ubatches of %d × %d", n, o.UBatch, o.Reps)
		pr, err := runPrompt(s, tokens(n), o.UBatch, o.Reps, logits)
		if err != nil {
			return r, err
		}
		pr.GMACs = (float64(n)*float64(m.LayerMACs()) + float64(m.HeadMACs())) / pr.Seconds / 1e9
		r.Prompt = append(r.Prompt, pr)
	}
	s.Truncate(0)

	say("int8 peak: %d threads", r.Threads)
	r.Int8Peak = MeasureInt8Peak(r.Threads, o.Reps)
	if r.Int8Peak.GMACs > 0 {
		for i := range r.Forward {
			r.Forward[i].PeakFrac = r.Forward[i].GMACs / r.Int8Peak.GMACs
		}
		for i := range r.Prompt {
			r.Prompt[i].PeakFrac = r.Prompt[i].GMACs / r.Int8Peak.GMACs
		}
	}
	if len(probes) == o.Reps+1 {
		var ratios []float64
		for i, g := range repGBps {
			ratios = append(ratios, g/((probes[i].GBps+probes[i+1].GBps)/2))
		}
		r.RooflineFrac = median(ratios)
		r.RooflineTokS = r.DecodeTokPerS / r.RooflineFrac
		for _, p := range probes {
			r.Probes = append(r.Probes, p.GBps)
		}
		r.Bandwidth = medianProbe(probes)
	}
	return r, nil
}

// runPrompt processes prompt from an empty cache reps times, in ubatches
// of ubatch tokens committed one after the other, and returns the median
// time; the attention share is that of the median repetition.
func runPrompt(s *model.State, prompt []int32, ubatch, reps int, logits []float32) (PromptResult, error) {
	type rep struct{ sec, attn float64 }
	var runs []rep
	for range reps {
		if err := s.Truncate(0); err != nil {
			return PromptResult{}, err
		}
		s.AttnTime = 0
		t0 := time.Now()
		for lo := 0; lo < len(prompt); lo += ubatch {
			hi := min(lo+ubatch, len(prompt))
			if err := s.Forward(model.Chain(prompt[lo:hi])); err != nil {
				return PromptResult{}, err
			}
			if hi == len(prompt) {
				if err := s.Logits([]int{hi - lo - 1}, logits); err != nil {
					return PromptResult{}, err
				}
			}
			if err := s.CommitAll(); err != nil {
				return PromptResult{}, err
			}
		}
		sec := time.Since(t0).Seconds()
		runs = append(runs, rep{sec, s.AttnTime.Seconds() / sec})
	}
	slices.SortFunc(runs, func(a, b rep) int { return cmp.Compare(a.sec, b.sec) })
	mid := runs[(len(runs)-1)/2]
	return PromptResult{Tokens: len(prompt), UBatch: ubatch, Seconds: mid.sec, TokPerS: float64(len(prompt)) / mid.sec, AttnShare: mid.attn}, nil
}

// bandwidthProbeReps is how often each stream count is read in one probe
// of the decode measurement: twice keeps a probe near a quarter second on
// a 1 GiB buffer, so it stays next to the repetition it is compared with.
const bandwidthProbeReps = 2

// medianProbe returns the probe of median bandwidth (the lower middle one
// of an even count).
func medianProbe(probes []BandwidthResult) BandwidthResult {
	sorted := slices.Clone(probes)
	slices.SortFunc(sorted, func(a, b BandwidthResult) int { return cmp.Compare(a.GBps, b.GBps) })
	return sorted[(len(sorted)-1)/2]
}
