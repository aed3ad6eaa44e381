//go:build amd64 && !noasm && gc

package bench

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

//go:noescape
func readAVX2(base unsafe.Pointer, stride, n, streams int) uint64

func init() {
	if cpu.X86.HasAVX2 {
		readRegions = func(part []uint64, streams int) uint64 {
			n := len(part) / streams * 8
			n -= n % 128
			return readAVX2(unsafe.Pointer(unsafe.SliceData(part)), n, n, streams)
		}
	}
}
