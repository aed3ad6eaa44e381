package qos

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// DefaultLLCBytes is the last-level cache size assumed where sysfs does not
// say (32 MiB: the L3 of the machines shade is measured on; too large is
// the safe side, since the buffer is sized as a multiple of it).
const DefaultLLCBytes = 32 << 20

// maxCacheBytes bounds what ParseCacheSize accepts: no CPU cache is larger,
// and a multiple of it must still be allocatable.
const maxCacheBytes = 1 << 30

// ParseCacheSize parses a sysfs cache size ("32768K", "1M", "512") into bytes.
func ParseCacheSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "K"):
		mult, s = 1<<10, s[:len(s)-1]
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, s[:len(s)-1]
	case strings.HasSuffix(s, "G"):
		mult, s = 1<<30, s[:len(s)-1]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n > maxCacheBytes/mult {
		return 0, fmt.Errorf("qos: cache size %q: want a positive number of bytes with an optional K, M or G suffix, at most 1G", s)
	}
	return n * mult, nil
}

// LLCSize returns the size of CPU 0's last-level (highest-level) data or
// unified cache as sysfs reports it under dir (normally
// /sys/devices/system/cpu/cpu0/cache), and whether it was found; when it
// was not, it returns DefaultLLCBytes.
func LLCSize(dir string) (int64, bool) {
	entries, err := filepath.Glob(filepath.Join(dir, "index*"))
	if err != nil {
		return DefaultLLCBytes, false
	}
	best, bestLevel := int64(0), 0
	for _, e := range entries {
		level, err := readInt(filepath.Join(e, "level"))
		if err != nil {
			continue
		}
		if t, err := os.ReadFile(filepath.Join(e, "type")); err == nil && strings.TrimSpace(string(t)) == "Instruction" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(e, "size"))
		if err != nil {
			continue
		}
		size, err := ParseCacheSize(string(b))
		if err != nil {
			continue
		}
		if level > bestLevel || (level == bestLevel && size > best) {
			best, bestLevel = size, level
		}
	}
	if best == 0 {
		return DefaultLLCBytes, false
	}
	return best, true
}

// SysCacheDir is where Linux describes CPU 0's caches.
const SysCacheDir = "/sys/devices/system/cpu/cpu0/cache"

func readInt(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, errors.New("qos: not an integer: " + path)
	}
	return n, nil
}
