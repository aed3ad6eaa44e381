//go:build !linux

package kv

// reserve returns n zero halves on the heap (see mem_linux.go for the
// mapping Linux and Android get).
func reserve(n int) ([]uint16, func()) { return make([]uint16, n), func() {} }
