package panelcache

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// inode is st's inode number and status-change time (ns). The latter moves
// with every write to the file and cannot be set back (utimes sets only
// access and modification times), so a model rewritten in place, whatever
// its modification time says, gets another key.
func inode(st os.FileInfo) (uint64, int64) {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return s.Ino, s.Ctim.Nano()
	}
	return 0, 0
}

// populate maps the pages of b in one call (best effort: Linux 5.14+).
func populate(b []byte) { _ = unix.Madvise(b, unix.MADV_POPULATE_READ) }

// reserve claims n bytes of disk for fd, so that a full disk fails here
// rather than halfway through writing; only running out of space is an
// error (a file system without fallocate just writes).
func reserve(fd uintptr, n int64) error {
	if err := unix.Fallocate(int(fd), 0, 0, n); errors.Is(err, syscall.ENOSPC) {
		return err
	}
	return nil
}
