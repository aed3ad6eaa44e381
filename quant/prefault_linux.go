//go:build linux

package quant

import (
	"os"
	"runtime"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// prefault maps the pages of b in one call before they are read (write
// false; b may be a file mapping) or written: taking them one fault at a
// time costs several microseconds a page in a virtual machine, which is
// seconds for a model's panels. Best effort (MADV_POPULATE_READ and _WRITE
// are Linux 5.14+; older kernels fault as usual).
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

// panelMemory returns n zero bytes for panels, mapped outside the Go heap:
// gigabytes of weights on the heap would make the collector size its goal,
// and return and fault back pages, by them; weights need none of that. The
// mapping goes with its panelBuf's free, or once the panelBuf is
// unreachable, whichever comes first.
func panelMemory(n int) *panelBuf {
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return &panelBuf{b: alignedBytes(n), free: func() {}} // the heap will do
	}
	var once sync.Once
	unmap := func() { once.Do(func() { _ = unix.Munmap(b) }) }
	pb := &panelBuf{b: b, free: unmap}
	runtime.AddCleanup(pb, func(f func()) { f() }, unmap)
	return pb
}
