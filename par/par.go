// Package par runs data-parallel loops on a fixed set of persistent worker
// goroutines. It is meant for the short, regular loops of a forward pass
// (matrix rows, attention heads), called thousands of times a second: a call
// spawns no goroutine and does not allocate. It is not a general task queue:
// a Pool runs one loop at a time.
//
// Waking a parked goroutine costs tens of microseconds on bare metal and
// more in a virtual machine, as long as a small loop takes, so workers that
// have just finished a chunk keep polling for the next loop for a while
// (spinWait) before they park, as ggml's thread pool does; back-to-back
// loops then start at once. A caller about to sleep calls Rest, which parks
// the idle workers at once.
//
// Each hand-off between two goroutines (a job to a worker that may be
// parking, a helper's finish to a caller that may be parking) is one atomic
// read-modify-write on one word that both sides change, so exactly one side
// sees the other and no wake-up can be lost. A flag-per-side hand-off ("I
// store mine, then load yours") is correct under Go's sequentially
// consistent atomics but needs store→load ordering between two locations,
// the one ordering weakly ordered machines and emulators relax first:
// qemu-user 7.2 on x86 runs arm64's STLR-then-LDAR without it, and such a
// pool deadlocked there.
package par

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"time"
)

// spinWait is how long an idle worker polls for new work before parking,
// and how long a caller polls for its helpers before it parks. It must
// outlast the gaps inside a forward pass: the per-row work between two
// matrix products, and the time one thread's share of a product runs on
// after the other's, which in decode reaches hundreds of microseconds. At
// 50µs both sides parked several times a token and paid a wake-up each
// time: the 1B Q4_K decode on Zen 4 (2 vCPUs, 2026-12-03) took 28.1 ms a
// token against 24.3 at 500µs, 24.6 at 1ms and 22.3 at 3ms (medians of four
// alternated runs). It only costs when work stops: a worker polls for
// spinWait once after the last loop of a burst, unless Rest parks it first.
// A variable so that the tests can make parking frequent.
var spinWait = 2 * time.Millisecond

// Pool is a set of persistent workers that split loops over an index range.
// A Pool with threads T keeps T-1 worker goroutines; the goroutine calling
// For is the T-th and always takes part.
//
// A Pool is safe for sequential use only: one For call at a time, from any
// one goroutine at a time. fn itself may not call For on the same Pool.
// A nil *Pool is valid and runs every loop inline on the caller.
type Pool struct {
	threads int
	workers []*worker
	l       loop          // the loop in flight, reused by every call
	exited  chan struct{} // one receive per worker that has exited
	closed  bool
}

// worker is one persistent goroutine. job is its whole state: nil while it
// is idle, parked once it has committed to sleeping (or Rest has put it to
// sleep), or the loop to run (exiting to stop). The caller swaps a loop in;
// if it swapped parked out, the worker is asleep or about to be, and gets
// exactly one token on wake.
type worker struct {
	job  atomic.Pointer[loop]
	wake chan struct{} // buffered 1; at most one token, one per park
}

// parked and exiting are sentinel values of worker.job.
var parked, exiting loop

// loop is one For call: the range, its split into chunks, and the chunks not
// yet claimed. Participants claim chunks with an atomic counter, so a worker
// that starts late finds its share already done by the others.
type loop struct {
	fn     func(lo, hi int)
	n      int
	grain  int
	chunks int
	next   atomic.Int64 // next chunk index to claim
	// state counts the helpers that have not finished, with waitBit set
	// once the caller has committed to parking on done.
	state  atomic.Int32
	done   chan struct{} // buffered 1; wakes a parked caller
	panicv atomic.Pointer[panicValue]
}

type panicValue struct{ v any }

// waitBit in loop.state marks a caller parked on loop.done.
const waitBit = 1 << 30

// MaxThreads is the most threads a pool should have: 4 per CPU. Workers
// spin between loops, so beyond the CPUs they only take turns, and each
// one costs a goroutine's stack and a wake-up per loop.
func MaxThreads() int { return 4 * runtime.NumCPU() }

// New starts a pool of threads participants (threads-1 worker goroutines plus
// the caller). threads <= 0 means runtime.NumCPU().
func New(threads int) *Pool {
	if threads <= 0 {
		threads = runtime.NumCPU()
	}
	p := &Pool{threads: threads, exited: make(chan struct{}, threads)}
	p.l.done = make(chan struct{}, 1)
	for i := 0; i < threads-1; i++ {
		w := &worker{wake: make(chan struct{}, 1)}
		p.workers = append(p.workers, w)
		go p.work(w)
	}
	return p
}

// work is a worker's life: run the loops it is handed; between loops poll
// for spinWait, then park until woken.
func (p *Pool) work(w *worker) {
	defer func() { p.exited <- struct{}{} }()
	// Loops read weights in place in mapped model files. A file truncated
	// under the process raises SIGBUS on the next read, fatal for the
	// whole process unless the goroutine asked for a panic: runCatching
	// then hands it to the caller, which can turn it into an error
	// (gguf.CatchFault), and the worker lives on for the next loop.
	debug.SetPanicOnFault(true)
	for {
		idleSince := time.Now()
		for spins := 0; ; spins++ {
			if j := w.job.Load(); j != nil {
				if j == &parked {
					// Rest parked this worker: the next post swaps a
					// loop in and sends the token.
					<-w.wake
					idleSince = time.Now()
					continue
				}
				// Only the caller stores a loop, and only into an idle or
				// parked worker, so this takes what the load saw.
				l := w.job.Swap(nil)
				if l == &exiting {
					return
				}
				l.runCatching()
				l.finish()
				idleSince = time.Now()
				continue
			}
			if spins%64 == 63 {
				if time.Since(idleSince) > spinWait {
					break
				}
				// Let other goroutines have this P: with more threads than
				// Ps, the caller may be waiting for one.
				runtime.Gosched()
			}
		}
		// Park, unless a loop arrived since the last look: then the swap
		// fails and the next poll takes it. Once parked is in, the caller's
		// swap takes it out and sends the token, so the loop is in job when
		// the token is received.
		if w.job.CompareAndSwap(nil, &parked) {
			<-w.wake
		}
	}
}

