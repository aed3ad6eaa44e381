// Package par runs data-parallel loops on a fixed set of persistent worker
// goroutines. It is meant for the short, regular loops of a forward pass
// (matrix rows, attention heads), called thousands of times a second: a call
// spawns no goroutine and does not allocate. It is not a general task queue:
// a Pool runs one loop at a time.
package par

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
)

// Pool is a set of persistent workers that split loops over an index range.
// A Pool with threads T keeps T-1 worker goroutines; the goroutine calling
// For is the T-th and always takes part.
//
// A Pool is safe for sequential use only: one For call at a time, from any
// one goroutine at a time. fn itself may not call For on the same Pool.
// A nil *Pool is valid and runs every loop inline on the caller.
type Pool struct {
	threads int
	workers []chan *loop // one per worker goroutine; carries the loop to join
	done    sync.WaitGroup
	l       loop // the loop in flight, reused by every call
	closed  bool
}

// loop is one For call: the range, its split into chunks, and the chunks not
// yet claimed. Participants claim chunks with an atomic counter, so a worker
// that wakes late finds its share already done by the others.
type loop struct {
	fn     func(lo, hi int)
	n      int
	grain  int
	grains int // ceil(n / grain)
	chunks int
	next   atomic.Int64 // next chunk index to claim
	wg     sync.WaitGroup
	panicv atomic.Pointer[panicValue] // first panic raised by fn on a worker
}

type panicValue struct{ v any }

// New starts a pool of threads participants (threads-1 worker goroutines plus
// the caller). threads <= 0 means runtime.NumCPU().
func New(threads int) *Pool {
	if threads <= 0 {
		threads = runtime.NumCPU()
	}
	p := &Pool{threads: threads}
	p.workers = make([]chan *loop, threads-1)
	for i := range p.workers {
		ch := make(chan *loop, 1)
		p.workers[i] = ch
		p.done.Add(1)
		go p.work(ch)
	}
	return p
}

func (p *Pool) work(ch chan *loop) {
	defer p.done.Done()
	for l := range ch {
		l.runCatching()
		l.wg.Done()
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
	helpers := chunks - 1
	l.wg.Add(helpers)
	for _, ch := range p.workers[:helpers] {
		ch <- l
	}
	l.runCatching()
	l.wg.Wait()
	l.fn = nil // drop the reference so fn's captures can be collected
	if pv := l.panicv.Load(); pv != nil {
		panic(pv.v)
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
			// Let the other participants finish the remaining chunks.
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
	for _, ch := range p.workers {
		close(ch)
	}
	p.done.Wait()
	p.workers = nil
}

// String describes the pool for logs.
func (p *Pool) String() string { return fmt.Sprintf("par.Pool(%d threads)", p.Threads()) }
