//go:build linux

package kv

import (
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// reserve returns n zero halves mapped outside the Go heap, and the
// function that unmaps them (once, however often it is called). A cache is
// reserved for the longest context a session may reach and mostly not
// written: mapped pages become resident only where slots are written, and
// the collector neither zeroes them nor sizes its goal by them. On the heap
// every new cache was zeroed whole whenever the allocator reused memory a
// dropped cache had held: an 8B model's 512 MiB cache for 4096 slots took
// up to 2-3 s to make, and all of it was resident from the start.
// Without a mapping (mmap failing) it is heap memory.
func reserve(n int) ([]uint16, func()) {
	b, err := unix.Mmap(-1, 0, 2*n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return make([]uint16, n), func() {}
	}
	var once sync.Once
	return unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(b))), n), func() { once.Do(func() { _ = unix.Munmap(b) }) }
}
