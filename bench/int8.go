package bench

import (
	"slices"
	"strings"
	"sync"
	"time"

	"shade/quant"
)

// int8Loop is a register-only loop of the int8 multiply-add instructions a
// family of kernels is built from: iters iterations of macsPerIter
// multiply-adds, with a checksum the work cannot be dropped from (each
// accumulator lane grows by a known amount per iteration).
type int8Loop struct {
	name        string
	kernels     string // the quant kernel set built on it
	macsPerIter int64
	sumPerIter  int32 // lane 0 of the folded accumulators, per iteration
	run         func(iters int) int32
}

// int8Loops lists the loops this CPU can run, best first. The report
// compares kernels with the loop of the kernel set in use (int8LoopFor).
// Empty where the CPU (or a noasm build) has none.
var int8Loops []int8Loop

// int8PeakMACs is the work of one thread in one repetition: about half a
// second on a core of 3 G multiply-add instructions a second.
var int8PeakMACs int64 = 1_500_000_000

// noInt8Loop is the Instruction of a report made without an int8 loop.
const noInt8Loop = "none (no int8 loop for this CPU or build)"

// Int8Peak is the int8 multiply-add rate the cores reach in a loop of
// independent dot-product instructions on registers: the ceiling a
// batched quantized matmul could approach.
type Int8Peak struct {
	GMACs       float64 `json:"g_mac_per_s"` // all threads; 0 when Instruction is none
	Threads     int     `json:"threads"`
	Instruction string  `json:"instruction"`
}

// MeasureInt8Peak runs the int8 loop of the kernel set in use
// (quant.Kernels: avx2's VPMADDUBSW chain when SHADE_KERNELS=avx2 forces it
// on a VNNI CPU, so that a batch is compared with the instructions its
// kernels run) on threads goroutines at once, reps times (at least
// minInt8Reps), and reports the best rate: a ceiling, which other work on
// the machine or a clock dip can only lower, so the best of several is the
// steadier estimate (a median of two once read 581 G/s against the ~810
// around it and made a batch look 68% of the peak instead of 46%). Where
// there is no loop it says so in Instruction and reports no rate.
func MeasureInt8Peak(threads, reps int) Int8Peak {
	if len(int8Loops) == 0 {
		return Int8Peak{Threads: threads, Instruction: noInt8Loop}
	}
	l := int8LoopFor(quant.Kernels())
	iters := int(int8PeakMACs / l.macsPerIter)
	var rates []float64
	for range max(reps, minInt8Reps) {
		var wg sync.WaitGroup
		var mu sync.Mutex
		var total int64
		start := time.Now()
		for range threads {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sum := l.run(iters)
				mu.Lock()
				total += int64(iters) * l.macsPerIter
				sinkVal ^= uint64(sum)
				mu.Unlock()
			}()
		}
		wg.Wait()
		rates = append(rates, float64(total)/time.Since(start).Seconds()/1e9)
	}
	return Int8Peak{GMACs: slices.Max(rates), Threads: threads, Instruction: l.name}
}

// int8LoopFor returns the loop of kernel set set ("avx2+panels" is avx2),
// or the best loop when no loop belongs to the set (generic).
func int8LoopFor(set string) int8Loop {
	set = strings.TrimSuffix(set, "+panels")
	for _, l := range int8Loops {
		if l.kernels == set {
			return l
		}
	}
	return int8Loops[0]
}

// minInt8Reps is the fewest repetitions MeasureInt8Peak takes its best of;
// one is a few milliseconds.
const minInt8Reps = 5
