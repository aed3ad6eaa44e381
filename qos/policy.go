package qos

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"shade/spec"
)

// Policy is one way of running (or not running) the background LLM, as a
// row of `shade bench qos`. New builds a fresh workload for one run (a
// controller starts from scratch every run); llm is nil when the
// experiment has no model, and New of a policy that needs one then fails.
type Policy struct {
	Name    string
	Summary string
	// Native marks a policy that runs nothing beside the foreground: its
	// frames are the reference that slowdowns are measured against.
	Native bool
	New    func(llm *LLM) (Background, error)
}

var (
	policyMu sync.Mutex
	policies []Policy
)

// RegisterPolicy adds a policy, or replaces the one of the same name
// (keeping its place in the order), so that other packages (the elastic
// controller) and commands (with their flags' values) can provide theirs.
func RegisterPolicy(p Policy) error {
	if p.Name == "" || strings.ContainsAny(p.Name, ", \t\n") || p.New == nil {
		return fmt.Errorf("qos: a policy needs a name without commas or spaces and a New function")
	}
	policyMu.Lock()
	defer policyMu.Unlock()
	for i := range policies {
		if policies[i].Name == p.Name {
			policies[i] = p
			return nil
		}
	}
	policies = append(policies, p)
	return nil
}

// Policies returns the registered policies in registration order.
func Policies() []Policy {
	policyMu.Lock()
	defer policyMu.Unlock()
	return slices.Clone(policies)
}

// LookupPolicies resolves a comma-separated list of policy names; "" or
// "all" is every registered policy.
func LookupPolicies(list string) ([]Policy, error) {
	all := Policies()
	if list == "" || list == "all" {
		return all, nil
	}
	var out []Policy
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		i := slices.IndexFunc(all, func(p Policy) bool { return p.Name == name })
		if i < 0 {
			var names []string
			for _, p := range all {
				names = append(names, p.Name)
			}
			return nil, fmt.Errorf("qos: unknown policy %q (registered: %s)", name, strings.Join(names, ", "))
		}
		if !slices.ContainsFunc(out, func(p Policy) bool { return p.Name == name }) {
			out = append(out, all[i])
		}
	}
	return out, nil
}

var errNoLLM = errors.New("qos: this policy needs a background LLM")

// Native runs no LLM: the foreground alone.
func Native() Policy {
	return Policy{Name: "native", Summary: "no background LLM", Native: true,
		New: func(*LLM) (Background, error) { return Idle(), nil }}
}

// AR is plain autoregressive decoding, uncontrolled.
func AR() Policy {
	return Policy{Name: "ar", Summary: "plain decoding, no control",
		New: func(l *LLM) (Background, error) {
			if l == nil {
				return nil, errNoLLM
			}
			return l.Workload(spec.Config{Mode: spec.ModeOff}, nil), nil
		}}
}

// Spec is plain speculative decoding (a chain of DraftMax tokens from the
// draft model, or n-gram lookup without one), uncontrolled.
func Spec(draftMax int) Policy {
	return Policy{Name: "spec", Summary: fmt.Sprintf("speculative decoding (draft-model chain of %d, no control)", draftMax),
		New: func(l *LLM) (Background, error) {
			if l == nil {
				return nil, errNoLLM
			}
			mode := spec.ModeChain
			if l.Engine.Draft == nil {
				mode = spec.ModeNgram
			}
			return l.Workload(spec.Config{Mode: mode, DraftMax: draftMax}, nil), nil
		}}
}

// FreqLimit caps plain decoding at tokPerS: after each step it pauses until
// the tokens made so far are no more than the cap allows.
func FreqLimit(tokPerS float64) Policy {
	return Policy{Name: "freq-limit", Summary: fmt.Sprintf("plain decoding capped at %g tok/s", tokPerS),
		New: func(l *LLM) (Background, error) {
			if l == nil {
				return nil, errNoLLM
			}
			if !(tokPerS > 0) {
				return nil, fmt.Errorf("qos: freq-limit rate %v tok/s must be positive", tokPerS)
			}
			return l.Workload(spec.Config{Mode: spec.ModeOff, Deps: spec.Deps{Governor: &RateCap{TokPerS: tokPerS}}}, nil), nil
		}}
}

// ChunkSleep is plain decoding that sleeps for sleep after every chunk of
// layers target layers.
func ChunkSleep(layers int, sleep time.Duration) Policy {
	return Policy{Name: "chunk-sleep", Summary: fmt.Sprintf("plain decoding, %v sleep after every %d layers", sleep, layers),
		New: func(l *LLM) (Background, error) {
			if l == nil {
				return nil, errNoLLM
			}
			if layers < 1 || sleep < 0 || sleep > time.Second {
				return nil, fmt.Errorf("qos: chunk-sleep needs ≥ 1 layer per chunk and a sleep in [0, 1s]")
			}
			return l.Workload(spec.Config{Mode: spec.ModeOff, Deps: spec.Deps{Governor: &ChunkSleeper{Layers: layers, Sleep: sleep}}}, nil), nil
		}}
}

// Defaults of the built-in baselines.
const (
	DefaultDraftMax    = 8
	DefaultRateCap     = 8.0 // tok/s: about half of plain decoding of a 1B Q4_0 model on one core here
	DefaultChunkLayers = 4
	DefaultChunkSleep  = 4 * time.Millisecond
)

func init() {
	for _, p := range []Policy{Native(), AR(), Spec(DefaultDraftMax), FreqLimit(DefaultRateCap),
		ChunkSleep(DefaultChunkLayers, DefaultChunkSleep)} {
		if err := RegisterPolicy(p); err != nil {
			panic(err)
		}
	}
}

// RateCap is a spec.Governor that holds the average rate since its first
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

// ChunkSleeper is a spec.Governor that sleeps for Sleep after every Layers
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
