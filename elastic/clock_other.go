//go:build !linux

package elastic

import "time"

// Monotonic is a monotonic clock in nanoseconds (CLOCK_MONOTONIC on Linux;
// elsewhere time since the package was loaded).
func Monotonic() int64 { return int64(time.Since(start)) }

var start = time.Now()

// ProcessCPUTime is not available here: -1.
func ProcessCPUTime() int64 { return -1 }
