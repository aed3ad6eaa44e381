//go:build !linux

package cost

import (
	"os"
	"unsafe"
)

// openDirect opens path for reading; without O_DIRECT on this system the
// page cache is not bypassed, and the result says so.
func openDirect(path string) (*os.File, bool, error) {
	f, err := os.Open(path)
	return f, false, err
}

func uintptrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
