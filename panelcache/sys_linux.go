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

// hugePages asks for b's pages to come in 2 MiB folios when they are read
// from the file (VM_HUGEPAGE makes fault-time readahead allocate PMD-sized
// folios, which the mapping then maps with one TLB entry each). Without it
// an 8B model's 4.4 GB of panels took a TLB miss every 4 KiB, and its
// decode ran at 4-7 tok/s against 11-12 from anonymous memory (AMD EPYC
// Zen 5, docs/panels.md). Best effort: a kernel without THP ignores it.
func hugePages(b []byte) { _ = unix.Madvise(b, unix.MADV_HUGEPAGE) }

// dropCached takes the first n bytes of f out of the page cache (they must
// be clean: written and synced). A cache file just written sits in the
// page cache in the small folios its writes made, which no mapping can map
// huge; read back through hugePages' mapping it comes in large ones.
func dropCached(f *os.File, n int64) { _ = unix.Fadvise(int(f.Fd()), 0, n, unix.FADV_DONTNEED) }

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
