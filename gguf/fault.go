package gguf

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"unsafe"
)

// ErrModelFileChanged is wrapped by the error a computation returns when
// reading a mapped model file faulted: the file was truncated, replaced in
// place or became unreadable (a removed device, an I/O error) while the
// process had it mapped. The mapping cannot be trusted afterwards: the
// process should stop using the model and open the file again.
var ErrModelFileChanged = errors.New("model file changed or unreadable under the running process")

// mappings are the live mappings of Open, so that a fault address can be
// attributed to a file (and a fault anywhere else is not mistaken for one).
var mappings struct {
	sync.Mutex
	m map[uintptr]mapping // by base address
}

type mapping struct {
	size uintptr
	path string
}

func registerMapping(data []byte, path string) {
	mappings.Lock()
	defer mappings.Unlock()
	if mappings.m == nil {
		mappings.m = make(map[uintptr]mapping)
	}
	mappings.m[uintptr(unsafe.Pointer(unsafe.SliceData(data)))] = mapping{uintptr(len(data)), path}
}

func unregisterMapping(data []byte) {
	mappings.Lock()
	defer mappings.Unlock()
	delete(mappings.m, uintptr(unsafe.Pointer(unsafe.SliceData(data))))
}

// mappedFile returns the file whose mapping holds addr and the offset of
// addr in it.
func mappedFile(addr uintptr) (path string, off uintptr, ok bool) {
	mappings.Lock()
	defer mappings.Unlock()
	for base, m := range mappings.m {
		if addr >= base && addr-base < m.size {
			return m.path, addr - base, true
		}
	}
	return "", 0, false
}

// FaultError returns the error for a recovered panic value r if r is a
// memory fault on a file mapped by Open (which debug.SetPanicOnFault turns
// into a panic instead of a fatal error), and nil otherwise.
func FaultError(r any) error {
	if _, ok := r.(runtime.Error); !ok {
		return nil
	}
	fa, ok := r.(interface{ Addr() uintptr })
	if !ok {
		return nil
	}
	path, off, ok := mappedFile(fa.Addr())
	if !ok {
		return nil
	}
	return fmt.Errorf("%w: %s: reading it at offset %d faulted (was it cut short, rewritten in place or removed from a device?); load it again", ErrModelFileChanged, path, off)
}

// CatchFault, deferred by a function that reads mapped tensor data (after
// GuardFaults), turns a fault on a mapped file into an error stored in
// *errp that wraps ErrModelFileChanged. Any other panic goes on.
//
//	defer gguf.CatchFault(&err)
//	defer gguf.GuardFaults()()
func CatchFault(errp *error) {
	r := recover()
	if r == nil {
		return
	}
	if err := FaultError(r); err != nil {
		*errp = err
		return
	}
	panic(r)
}

// GuardFaults makes a memory fault in the calling goroutine a panic that
// CatchFault (or FaultError) can recover, instead of a fatal error that
// ends the process, and returns the function that restores the previous
// setting. A truncated mapped file raises SIGBUS on the next read of a
// page past its new end; by default the Go runtime cannot recover that.
// Every goroutine that reads mapped tensor data needs it (the setting is
// per goroutine): the worker pool's workers set it once for their life.
func GuardFaults() (restore func()) {
	prev := debug.SetPanicOnFault(true)
	if prev {
		return noop
	}
	return restoreFaults
}

func noop()          {}
func restoreFaults() { debug.SetPanicOnFault(false) }
