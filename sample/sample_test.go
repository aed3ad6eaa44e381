package sample

import (
	"fmt"
	"math"
	"testing"
)

func TestArgmaxAndGreedy(t *testing.T) {
	logits := []float32{1, 5, 3, 5, -2}
	if got := Argmax(logits); got != 1 {
		t.Fatalf("Argmax = %d, want 1 (first of ties)", got)
	}
	s, _ := New(Params{Temp: 0})
	if got := s.Sample(logits); got != 1 {
		t.Fatalf("greedy = %d", got)
	}
	// With a repetition penalty on token 1, greedy moves to token 3.
	s, _ = New(Params{Temp: 0, RepeatPenalty: 2})
	s.Accept(1)
	if got := s.Sample(logits); got != 3 {
		t.Fatalf("penalized greedy = %d, want 3", got)
	}
}

func TestDeterministicAndSpread(t *testing.T) {
	logits := make([]float32, 100)
	for i := range logits {
		logits[i] = float32(i%10) / 3
	}
	run := func(seed uint64) []int32 {
		s, err := New(Params{Temp: 1, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		out := make([]int32, 50)
		for i := range out {
			out[i] = s.Sample(logits)
		}
		return out
	}
	a, b, c := run(7), run(7), run(8)
	same := func(x, y []int32) bool {
		for i := range x {
			if x[i] != y[i] {
				return false
			}
		}
		return true
	}
	if !same(a, b) {
		t.Error("same seed, different tokens")
	}
	if same(a, c) {
		t.Error("different seeds, same 50 tokens")
	}
	distinct := map[int32]bool{}
	for _, x := range a {
		distinct[x] = true
	}
	if len(distinct) < 5 {
		t.Errorf("only %d distinct tokens at temp 1", len(distinct))
	}
}

func TestFilters(t *testing.T) {
	logits := []float32{0, 1, 2, 3, 4, 5, 6, 7}
	cases := []struct {
		name string
		p    Params
		want []int32 // surviving ids, best first
	}{
		{"top-k 3", Params{Temp: 1, TopK: 3}, []int32{7, 6, 5}},
		{"top-p 0.5", Params{Temp: 1, TopP: 0.5}, []int32{7}},
		{"top-p 0.9", Params{Temp: 1, TopP: 0.9}, []int32{7, 6, 5}},
		{"min-p 0.3", Params{Temp: 1, MinP: 0.3}, []int32{7, 6}},
		{"all", Params{Temp: 1}, []int32{7, 6, 5, 4, 3, 2, 1, 0}},
	}
	for _, tc := range cases {
		s, err := New(tc.p)
		if err != nil {
			t.Fatal(err)
		}
		d := s.Distribution(logits)
		if len(d) != len(tc.want) {
			t.Errorf("%s: %d candidates, want %d", tc.name, len(d), len(tc.want))
			continue
		}
		var sum float64
		for i, c := range d {
			if c.ID != tc.want[i] {
				t.Errorf("%s: candidate %d = %d, want %d", tc.name, i, c.ID, tc.want[i])
			}
			sum += float64(c.P)
		}
		if math.Abs(sum-1) > 1e-5 {
			t.Errorf("%s: probabilities sum to %v", tc.name, sum)
		}
	}
}

func TestTemperatureSharpens(t *testing.T) {
	logits := []float32{0, 1, 2}
	cold, _ := New(Params{Temp: 0.1})
	hot, _ := New(Params{Temp: 2})
	pc := cold.Distribution(logits)[0].P
	ph := hot.Distribution(logits)[0].P
	if !(pc > 0.99 && ph < 0.6) {
		t.Errorf("top probability cold %v, hot %v", pc, ph)
	}
}

func TestValidate(t *testing.T) {
	inf := float32(math.Inf(1))
	for _, p := range []Params{{TopP: 2}, {MinP: -1}, {Temp: float32(math.NaN())}, {TopK: -1}, {RepeatPenalty: -1},
		{Temp: -1}, {Temp: -inf}, {Temp: inf}, {TopP: -inf}, {MinP: inf}, {RepeatPenalty: inf}} {
		if _, err := New(p); err == nil {
			t.Errorf("%+v accepted", p)
		}
	}
}

// TestNonFiniteLogits: whatever the logits, a sampler returns a token
// inside the vocabulary and a distribution of non-negative probabilities
// summing to 1: NaN counts as -Inf, +Inf tokens share the mass.
func TestNonFiniteLogits(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for _, tc := range []struct {
		name   string
		logits []float32
		want   int32   // Argmax
		only   []int32 // the tokens any sampler may draw (nil: any)
	}{
		{"nan first", []float32{nan, 1, 3, 2}, 2, []int32{1, 2, 3}},
		{"all nan", []float32{nan, nan, nan}, 0, nil},
		{"+inf", []float32{1, inf, 2, inf}, 1, []int32{1, 3}},
		{"all -inf", []float32{-inf, -inf}, 0, nil},
		{"nan and -inf", []float32{-inf, nan, -inf, 0.5}, 3, []int32{3}},
		{"mixed", []float32{nan, inf, -inf, 7, nan}, 1, []int32{1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Argmax(tc.logits); got != tc.want {
				t.Errorf("Argmax = %d, want %d", got, tc.want)
			}
			for _, p := range []Params{{Temp: 0}, {Temp: 0, RepeatPenalty: 1.3}, Defaults(), {Temp: 1.5, TopK: 2}, {Temp: 0.7, MinP: 0.2, TopP: 0.5}} {
				s, err := New(p)
				if err != nil {
					t.Fatal(err)
				}
				s.Accept(1)
				for range 20 {
					x := s.Sample(tc.logits)
					if x < 0 || int(x) >= len(tc.logits) {
						t.Fatalf("%+v: sampled %d of %d", p, x, len(tc.logits))
					}
					if tc.only != nil && !contains(tc.only, x) {
						t.Fatalf("%+v: sampled %d, want one of %v", p, x, tc.only)
					}
				}
				var sum float64
				for _, c := range s.Distribution(tc.logits) {
					if !(c.P >= 0 && c.P <= 1) {
						t.Fatalf("%+v: P(%d) = %v", p, c.ID, c.P)
					}
					sum += float64(c.P)
				}
				if math.Abs(sum-1) > 1e-5 {
					t.Fatalf("%+v: probabilities sum to %v", p, sum)
				}
			}
		})
	}
}

func contains(xs []int32, x int32) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// TestPenaltiesAndBias checks the processed logits against OpenAI's
// formula (logit − count·frequency − presence) after llama.cpp's
// repetition penalty, with the bias added first.
func TestPenaltiesAndBias(t *testing.T) {
	logits := []float32{2, 1, -1, 0.5, 3}
	hist := []int32{0, 0, 2, 0, 9, -1} // 9 and -1 are outside the vocabulary: ignored
	cases := []struct {
		name string
		p    Params
		want []float32 // processed logit by token id
	}{
		{"frequency", Params{Temp: 1, FrequencyPenalty: 0.5}, []float32{2 - 1.5, 1, -1 - 0.5, 0.5, 3}},
		{"presence", Params{Temp: 1, PresencePenalty: 1}, []float32{1, 1, -2, 0.5, 3}},
		{"negative presence", Params{Temp: 1, PresencePenalty: -1}, []float32{3, 1, 0, 0.5, 3}},
		{"repeat then frequency", Params{Temp: 1, RepeatPenalty: 2, FrequencyPenalty: 0.25}, []float32{1 - 0.75, 1, -2 - 0.25, 0.5, 3}},
		{"bias before the penalty", Params{Temp: 1, RepeatPenalty: 2, LogitBias: map[int32]float32{0: -4, 3: 1}}, []float32{-4, 1, -2, 1.5, 3}},
		{"window", Params{Temp: 1, FrequencyPenalty: 1, RepeatLastN: 2}, []float32{2, 1, -1, 0.5, 3}},
	}
	for _, tc := range cases {
		s, err := New(tc.p)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hist {
			s.Accept(h)
		}
		got := make([]float32, len(logits))
		for _, c := range s.Distribution(logits) {
			got[c.ID] = c.Logit
		}
		for i := range got {
			if math.Abs(float64(got[i]-tc.want[i])) > 1e-6 {
				t.Errorf("%s: token %d logit %v, want %v", tc.name, i, got[i], tc.want[i])
			}
		}
	}
}

// TestGreedyHonoursBiasAndPenalties: greedy picks the best processed
// logit, so a bias or a presence penalty moves it.
func TestGreedyHonoursBiasAndPenalties(t *testing.T) {
	logits := []float32{1, 5, 3, 4.5}
	cases := []struct {
		name string
		p    Params
		hist []int32
		want int32
	}{
		{"plain", Params{}, nil, 1},
		{"ban", Params{LogitBias: map[int32]float32{1: -100}}, nil, 3},
		{"force", Params{LogitBias: map[int32]float32{0: 100}}, nil, 0},
		{"presence", Params{PresencePenalty: 1}, []int32{1}, 3},
		{"frequency", Params{FrequencyPenalty: 0.3}, []int32{1, 1}, 3},
		{"no history", Params{PresencePenalty: 2}, nil, 1},
	}
	for _, tc := range cases {
		s, err := New(tc.p)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range tc.hist {
			s.Accept(h)
		}
		if got := s.Sample(logits); got != tc.want {
			t.Errorf("%s: greedy picked %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestValidatePenaltiesAndBias(t *testing.T) {
	nan := float32(math.NaN())
	bad := []Params{
		{FrequencyPenalty: 2.5}, {FrequencyPenalty: -2.1}, {FrequencyPenalty: nan},
		{PresencePenalty: 3}, {PresencePenalty: nan},
		{LogitBias: map[int32]float32{1: 101}}, {LogitBias: map[int32]float32{1: nan}},
		{LogitBias: map[int32]float32{-1: 1}},
	}
	for _, p := range bad {
		if _, err := New(p); err == nil {
			t.Errorf("%+v accepted", p)
		}
	}
	good := Params{FrequencyPenalty: -2, PresencePenalty: 2, LogitBias: map[int32]float32{3: -100, 4: 100}}
	if _, err := New(good); err != nil {
		t.Errorf("%+v refused: %v", good, err)
	}
	if err := good.CheckBias(5); err != nil {
		t.Errorf("ids 3 and 4 in a vocabulary of 5: %v", err)
	}
	if err := good.CheckBias(4); err == nil {
		t.Error("id 4 in a vocabulary of 4 accepted")
	}
}

func TestLogprobs(t *testing.T) {
	logits := []float32{1, 3, 2, 3, -1}
	var sum float64
	for _, l := range logits {
		sum += math.Exp(float64(l))
	}
	want := func(i int) float32 { return float32(float64(logits[i]) - math.Log(sum)) }
	cases := []struct {
		tok     int32
		n       int
		wantTop []int32
	}{
		{2, 0, nil},
		{0, 2, []int32{1, 3}}, // a tie: the lower id first
		{4, 3, []int32{1, 3, 2}},
		{1, 9, []int32{1, 3, 2, 0, 4}}, // n beyond the vocabulary
	}
	for _, tc := range cases {
		lp, top := Logprobs(logits, tc.tok, tc.n, nil)
		if math.Abs(float64(lp-want(int(tc.tok)))) > 1e-6 {
			t.Errorf("token %d: logprob %v, want %v", tc.tok, lp, want(int(tc.tok)))
		}
		if len(top) != len(tc.wantTop) {
			t.Fatalf("token %d, n %d: top %v, want ids %v", tc.tok, tc.n, top, tc.wantTop)
		}
		for i, c := range top {
			if c.ID != tc.wantTop[i] || math.Abs(float64(c.Logprob-want(int(c.ID)))) > 1e-6 {
				t.Errorf("token %d, n %d: top[%d] = %+v, want id %d logprob %v", tc.tok, tc.n, i, c, tc.wantTop[i], want(int(tc.wantTop[i])))
			}
		}
	}
	// Large logits do not overflow; out-of-range ids and NaN get -Inf.
	big := []float32{1000, 999, float32(math.NaN())}
	if lp, _ := Logprobs(big, 0, 0, nil); math.Abs(float64(lp)+math.Log1p(math.Exp(-1))) > 1e-5 {
		t.Errorf("logprob of 1000 against 999: %v", lp)
	}
	for _, tok := range []int32{2, 3, -1} {
		if lp, _ := Logprobs(big, tok, 0, nil); !math.IsInf(float64(lp), -1) {
			t.Errorf("token %d: logprob %v, want -Inf", tok, lp)
		}
	}
}

// BenchmarkLogprobs is the cost of one token's log-probabilities on a
// Llama 3 sized vocabulary, against one stochastic Distribution on the
// same row (what every sampled token pays anyway).
func BenchmarkLogprobs(b *testing.B) {
	logits := make([]float32, 128256)
	for i := range logits {
		logits[i] = float32(math.Sin(float64(i)*0.37)) * 8
	}
	for _, n := range []int{0, 5, 20} {
		b.Run(fmt.Sprintf("top%d", n), func(b *testing.B) {
			top := make([]TokenLogprob, 0, n)
			for b.Loop() {
				_, top = Logprobs(logits, 7, n, top[:0])
			}
		})
	}
	b.Run("distribution", func(b *testing.B) {
		s, _ := New(Defaults())
		for b.Loop() {
			s.Distribution(logits)
		}
	})
}
