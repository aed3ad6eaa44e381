//go:build !linux

package quant

// prefault does nothing where there is no cheap way to map pages ahead.
func prefault([]byte, bool) {}

// panelMemory returns n zero bytes for panels, on the heap.
func panelMemory(n int) *panelBuf { return &panelBuf{b: alignedBytes(n), free: func() {}} }
