// Package par runs data-parallel loops on a fixed set of persistent worker
// goroutines. It is meant for the short, regular loops of a forward pass
// (matrix rows, attention heads), called thousands of times a second: a call
// spawns no goroutine and does not allocate. It is not a general task queue:
// a Pool runs one loop at a time.
//
// Waking a parked goroutine costs tens of microseconds, as long as a small
// loop takes, so workers that have just finished a chunk keep polling for
// the next loop for a short while (spinWait) before they park, as ggml's
// thread pool does; back-to-back loops then start at once.
package par

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"time"
)

// spinWait is how long an idle worker polls for new work before parking.
const spinWait = 50 * time.Microsecond

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
	l       loop // the loop in flight, reused by every call
	closing atomic.Bool
	exited  chan struct{} // one receive per worker that has exited
	closed  bool
}

// worker is one persistent goroutine. The caller hands it a loop through job
// and, if the worker has parked, a token on wake.
type worker struct {
	job    atomic.Pointer[loop]
	parked atomic.Bool
	wake   chan struct{} // buffered 1
}

// loop is one For call: the range, its split into chunks, and the chunks not
// yet claimed. Participants claim chunks with an atomic counter, so a worker
// that starts late finds its share already done by the others.
type loop struct {
	fn      func(lo, hi int)
	n       int
	grain   int
	grains  int // ceil(n / grain)
	chunks  int
	next    atomic.Int64  // next chunk index to claim
	pending atomic.Int32  // helpers that have not finished
	waiting atomic.Bool   // the caller has parked on done
	done    chan struct{} // buffered 1; wakes a parked caller
	panicv  atomic.Pointer[panicValue]
}

type panicValue struct{ v any }

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
			if l := w.job.Load(); l != nil {
				w.job.Store(nil)
				l.runCatching()
				l.finish()
				idleSince = time.Now()
				continue
			}
			if p.closing.Load() {
				return
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
		// Park. The caller stores the job before reading parked, and we set
		// parked before re-reading the job, so one of us sees the other.
		w.parked.Store(true)
		if w.job.Load() == nil && !p.closing.Load() {
			<-w.wake
		}
		w.parked.Store(false)
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
	l.fn, l.n, l.grain, l.grains, l.chunks = fn, n, grain, grains, chunks
	l.next.Store(0)
	l.panicv.Store(nil)
	helpers := p.workers[:chunks-1]
	l.pending.Store(int32(len(helpers)))
	for _, w := range helpers {
		w.job.Store(l)
		if w.parked.Load() {
			select {
			case w.wake <- struct{}{}:
			default: // a token is already waiting
			}
		}
	}
	l.runCatching()
	l.wait()
	l.fn = nil // drop the reference so fn's captures can be collected
	if pv := l.panicv.Load(); pv != nil {
		panic(pv.v)
	}
}

// wait returns once every helper has finished. The helpers have claimed or
// finished the other chunks, so it polls for spinWait, which costs less than
// parking and being woken, then parks in case a helper is held up (a busy
// machine, or more threads than cores).
func (l *loop) wait() {
	start := time.Now()
	for spins := 0; l.pending.Load() != 0; spins++ {
		if spins%64 == 63 {
			if time.Since(start) > spinWait {
				break
			}
			runtime.Gosched()
		}
	}
	l.waiting.Store(true)
	// A token left by an earlier loop only costs one more check.
	for l.pending.Load() != 0 {
		<-l.done
	}
	l.waiting.Store(false)
}

// finish is a helper's last act in a loop: count itself out and wake the
// caller if it has parked.
func (l *loop) finish() {
	if l.pending.Add(-1) == 0 && l.waiting.Load() {
		select {
		case l.done <- struct{}{}:
		default:
		}
	}
}

// run claims and runs chunks until none is left.
func (l *loop) run() {
	for {
		c := int(l.next.Add(1) - 1)
		if c >= l.chunks {
			return
		}
		lo := c * l.grains / l.chunks * l.grain
		hi := min((c+1)*l.grains/l.chunks*l.grain, l.n)
		l.fn(lo, hi)
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
	p.closing.Store(true)
	for _, w := range p.workers {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
	for range p.workers {
		<-p.exited
	}
	p.workers = nil
}

// String describes the pool for logs.
func (p *Pool) String() string { return fmt.Sprintf("par.Pool(%d threads)", p.Threads()) }
