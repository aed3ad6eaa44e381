package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// pinProcess restricts every thread of the process to one CPU (threads
// made later inherit it) and returns a function restoring the old mask.
func pinProcess(cpu int) (restore func(), err error) {
	var old unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		return nil, err
	}
	if cpu < 0 || cpu >= runtime.NumCPU() {
		return nil, fmt.Errorf("CPU %d out of range [0, %d)", cpu, runtime.NumCPU())
	}
	var set unix.CPUSet
	set.Set(cpu)
	if err := setAllThreads(&set); err != nil {
		return nil, err
	}
	return func() { setAllThreads(&old) }, nil
}

func setAllThreads(set *unix.CPUSet) error {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return unix.SchedSetaffinity(0, set)
	}
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, set); err != nil && err != unix.ESRCH {
			return fmt.Errorf("pinning thread %d: %w", tid, err)
		}
	}
	return nil
}

// pinThread locks the calling goroutine to its OS thread and that thread
// to cpu (for a contention source running beside a pinned process).
func pinThread(cpu int) error {
	runtime.LockOSThread()
	var set unix.CPUSet
	set.Set(cpu)
	return unix.SchedSetaffinity(0, &set)
}
