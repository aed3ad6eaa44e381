package qos

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// PinProcess restricts every OS thread of this process to CPU cpu. Go
// creates threads at will, so each existing thread (each task in
// /proc/self/task) is pinned; threads created later inherit the mask of
// the thread that creates them, which is now the same.
func PinProcess(cpu int) error {
	if cpu < 0 || cpu >= 1024 {
		return fmt.Errorf("qos: CPU %d out of range", cpu)
	}
	var set unix.CPUSet
	set.Set(cpu)
	return SetProcessAffinity(&set)
}

// SetProcessAffinity sets the CPU mask of every thread of this process
// (PinProcess's general form; also how a test or a harness restores the
// mask it found).
func SetProcessAffinity(set *unix.CPUSet) error {
	if set.Count() == 0 {
		return fmt.Errorf("qos: empty CPU set")
	}
	// Threads may appear while we walk the list; walk until a pass finds
	// none left unpinned.
	done := map[int]bool{}
	for pass := 0; pass < 10; pass++ {
		tids, err := threadIDs()
		if err != nil {
			return err
		}
		fresh := 0
		for _, tid := range tids {
			if done[tid] {
				continue
			}
			fresh++
			if err := unix.SchedSetaffinity(tid, set); err != nil {
				if err == unix.ESRCH { // the thread has exited
					continue
				}
				if err == unix.EINVAL {
					return fmt.Errorf("qos: CPU set %v names no CPU this process may use: %w", cpuList(set), err)
				}
				return fmt.Errorf("qos: sched_setaffinity(thread %d): %w", tid, err)
			}
			done[tid] = true
		}
		if fresh == 0 {
			return nil
		}
	}
	return nil
}

// ProcessAffinity returns the CPU mask of the calling thread.
func ProcessAffinity() (unix.CPUSet, error) {
	var set unix.CPUSet
	err := unix.SchedGetaffinity(0, &set)
	return set, err
}

// ThreadAffinities returns the CPU mask of every thread of this process.
func ThreadAffinities() (map[int]unix.CPUSet, error) {
	tids, err := threadIDs()
	if err != nil {
		return nil, err
	}
	out := map[int]unix.CPUSet{}
	for _, tid := range tids {
		var set unix.CPUSet
		if err := unix.SchedGetaffinity(tid, &set); err != nil {
			if err == unix.ESRCH {
				continue
			}
			return nil, err
		}
		out[tid] = set
	}
	return out, nil
}

func threadIDs() ([]int, error) {
	entries, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil, fmt.Errorf("qos: listing threads: %w", err)
	}
	var tids []int
	for _, e := range entries {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, tid)
		}
	}
	return tids, nil
}

// NumCPU is the number of CPUs this process may run on.
func NumCPU() int {
	set, err := ProcessAffinity()
	if err != nil {
		return 1
	}
	return set.Count()
}

// Now is the CLOCK_MONOTONIC time in nanoseconds: the clock every
// timestamp of this package is on, so that samples taken by another
// process line up with frames.
func Now() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic("qos: clock_gettime(CLOCK_MONOTONIC): " + err.Error()) // cannot fail on Linux
	}
	return ts.Nano()
}

// LastCPU is the highest-numbered CPU this process may run on (where the
// foreground goes by default; the background takes the others).
func LastCPU() int {
	set, err := ProcessAffinity()
	if err != nil {
		return 0
	}
	last := 0
	for c := range 1024 {
		if set.IsSet(c) {
			last = c
		}
	}
	return last
}

// PinProcessTemporarily pins the process to cpu and returns a function
// that restores the mask the calling thread had.
func PinProcessTemporarily(cpu int) (restore func() error, err error) {
	old, err := ProcessAffinity()
	if err != nil {
		return nil, err
	}
	if err := PinProcess(cpu); err != nil {
		return nil, err
	}
	return func() error { return SetProcessAffinity(&old) }, nil
}

func cpuList(set *unix.CPUSet) []int {
	var out []int
	for c := range 1024 {
		if set.IsSet(c) {
			out = append(out, c)
		}
	}
	return out
}

// SetProcessNice sets the nice value of every thread of this process (on
// Linux, nice is per thread; threads created later inherit it). The
// foreground runs at a UI thread's priority (Android gives its UI and
// render threads nice −10 and −4), so that other processes sharing its CPU
// take less of it than the app would give them; lowering it needs
// CAP_SYS_NICE.
func SetProcessNice(nice int) error {
	if nice < -20 || nice > 19 {
		return fmt.Errorf("qos: nice %d outside [-20, 19]", nice)
	}
	tids, err := threadIDs()
	if err != nil {
		return err
	}
	for _, tid := range tids {
		if err := unix.Setpriority(unix.PRIO_PROCESS, tid, nice); err != nil && err != unix.ESRCH {
			return fmt.Errorf("qos: setpriority(thread %d, %d): %w", tid, nice, err)
		}
	}
	return nil
}

// RunqueueWait is the time the calling OS thread has spent runnable but
// waiting for a CPU (/proc/thread-self/schedstat): for a pinned frame
// loop locked to its thread, time other processes took its core. Zero
// when the kernel does not keep the statistics.
func RunqueueWait() time.Duration {
	b, err := os.ReadFile("/proc/thread-self/schedstat")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	n, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0
	}
	return time.Duration(n)
}

// ThreadCPUTime is the calling thread's CPU time in nanoseconds
// (CLOCK_THREAD_CPUTIME_ID), or -1 when it cannot be read. Time the
// thread waits for memory is CPU time; time another process holds the
// core is not.
func ThreadCPUTime() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return -1
	}
	return ts.Nano()
}

// PinThread locks the calling goroutine to its OS thread and that thread
// to cpu (a contention source running beside a pinned process, say). The
// goroutine keeps the thread until it exits.
func PinThread(cpu int) error {
	runtime.LockOSThread()
	var set unix.CPUSet
	set.Set(cpu)
	return unix.SchedSetaffinity(0, &set)
}
