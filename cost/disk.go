package cost

import (
	"fmt"
	"os"
	"time"
)

// DiskResult is one storage read probe.
type DiskResult struct {
	Bytes  int64
	Took   time.Duration
	Bps    float64 // bytes per second
	Direct bool    // read with O_DIRECT (the page cache bypassed)
}

// diskChunk is the size of each read: large enough that per-request
// overhead is small, like a streamer reading a layer's tensors.
const diskChunk = 8 << 20

// MeasureDisk reads up to maxBytes of a file (or for at most maxTime)
// sequentially from its middle, with O_DIRECT where the system and file
// system allow it, and returns the read rate. The middle of a model file
// is where layer weights lie; it also avoids the header a loader just read.
func MeasureDisk(path string, maxBytes int64, maxTime time.Duration) (DiskResult, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return DiskResult{}, err
	}
	if !fi.Mode().IsRegular() {
		return DiskResult{}, fmt.Errorf("cost: %s is not a regular file", path)
	}
	f, direct, err := openDirect(path)
	if err != nil {
		return DiskResult{}, err
	}
	defer f.Close()
	size := fi.Size()
	const align = 4096
	start := (size / 4) &^ (align - 1)
	if size-start < diskChunk {
		start = 0
	}
	buf := alignedBuffer(diskChunk, align)
	var n int64
	t0 := time.Now()
	for off := start; n < maxBytes && time.Since(t0) < maxTime; {
		if off >= size {
			off = 0
		}
		k, err := f.ReadAt(buf, off)
		if k <= 0 {
			if err != nil && direct {
				// Some file systems accept O_DIRECT at open and refuse
				// the reads: measure buffered instead, and say so.
				f.Close()
				if f, err = os.Open(path); err != nil {
					return DiskResult{}, err
				}
				direct = false
				continue
			}
			if err != nil {
				return DiskResult{}, fmt.Errorf("cost: reading %s at %d: %w", path, off, err)
			}
			break
		}
		n += int64(k)
		off += int64(k)
	}
	took := time.Since(t0)
	if n == 0 || took <= 0 {
		return DiskResult{}, fmt.Errorf("cost: %s: nothing read", path)
	}
	return DiskResult{Bytes: n, Took: took, Bps: float64(n) / took.Seconds(), Direct: direct}, nil
}

// alignedBuffer returns n bytes starting at a multiple of align, as
// O_DIRECT requires.
func alignedBuffer(n, align int) []byte {
	b := make([]byte, n+align)
	off := 0
	if r := int(uintptrOf(b) % uintptr(align)); r != 0 {
		off = align - r
	}
	return b[off : off+n : off+n]
}