// Rest parks the pool's idle workers now rather than after spinWait of
// polling: a caller about to sleep (a governor's pause between layers or
// steps) calls it so that the workers leave their cores to the rest of the
// machine for the pause. The next loop wakes them, at the cost of a
// wake-up. Like For, Rest is for the pool's one caller at a time; on a nil
// or closed pool it does nothing.
func (p *Pool) Rest() {
	if p == nil || p.closed {
		return
	}
	for _, w := range p.workers {
		// An idle worker's job is nil; it sees parked at its next poll and
		// waits for a token, which post sends because it swaps parked out.
		w.job.CompareAndSwap(nil, &parked)
	}
}

// Threads reports how many goroutines share a loop (1 for a nil or closed pool).
func (p *Pool) Threads() int {
	if p == nil || p.closed {
		return 1
	}
	return p.threads
}

// For calls fn on contiguous chunks [lo, hi) that together cover [0, n),
// about one chunk per thread, and returns when all calls have returned.
// The chunks run concurrently, so fn must only write state owned by its own
// range. A panic in fn is re-raised on the caller after the other chunks end.
func (p *Pool) For(n int, fn func(lo, hi int)) { p.ForGrain(n, 1, fn) }

// ForGrain is For with every chunk boundary except n a multiple of grain, so
// that chunks can be aligned to blocks or tiles. grain < 1 counts as 1.
func (p *Pool) ForGrain(n, grain int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	if grain < 1 {
		grain = 1
	}
	grains := (n + grain - 1) / grain
	threads := p.Threads()
	if threads == 1 || grains == 1 {
		fn(0, n)
		return
	}
	chunks := min(threads, grains)

	l := &p.l
	l.fn, l.n, l.grain, l.chunks = fn, n, grain, chunks
	l.next.Store(0)
	l.panicv.Store(nil)
	helpers := p.workers[:chunks-1]
	l.state.Store(int32(len(helpers)))
	for _, w := range helpers {
		w.post(l)
	}
	l.runCatching()
	l.wait()
	l.fn = nil // drop the reference so fn's captures can be collected
	if pv := l.panicv.Load(); pv != nil {
		panic(pv.v)
	}
}

// post hands l to w, waking it if it has parked. The worker takes each
// token before it can park again, so the send never blocks for long.
func (w *worker) post(l *loop) {
	if w.job.Swap(l) == &parked {
		w.wake <- struct{}{}
	}
}

// wait returns once every helper has finished. The helpers have claimed or
// finished the other chunks, so it polls for spinWait, which costs less than
// parking and being woken, then parks in case a helper is held up (a busy
// machine, or more threads than cores).
func (l *loop) wait() {
	start := time.Now()
	for spins := 0; l.state.Load() != 0; spins++ {
		if spins%64 == 63 {
			if time.Since(start) > spinWait {
				break
			}
			runtime.Gosched()
		}
	}
	// Either the last helper's decrement comes after this, sees waitBit
	// and sends the token, or it came before and this sees a zero count.
	if l.state.Or(waitBit) != 0 {
		<-l.done
	}
}

// finish is a helper's last act in a loop: count itself out and wake the
// caller if it has parked.
func (l *loop) finish() {
	if l.state.Add(-1) == waitBit {
		l.done <- struct{}{}
	}
}

// Chunk returns chunk c of the split ForGrain makes of [0, n) into chunks
// runs of whole grains, so that a loop over several ranges at once can cut
// each the way ForGrain would cut it alone.
func Chunk(c, chunks, n, grain int) (lo, hi int) {
	grains := (n + grain - 1) / grain
	return c * grains / chunks * grain, min((c+1)*grains/chunks*grain, n)
}

// run claims and runs chunks until none is left.
func (l *loop) run() {
	for {
		c := int(l.next.Add(1) - 1)
		if c >= l.chunks {
			return
		}
		l.fn(Chunk(c, l.chunks, l.n, l.grain))
	}
}

// runCatching runs chunks and records the first panic instead of letting it
// kill the process from a worker goroutine.
func (l *loop) runCatching() {
	defer func() {
		if r := recover(); r != nil {
			l.panicv.CompareAndSwap(nil, &panicValue{r})
			// Let the other participants skip the remaining chunks.
			l.next.Store(int64(l.chunks))
		}
	}()
	l.run()
}

// Close stops the worker goroutines and waits for them to exit. After Close
// the pool runs loops inline, like a nil pool. Close is idempotent.
func (p *Pool) Close() {
	if p == nil || p.closed {
		return
	}
	p.closed = true
	for _, w := range p.workers {
		w.post(&exiting)
	}
	for range p.workers {
		<-p.exited
	}
	p.workers = nil
}

// String describes the pool for logs.
func (p *Pool) String() string { return fmt.Sprintf("par.Pool(%d threads)", p.Threads()) }
