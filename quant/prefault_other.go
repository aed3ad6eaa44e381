//go:build !linux

package quant

// prefault does nothing where there is no cheap way to map pages ahead.
func prefault([]byte, bool) {}

// panelMemory returns n zero bytes for the panels of owner.
func panelMemory(_ *packing, n int) []byte { return alignedBytes(n) }
