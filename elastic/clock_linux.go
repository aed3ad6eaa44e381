package elastic

import (
	"time"

	"golang.org/x/sys/unix"
)

// Monotonic is CLOCK_MONOTONIC in nanoseconds: the clock the sample log
// uses, so that another process or package (the foreground simulator) can
// line its own timestamps up with the sensor's.
func Monotonic() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return int64(time.Since(start))
	}
	return ts.Nano()
}

var start = time.Now()

// ProcessCPUTime is the CPU time of the whole process in nanoseconds
// (CLOCK_PROCESS_CPUTIME_ID), or -1 when it cannot be read.
func ProcessCPUTime() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts); err != nil {
		return -1
	}
	return ts.Nano()
}
