package par

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// cover runs ForGrain and checks that every index in [0, n) is visited
// exactly once, chunk boundaries are multiples of grain, and there are no
// more chunks than threads.
func cover(t *testing.T, p *Pool, n, grain int) {
	t.Helper()
	seen := make([]int32, n)
	var chunks atomic.Int32
	var bad atomic.Value
	p.ForGrain(n, grain, func(lo, hi int) {
		chunks.Add(1)
		if lo < 0 || hi > n || lo >= hi {
			bad.Store(fmt.Sprintf("bad chunk [%d,%d)", lo, hi))
			return
		}
		g := max(grain, 1)
		if lo%g != 0 || (hi != n && hi%g != 0) {
			bad.Store(fmt.Sprintf("chunk [%d,%d) not aligned to grain %d", lo, hi, g))
		}
		for i := lo; i < hi; i++ {
			atomic.AddInt32(&seen[i], 1)
		}
	})
	if s := bad.Load(); s != nil {
		t.Fatalf("n=%d grain=%d threads=%d: %s", n, grain, p.Threads(), s)
	}
	for i, c := range seen {
		if c != 1 {
			t.Fatalf("n=%d grain=%d threads=%d: index %d visited %d times", n, grain, p.Threads(), i, c)
		}
	}
	if c := int(chunks.Load()); n > 0 && (c < 1 || c > p.Threads()) {
		t.Fatalf("n=%d grain=%d threads=%d: %d chunks", n, grain, p.Threads(), c)
	}
}

func TestForCovers(t *testing.T) {
	for _, threads := range []int{1, 2, 3, 4, 7} {
		p := New(threads)
		for _, n := range []int{0, 1, 2, 3, 5, 7, 16, 31, 100, 1000, 4097} {
			for _, grain := range []int{0, 1, 3, 16, 64} {
				cover(t, p, n, grain)
			}
		}
		p.Close()
	}
}

func TestNilAndClosedPoolRunInline(t *testing.T) {
	var p *Pool
	if p.Threads() != 1 {
		t.Fatalf("nil pool Threads() = %d, want 1", p.Threads())
	}
	calls := 0
	p.For(10, func(lo, hi int) {
		calls++
		if lo != 0 || hi != 10 {
			t.Fatalf("nil pool chunk [%d,%d), want [0,10)", lo, hi)
		}
	})
	if calls != 1 {
		t.Fatalf("nil pool: %d calls, want 1", calls)
	}

	q := New(3)
	q.Close()
	q.Close() // idempotent
	if q.Threads() != 1 {
		t.Fatalf("closed pool Threads() = %d, want 1", q.Threads())
	}
	cover(t, q, 50, 1)
}

func TestNewDefaultsToNumCPU(t *testing.T) {
	p := New(0)
	defer p.Close()
	if p.Threads() < 1 {
		t.Fatalf("Threads() = %d", p.Threads())
	}
}

func TestForUsesSeveralGoroutines(t *testing.T) {
	p := New(3)
	defer p.Close()
	// Each chunk waits until all three are running at once; with fewer
	// participants this would spin forever, so bound it.
	var running atomic.Int32
	var failed atomic.Bool
	p.For(3, func(lo, hi int) {
		running.Add(1)
		for i := 0; running.Load() < 3; i++ {
			if i > 1e8 {
				failed.Store(true)
				return
			}
		}
	})
	if failed.Load() {
		t.Skip("workers did not run concurrently (machine too busy?)")
	}
}

// TestSlowHelper makes the caller wait longer than spinWait for a helper, so
// that it parks and must be woken.
func TestSlowHelper(t *testing.T) {
	p := New(2)
	defer p.Close()
	for round := 0; round < 5; round++ {
		var started, finished atomic.Int32
		p.For(2, func(lo, hi int) {
			if lo == 0 {
				// Wait until another goroutine holds chunk 1.
				for started.Load() == 0 {
					runtime.Gosched()
				}
			} else {
				started.Store(1)
				time.Sleep(2 * time.Millisecond)
			}
			finished.Add(1)
		})
		if finished.Load() != 2 {
			t.Fatalf("round %d: For returned with %d of 2 chunks finished", round, finished.Load())
		}
	}
}

