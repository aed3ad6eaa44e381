//go:build !linux

package quant

// prefault does nothing where there is no cheap way to map pages ahead.
func prefault([]byte, bool) {}
