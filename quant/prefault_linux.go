//go:build linux

package quant

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// prefault maps the pages of b in one call before they are read (write
// false; b may be a file mapping) or written: touching them one fault at a
// time costs tens of microseconds a page in a virtual machine, seconds for
// a model's panels. Best effort (MADV_POPULATE_READ and _WRITE are Linux
// 5.14+; older kernels fault as usual).
func prefault(b []byte, write bool) {
	page := uintptr(os.Getpagesize())
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	lo := (start + page - 1) &^ (page - 1)
	hi := (start + uintptr(len(b))) &^ (page - 1)
	if hi <= lo {
		return
	}
	advice := unix.MADV_POPULATE_READ
	if write {
		advice = unix.MADV_POPULATE_WRITE
	}
	_ = unix.Madvise(b[lo-start:hi-start], advice)
}
