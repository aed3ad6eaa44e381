package speculate

import (
	"errors"
	"time"

	"shade/par"
)

// Governor paces a Decoder for the sake of other work on the machine: the
// elastic scheduler that yields memory bandwidth to the foreground app, or
// a simple rate cap. The decoder calls it at its yield points; a nil
// Governor changes nothing. Calls come from the goroutine running the
// decoder, one at a time.
type Governor interface {
	// DraftLayer is called after each layer of each draft-model pass, with
	// the rows of the pass and how long the layer took. Returning true
	// preempts: drafting stops at once and verification goes ahead with the
	// nodes drafted so far (possibly none).
	DraftLayer(layer, rows int, took time.Duration) (preempt bool)
	// VerifyRows is called before verification with the number of drafted
	// nodes and returns how many rows the verify pass should have (the
	// pending token plus nodes). When that is more than drafted+1 the
	// decoder fills the tree with n-gram continuations up to it; the target
	// verifies them like any draft, so the output does not change.
	// Anything ≤ drafted+1 keeps the tree as it is.
	VerifyRows(drafted int) int
	// VerifyLayer is called after each layer of every target pass (prefill
	// and verification); the decoder sleeps for the duration it returns.
	VerifyLayer(layer, rows int, took time.Duration) (sleep time.Duration)
	// StepDone reports a finished step: the tokens it produced and its wall
	// time including sleeps. The decoder pauses for the duration returned.
	StepDone(tokens int, took time.Duration) (pause time.Duration)
}

// errPreempted stops a draft pass from inside its layer hook.
var errPreempted = errors.New("speculate: draft preempted")

// sleepFor sleeps d (if positive) and returns it. The pool's idle workers
// park first, so that they do not poll through the pause on the cores the
// governor is yielding.
func sleepFor(pool *par.Pool, d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	pool.Rest()
	t0 := time.Now()
	time.Sleep(d)
	return time.Since(t0)
}

// Reporter is implemented by governors that report what they decided: the
// decoder puts Report's value in Stats.Governor (the elastic governor's is
// an *elastic.Stats).
type Reporter interface {
	Report() any
}

// governorReport asks g for its report when it gives one.
func governorReport(g Governor) any {
	if r, ok := g.(Reporter); ok {
		return r.Report()
	}
	return nil
}
