package weights

import (
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// DiskResult is the storage read bandwidth MeasureDisk found.
type DiskResult struct {
	GBps       float64         `json:"gb_per_s"`            // best of ByReaders
	Readers    int             `json:"readers"`             // concurrent readers of the best
	ByReaders  map[int]float64 `json:"gb_per_s_by_readers"` // median of the repetitions
	ChunkBytes int64           `json:"chunk_bytes"`
	Bytes      int64           `json:"bytes_per_read_pass"`
	Reps       int             `json:"reps"`
	Direct     bool            `json:"o_direct"`
	// Samples are every pass's GB/s by reader count.
	Samples map[int][]float64 `json:"samples_gb_per_s_by_readers"`
}

// DiskOptions say what MeasureDisk reads.
type DiskOptions struct {
	Offset, Bytes int64 // the file range read (Offset aligned down; ≤ 0 Bytes: 1 GiB)
	Readers       []int // reader counts tried (nil: 1, 2 and 4)
	ChunkBytes    int64 // size of each read (≤ 0: DefaultChunkBytes)
	Reps          int   // passes over the range per reader count; the median counts (≤ 0: 3)
}

// MeasureDisk measures sequential read bandwidth of a file the way the
// streamer reads: O_DIRECT (where the filesystem allows it), aligned reads
// of ChunkBytes into aligned buffers, several readers at once taking
// consecutive chunks. Each reader count reads the range Reps times; the
// median counts, and the best reader count is reported. Reads bypass the
// page cache, so a file read just before does not flatter it.
func MeasureDisk(path string, o DiskOptions) (DiskResult, error) {
	if o.ChunkBytes <= 0 {
		o.ChunkBytes = DefaultChunkBytes
	}
	chunk := alignUp(o.ChunkBytes)
	if len(o.Readers) == 0 {
		o.Readers = []int{1, 2, 4}
	}
	if o.Bytes <= 0 {
		o.Bytes = 1 << 30
	}
	if o.Reps <= 0 {
		o.Reps = 3
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
	off := alignDown(max(o.Offset, 0))
	end := alignDown(min(st.Size(), off+o.Bytes))
	if end-off < chunk {
		return DiskResult{}, fmt.Errorf("weights: disk bandwidth: %s has %d bytes to read from offset %d, fewer than one %d-byte read", path, max(end-off, 0), off, chunk)
	}
	res := DiskResult{ByReaders: map[int]float64{}, ChunkBytes: chunk, Bytes: end - off, Reps: o.Reps, Direct: direct}
	samples := map[int][]float64{}
	for range o.Reps { // interleaved, so that a slow moment of a shared disk hits every count alike
		for _, readers := range o.Readers {
			readers = max(readers, 1)
			gbps, err := readRange(f, off, end, readers, chunk)
			if err != nil {
				return res, fmt.Errorf("weights: disk bandwidth of %s: %w", path, err)
			}
			if !direct {
				dropCache(f, off, end-off)
			}
			samples[readers] = append(samples[readers], gbps)
		}
	}
	res.Samples = samples
	res.summarize()
	return res, nil
}

// summarize sets ByReaders, GBps and Readers from Samples.
func (r *DiskResult) summarize() {
	r.ByReaders, r.GBps, r.Readers = map[int]float64{}, 0, 0
	for readers, s := range r.Samples {
		s = slices.Clone(s)
		slices.Sort(s)
		m := s[len(s)/2]
		if len(s)%2 == 0 {
			m = (s[len(s)/2-1] + s[len(s)/2]) / 2
		}
		r.ByReaders[readers] = m
		if m > r.GBps || (m == r.GBps && readers < r.Readers) {
			r.GBps, r.Readers = m, readers
		}
	}
}

// Merge pools the samples of two measurements of the same file (say, one
// before and one after a run, so that a shared disk's slow or fast moment
// does not decide alone) and summarizes them again.
func (r DiskResult) Merge(o DiskResult) DiskResult {
	out := r
	out.Samples = map[int][]float64{}
	for _, src := range []DiskResult{r, o} {
		for k, v := range src.Samples {
			out.Samples[k] = append(out.Samples[k], v...)
		}
	}
	out.Reps = r.Reps + o.Reps
	out.Direct = r.Direct && o.Direct
	out.summarize()
	return out
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