func TestPanicReachesCaller(t *testing.T) {
	p := New(3)
	defer p.Close()
	for round := 0; round < 2; round++ { // the pool stays usable after a panic
		func() {
			defer func() {
				if r := recover(); r != "boom" {
					t.Fatalf("recovered %v, want boom", r)
				}
			}()
			p.For(30, func(lo, hi int) {
				if lo <= 25 && 25 < hi {
					panic("boom")
				}
			})
			t.Fatal("For returned normally")
		}()
		cover(t, p, 30, 1)
	}
}

func TestForDoesNotAllocate(t *testing.T) {
	p := New(3)
	defer p.Close()
	var sink atomic.Int64
	fn := func(lo, hi int) { sink.Add(int64(hi - lo)) }
	allocs := testing.AllocsPerRun(100, func() { p.ForGrain(1000, 8, fn) })
	if allocs != 0 {
		t.Fatalf("ForGrain allocates %v times per call", allocs)
	}
}

func ExamplePool_For() {
	p := New(4)
	defer p.Close()
	x := make([]float32, 1000)
	p.For(len(x), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			x[i] = float32(i) * 2
		}
	})
	fmt.Println(x[999])
	// Output: 1998
}

// BenchmarkForOverhead measures the cost of one near-empty parallel loop:
// waking the workers and waiting for them.
func BenchmarkForOverhead(b *testing.B) {
	for _, threads := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
			p := New(threads)
			defer p.Close()
			var sink atomic.Int64
			fn := func(lo, hi int) { sink.Add(int64(hi - lo)) }
			b.ReportAllocs()
			for b.Loop() {
				p.For(64, fn)
			}
		})
	}
}

// TestFaultInWorker: a worker reading a mapped file truncated under it
// (SIGBUS) must not end the process: the fault reaches the caller as a
// panic it can recover (its goroutine asks for one too), and the pool runs
// the next loops.
func TestFaultInWorker(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mapped")
	page := os.Getpagesize()
	if err := os.WriteFile(path, make([]byte, 64*page), 0o644); err != nil {
		t.Fatal(err)
	}
	fd, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	data, err := unix.Mmap(int(fd.Fd()), 0, 64*page, unix.PROT_READ, unix.MAP_SHARED)
	fd.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(data)
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	withAddr := faultHasAddr(data)
	if !withAddr {
		t.Log("this platform reports SIGBUS without its address (qemu-user does): not checking the address")
	}
	p := New(4)
	defer p.Close()
	for round := range 3 {
		r := func() (r any) {
			defer func() { r = recover() }()
			defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
			var sink atomic.Int64
			p.For(64, func(lo, hi int) {
				for i := lo; i < hi; i++ {
					sink.Add(int64(data[i*page]))
				}
			})
			return nil
		}()
		if _, ok := r.(runtime.Error); !ok {
			t.Fatalf("round %d: recovered %v (%T), want a runtime fault", round, r, r)
		}
		if _, ok := r.(interface{ Addr() uintptr }); !ok && withAddr {
			t.Fatalf("round %d: recovered %v (%T), want a fault with its address", round, r, r)
		}
		var hits [64]atomic.Int32
		p.For(len(hits), func(lo, hi int) {
			for i := lo; i < hi; i++ {
				hits[i].Add(1)
			}
		})
		for i := range hits {
			if hits[i].Load() != 1 {
				t.Fatalf("round %d: after a fault, index %d ran %d times", round, i, hits[i].Load())
			}
		}
	}
}

