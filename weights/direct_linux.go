//go:build linux

package weights

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// openDirect opens path for reads that bypass the page cache (O_DIRECT).
// Filesystems that refuse O_DIRECT (tmpfs, some overlays) say EINVAL: the
// file is then opened for ordinary reads and direct is false.
func openDirect(path string) (f *os.File, direct bool, err error) {
	f, err = os.OpenFile(path, os.O_RDONLY|unix.O_DIRECT, 0)
	if err == nil {
		return f, true, nil
	}
	if !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.EOPNOTSUPP) {
		return nil, false, err
	}
	f, err = os.Open(path)
	return f, false, err
}

// dropCache asks the kernel to drop the page cache of a file range (best
// effort): after buffered reads, and for streamed layers that something
// else (the writer of the file, an earlier run) left cached.
func dropCache(f *os.File, off, n int64) {
	if f != nil {
		_ = unix.Fadvise(int(f.Fd()), off, n, unix.FADV_DONTNEED)
	}
}
