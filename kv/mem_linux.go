//go:build linux

package kv

import (
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mapped is the bytes of caches mapped and not yet unmapped: live ones,
// and dropped ones the collector has not found yet.
var mapped atomic.Int64

// collectAbove is how many bytes of caches may be mapped before a new
// cache collects the dropped ones first: small models' caches (tests,
// tiny drafts) are made often and weigh little; a 1B model's is 128 MiB at
// 4096 slots, an 8B's 512 MiB.
const collectAbove = 256 << 20

// reserve returns n zero halves mapped outside the Go heap, and the
// function that unmaps them (once, however often it is called). A cache is
// reserved for the longest context a session may reach and mostly not
// written: mapped pages become resident only where slots are written, and
// the collector neither zeroes them nor sizes its goal by them. On the heap
// every new cache was zeroed whole whenever the allocator reused memory a
// dropped cache had held: an 8B model's 512 MiB cache for 4096 slots took
// up to 2-3 s to make, and all of it was resident from the start.
//
// Since the collector's pacing does not see mappings, a dropped cache would
// stay mapped (its written pages resident) until a collection came for
// other reasons, up to two minutes later: so while caches of collectAbove
// bytes or more are mapped, a new one starts with a collection (5-6 ms
// beside a loaded 8B model, whose weights are outside the heap), which
// unmaps the dropped ones.
// Without a mapping (mmap failing) it is heap memory.
func reserve(n int) ([]uint16, func()) {
	if mapped.Load() >= collectAbove {
		runtime.GC()
	}
	b, err := unix.Mmap(-1, 0, 2*n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return make([]uint16, n), func() {}
	}
	mapped.Add(int64(len(b)))
	var once sync.Once
	free := func() {
		once.Do(func() {
			_ = unix.Munmap(b)
			mapped.Add(-int64(len(b)))
		})
	}
	return unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(b))), n), free
}
