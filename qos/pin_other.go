//go:build !linux

package qos

import (
	"errors"
	"runtime"
	"time"
)

var errNoAffinity = errors.New("qos: CPU pinning needs Linux")

// PinProcess is not available off Linux.
func PinProcess(cpu int) error { return errNoAffinity }

// NumCPU is the number of CPUs.
func NumCPU() int { return runtime.NumCPU() }

var epoch = time.Now()

// Now is a monotonic time in nanoseconds (off Linux not CLOCK_MONOTONIC,
// so it lines up only with this process's own timestamps).
func Now() int64 { return int64(time.Since(epoch)) }

// LastCPU is the highest-numbered CPU.
func LastCPU() int { return runtime.NumCPU() - 1 }

// PinProcessTemporarily is not available off Linux.
func PinProcessTemporarily(cpu int) (func() error, error) { return nil, errNoAffinity }

// SetProcessNice is not available off Linux.
func SetProcessNice(nice int) error { return errNoAffinity }

// RunqueueWait is not known off Linux.
func RunqueueWait() time.Duration { return 0 }

// ThreadCPUTime is not available off Linux.
func ThreadCPUTime() int64 { return -1 }

// PinThread is not available off Linux.
func PinThread(cpu int) error { return errNoAffinity }
