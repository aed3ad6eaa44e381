package shade

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// lockFile takes an exclusive lock on path (created if need be) without
// waiting: a second pull of the same file is told so instead of writing
// the same .part. The lock dies with the process, so a killed pull leaves
// nothing stale behind.
func lockFile(path string) (unlock func(), err error) {
	for {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, err
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			f.Close()
			if err == unix.EWOULDBLOCK {
				return nil, fmt.Errorf("%w (lock %s)", ErrBusy, path)
			}
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		// The holder before us removes the lock file as it lets go: if the
		// file we locked is no longer the one at path, lock that one.
		held, err1 := f.Stat()
		now, err2 := os.Stat(path)
		if err1 == nil && err2 == nil && os.SameFile(held, now) {
			return func() {
				os.Remove(path) // still held: whoever locks next finds the file installed
				f.Close()
			}, nil
		}
		f.Close()
		if err1 != nil {
			return nil, err1
		}
	}
}
