//go:build !linux

package panelcache

import (
	"os"
	"syscall"
)

// inode is st's inode number; the status-change time is left out where
// the stat structure names it differently (the modification time and the
// sampled bytes still key the file).
func inode(st os.FileInfo) (uint64, int64) {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return uint64(s.Ino), 0
	}
	return 0, 0
}

// hugePages does nothing where there is no transparent huge page hint.
func hugePages([]byte) {}

// dropCached does nothing here: the page cache keeps what was written.
func dropCached(*os.File, int64) {}

// populate does nothing where there is no cheap way to map pages ahead.
func populate([]byte) {}

// reserve does nothing here: a full disk fails the writes.
func reserve(uintptr, int64) error { return nil }
