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
