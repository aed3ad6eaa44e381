package engine

import (
	"runtime"

	"shade/weights"
)

// ResidentBytes is the process's resident set size (VmRSS on Linux), or the
// memory the Go runtime holds where /proc is unavailable.
func ResidentBytes() int64 {
	if n := weights.ProcessResidentBytes(); n > 0 {
		return n
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.Sys)
}
