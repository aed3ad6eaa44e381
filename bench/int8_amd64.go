//go:build amd64 && !noasm && gc

package bench

import "golang.org/x/sys/cpu"

//go:noescape
func vnniLoop(iters int) int32

func init() {
	if cpu.X86.HasAVX512VNNI && cpu.X86.HasAVX512F {
		int8Peak = func(iters int) (int64, int32) { return int64(iters) * 12 * 64, vnniLoop(iters) }
		int8PeakName = "AVX-512 VNNI vpdpbusd"
	}
}