// faultHasAddr reports whether a fault reading data on this goroutine comes
// with its address, as Linux gives it. qemu-user delivers SIGBUS with a zero
// address, which the runtime reports as a nil dereference with none.
func faultHasAddr(data []byte) (ok bool) {
	defer func() {
		_, ok = recover().(interface{ Addr() uintptr })
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	faultSink = data[0]
	return false
}

var faultSink byte

// TestParkWake runs loops with pauses longer than spinWait between them, so
// that workers park and the caller parks on slow helpers, at every phase of
// the hand-off: a wake-up lost by either side hangs the test (and the
// binary's -timeout reports it).
func TestParkWake(t *testing.T) {
	defer func(d time.Duration) { spinWait = d }(spinWait)
	spinWait = 50 * time.Microsecond
	for _, threads := range []int{2, 3, 5} {
		p := New(threads)
		var sum atomic.Int64
		for i := range 300 {
			want := sum.Load() + 64
			p.For(64, func(lo, hi int) {
				if i%3 == 1 && lo == 0 {
					// The caller's chunk ends late: helpers finish first.
					time.Sleep(time.Duration(i%7) * 20 * time.Microsecond)
				}
				if i%3 == 2 && lo != 0 {
					// A helper ends late: the caller may park on it.
					time.Sleep(time.Duration(i%5) * 30 * time.Microsecond)
				}
				sum.Add(int64(hi - lo))
			})
			if got := sum.Load(); got != want {
				t.Fatalf("threads %d, loop %d: covered %d indices, want %d", threads, i, got-want+64, 64)
			}
			if i%4 == 0 {
				// Long enough for idle workers to park.
				time.Sleep(time.Duration(60+i%90) * time.Microsecond)
			}
		}
		p.Close()
	}
}

// TestRest parks idle workers with Rest between loops, at random moments
// after a loop (helpers still finishing, polling or already parked), and
// checks that every loop still runs whole and Close still returns: a
// wake-up lost after Rest hangs the test.
func TestRest(t *testing.T) {
	for _, threads := range []int{2, 3, 5} {
		p := New(threads)
		var sum atomic.Int64
		for i := range 400 {
			want := sum.Load() + 97
			p.For(97, func(lo, hi int) {
				if i%5 == 3 && lo != 0 {
					time.Sleep(time.Duration(i%4) * 15 * time.Microsecond)
				}
				sum.Add(int64(hi - lo))
			})
			if got := sum.Load(); got != want {
				t.Fatalf("threads %d, loop %d: covered %d indices, want %d", threads, i, got-want+97, 97)
			}
			switch i % 3 {
			case 0:
				p.Rest()
			case 1:
				p.Rest()
				p.Rest() // twice: the second finds the workers parked
				time.Sleep(time.Duration(i%50) * time.Microsecond)
			}
		}
		p.Rest()
		p.Close()
		p.Rest() // closed: nothing to do
	}
	var nilPool *Pool
	nilPool.Rest()
}

// TestRestParks checks that Rest parks the workers at once, long before
// spinWait would: after it, each worker's job is the parked sentinel, and
// the next loop wakes every one of them.
func TestRestParks(t *testing.T) {
	defer func(d time.Duration) { spinWait = d }(spinWait)
	spinWait = time.Hour // without Rest, workers would poll for the whole test
	p := New(3)
	defer p.Close()
	p.For(3, func(lo, hi int) {})
	p.Rest()
	for i, w := range p.workers {
		if w.job.Load() != &parked {
			t.Fatalf("worker %d: job %p after Rest, want parked", i, w.job.Load())
		}
	}
	// Each chunk waits until all three have started, which only three
	// goroutines at once can do: each parked worker was woken.
	var ran atomic.Int32
	p.For(3, func(lo, hi int) {
		ran.Add(1)
		for deadline := time.Now().Add(10 * time.Second); ran.Load() < 3 && time.Now().Before(deadline); {
			runtime.Gosched()
		}
	})
	if ran.Load() != 3 {
		t.Fatalf("after Rest, a loop of 3 chunks ran %d", ran.Load())
	}
}
