package engine

import (
	"bufio"
	"bytes"
	"os"
	"runtime"
	"strconv"
)

// ResidentBytes is the process's resident set size (VmRSS on Linux), or the
// Go heap in use where /proc is unavailable.
func ResidentBytes() int64 {
	if f, err := os.Open("/proc/self/status"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := sc.Bytes()
			if rest, ok := bytes.CutPrefix(line, []byte("VmRSS:")); ok {
				fields := bytes.Fields(rest)
				if len(fields) >= 1 {
					if kb, err := strconv.ParseInt(string(fields[0]), 10, 64); err == nil {
						return kb * 1024
					}
				}
			}
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.Sys)
}
