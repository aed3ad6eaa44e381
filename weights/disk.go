package weights

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// DiskResult is the storage read bandwidth MeasureDisk found.
type DiskResult struct {
	GBps       float64         `json:"gb_per_s"` // best of ByReaders
	Readers    int             `json:"readers"`  // concurrent readers of the best
	ByReaders  map[int]float64 `json:"gb_per_s_by_readers"`
	ChunkBytes int64           `json:"chunk_bytes"`
	Bytes      int64           `json:"bytes_per_measurement"`
	Direct     bool            `json:"o_direct"`
}

// MeasureDisk measures sequential read bandwidth of a file the way the
// streamer reads: O_DIRECT (where the filesystem allows it), aligned reads
// of chunk bytes into aligned buffers, several readers at once taking
// consecutive chunks. It reads up to n bytes from offset off (aligned
// down), once for each reader count, and reports the best. Reads bypass
// the page cache, so a file read just before does not flatter it.
func MeasureDisk(path string, off, n int64, readerCounts []int, chunk int64) (DiskResult, error) {
	if chunk <= 0 {
		chunk = DefaultChunkBytes
	}
	chunk = alignUp(chunk)
	if len(readerCounts) == 0 {
		readerCounts = []int{1, DefaultReaders, 2 * DefaultReaders}
	}
	f, direct, err := openDirect(path)
	if err != nil {
		return DiskResult{}, fmt.Errorf("weights: disk bandwidth: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return DiskResult{}, fmt.Errorf("weights: disk bandwidth: %w", err)
	}
	off = alignDown(max(off, 0))
	end := alignDown(min(st.Size(), off+n))
	if end-off < chunk {
		return DiskResult{}, fmt.Errorf("weights: disk bandwidth: %s has %d bytes to read from offset %d, fewer than one %d-byte read", path, max(end-off, 0), off, chunk)
	}
	res := DiskResult{ByReaders: map[int]float64{}, ChunkBytes: chunk, Bytes: end - off, Direct: direct}
	for _, readers := range readerCounts {
		readers = max(readers, 1)
		gbps, err := readRange(f, off, end, readers, chunk)
		if err != nil {
			return res, fmt.Errorf("weights: disk bandwidth of %s: %w", path, err)
		}
		if !direct {
			dropCache(f, off, end-off)
		}
		res.ByReaders[readers] = gbps
		if gbps > res.GBps {
			res.GBps, res.Readers = gbps, readers
		}
	}
	return res, nil
}

// readRange reads [off, end) with readers goroutines taking chunks in turn.
func readRange(f *os.File, off, end int64, readers int, chunk int64) (float64, error) {
	var next atomic.Int64
	next.Store(off)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	t0 := time.Now()
	for range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := alignedBuffer(chunk)
			for {
				at := next.Add(chunk) - chunk
				if at >= end {
					return
				}
				want := min(chunk, end-at)
				if n, err := f.ReadAt(buf[:want], at); int64(n) < want {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("read of %d bytes at offset %d: got %d: %v", want, at, n, err)
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return 0, firstErr
	}
	return float64(end-off) / time.Since(t0).Seconds() / 1e9, nil
}
