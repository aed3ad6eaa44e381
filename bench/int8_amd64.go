//go:build amd64 && !noasm && gc

package bench

import "golang.org/x/sys/cpu"

// vnniLoop runs iters × 12 VPDPBUSD on ZMM registers (64 multiply-adds
// each): the instruction of the AVX-512 VNNI kernels.
//
//go:noescape
func vnniLoop(iters int) int32

// avx2Int8Loop runs iters × 6 chains of VPMADDUBSW, VPMADDWD (by ones) and
// VPADDD on YMM registers (32 multiply-adds each): what the AVX2 int8
// kernels do for one block without VNNI.
//
//go:noescape
func avx2Int8Loop(iters int) int32

// avxvnniLoop runs iters × 12 VEX VPDPBUSD on YMM registers (32
// multiply-adds each): the instruction of the avxvnni kernels.
//
//go:noescape
func avxvnniLoop(iters int) int32

func init() {
	// Every byte is 1, so each VPDPBUSD adds 4 to every int32 lane; so does
	// each VPMADDUBSW+VPMADDWD pair.
	if cpu.X86.HasAVX512VNNI && cpu.X86.HasAVX512F {
		int8Loops = append(int8Loops, int8Loop{name: "AVX-512 VNNI vpdpbusd", kernels: "avx512", macsPerIter: 12 * 64, sumPerIter: 12 * 4, run: vnniLoop})
	}
	if cpu.X86.HasAVX2 && cpu.X86.HasAVXVNNI {
		int8Loops = append(int8Loops, int8Loop{name: "AVX-VNNI vpdpbusd (ymm)", kernels: "avxvnni", macsPerIter: 12 * 32, sumPerIter: 12 * 4, run: avxvnniLoop})
	}
	if cpu.X86.HasAVX2 {
		int8Loops = append(int8Loops, int8Loop{name: "AVX2 vpmaddubsw+vpmaddwd+vpaddd", kernels: "avx2", macsPerIter: 6 * 32, sumPerIter: 6 * 4, run: avx2Int8Loop})
	}
}
