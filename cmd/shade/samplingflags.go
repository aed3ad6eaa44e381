package main

import (
	"flag"
	"fmt"
	"strconv"
	"strings"

	"shade/sample"
)

// samplingFlags are the sampler's flags, shared by run and chat.
type samplingFlags struct {
	temp, topP, minP, repeat, presence, frequency *float64
	topK                                          *int
	bias                                          biasFlag
}

// addSamplingFlags adds the sampling flags with def's values as defaults.
func addSamplingFlags(fs *flag.FlagSet, def sample.Params) *samplingFlags {
	f := &samplingFlags{bias: biasFlag{}}
	f.temp = fs.Float64("temp", shortFloat(def.Temp), "sampling temperature; 0 is greedy")
	f.topK = fs.Int("top-k", def.TopK, "keep the K most likely tokens (0: off)")
	f.topP = fs.Float64("top-p", shortFloat(def.TopP), "keep the smallest set of tokens whose probability reaches P (1: off)")
	f.minP = fs.Float64("min-p", shortFloat(def.MinP), "drop tokens less likely than P × the most likely (0: off)")
	f.repeat = fs.Float64("repeat-penalty", shortFloat(def.RepeatPenalty), "penalize the last 64 tokens by this factor (1: off)")
	f.presence = fs.Float64("presence-penalty", 0, "subtract this from the logit of every token that occurs in the last 64 (OpenAI's presence_penalty, in [-2, 2]; 0: off)")
	f.frequency = fs.Float64("frequency-penalty", 0, "subtract this × its count in the last 64 tokens from a token's logit (OpenAI's frequency_penalty, in [-2, 2]; 0: off)")
	fs.Var(f.bias, "logit-bias", "bias a token: `ID=BIAS` adds BIAS (in [-100, 100]) to token ID's logit (repeatable; -100 bans the token)")
	return f
}

// params are the flags' sampling parameters, validated.
func (f *samplingFlags) params(seed uint64) (sample.Params, error) {
	p := sample.Params{
		Temp: float32(*f.temp), TopK: *f.topK, TopP: float32(*f.topP), MinP: float32(*f.minP),
		RepeatPenalty: float32(*f.repeat), RepeatLastN: 64, Seed: seed,
		PresencePenalty: float32(*f.presence), FrequencyPenalty: float32(*f.frequency),
	}
	if len(f.bias) > 0 {
		p.LogitBias = f.bias
	}
	return p, p.Validate()
}

// biasFlag is the repeatable --logit-bias ID=BIAS.
type biasFlag map[int32]float32

func (b biasFlag) String() string {
	var parts []string
	for id, v := range b {
		parts = append(parts, fmt.Sprintf("%d=%v", id, v))
	}
	return strings.Join(parts, ",")
}

func (b biasFlag) Set(s string) error {
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		id, err1 := strconv.ParseInt(k, 10, 32)
		bias, err2 := strconv.ParseFloat(v, 32)
		if !ok || err1 != nil || err2 != nil || id < 0 {
			return fmt.Errorf("%q is not ID=BIAS (a token id and a number)", part)
		}
		b[int32(id)] = float32(bias)
	}
	return nil
}

// stopFlag is the repeatable --stop TEXT.
type stopFlag []string

func (s *stopFlag) String() string { return strings.Join(*s, ",") }

func (s *stopFlag) Set(v string) error {
	if v == "" {
		return fmt.Errorf("a stop sequence must not be empty")
	}
	*s = append(*s, unescapeStop(v))
	return nil
}

// unescapeStop turns \n, \t and \\ in a stop flag into the characters,
// so that a shell user can stop at a newline.
func unescapeStop(v string) string {
	return strings.NewReplacer(`\\`, `\`, `\n`, "\n", `\t`, "\t").Replace(v)
}
