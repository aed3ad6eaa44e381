package cost

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

func openDirect(path string) (*os.File, bool, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECT|unix.O_CLOEXEC, 0)
	if err != nil {
		f, err := os.Open(path)
		return f, false, err
	}
	return os.NewFile(uintptr(fd), path), true, nil
}

func uintptrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
