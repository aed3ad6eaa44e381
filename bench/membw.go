// Package bench owns shade's own measurements of the machine and of the
// engine on it: the memory-read bandwidth that bounds decoding (the
// roofline), and decode and batched-forward speed, reported as ratios
// against that bandwidth measured in the same run. It is what `shade bench`
// prints; Go benchmarks elsewhere measure single kernels.
package bench

import (
	"slices"
	"sync"
	"time"
)

// BandwidthResult is the best read bandwidth found and how it was reached.
type BandwidthResult struct {
	GBps             float64         `json:"gb_per_s"`
	Threads          int             `json:"threads"`
	StreamsPerThread int             `json:"streams_per_thread"`
	ByStreams        map[int]float64 `json:"gb_per_s_by_streams"` // median per streams-per-thread
	BufferBytes      int64           `json:"buffer_bytes"`
}

// MemoryBandwidth measures how fast threads goroutines together can read a
// buffer of size bytes (far larger than any cache), each walking its share
// as 1, 2, 4 or 8 interleaved sequential streams: hardware prefetchers
// reward several streams per core. Each configuration runs reps times; the
// median of each is kept and the best configuration reported.
func MemoryBandwidth(threads int, size int64, reps int) BandwidthResult {
	return newBandwidthProbe(threads, size).measure(reps)
}

// bandwidthProbe is MemoryBandwidth's buffer, kept so that a run can probe
// again and again (next to each measurement it is compared with) without
// allocating and touching the buffer every time.
type bandwidthProbe struct {
	threads int
	buf     []uint64
}

func newBandwidthProbe(threads int, size int64) *bandwidthProbe {
	threads = max(threads, 1)
	words := int(size / 8)
	words -= words % (threads * 8 * 64)
	buf := make([]uint64, words)
	for i := range buf { // touch every page so reads hit DRAM, not the zero page
		buf[i] = uint64(i)
	}
	return &bandwidthProbe{threads: threads, buf: buf}
}

func (p *bandwidthProbe) measure(reps int) BandwidthResult {
	threads, words := p.threads, len(p.buf)
	res := BandwidthResult{Threads: threads, ByStreams: map[int]float64{}, BufferBytes: int64(words) * 8}
	share := words / threads
	for _, streams := range []int{1, 2, 4, 8} {
		var samples []float64
		for range reps {
			var wg sync.WaitGroup
			start := time.Now()
			for t := range threads {
				wg.Add(1)
				go func(part []uint64) {
					defer wg.Done()
					sink(readRegions(part, streams))
				}(p.buf[t*share : (t+1)*share])
			}
			wg.Wait()
			samples = append(samples, float64(share*threads*8)/time.Since(start).Seconds()/1e9)
		}
		m := median(samples)
		res.ByStreams[streams] = m
		if m > res.GBps {
			res.GBps, res.StreamsPerThread = m, streams
		}
	}
	return res
}

var sinkMu sync.Mutex
var sinkVal uint64

func sink(x uint64) { sinkMu.Lock(); sinkVal ^= x; sinkMu.Unlock() }

// readRegions reads part as streams interleaved sequential walks; an
// assembly version replaces it where the CPU has one.
var readRegions = readStreamsGo

// readStreamsGo reads part as streams regions of equal length (a multiple
// of 128 bytes), advancing them in lockstep 128 bytes at a time, and folds
// every word with XOR.
func readStreamsGo(part []uint64, streams int) uint64 {
	n := len(part) / streams
	n -= n % 16
	var a, b, c, d uint64
	for i := 0; i < n; i += 16 {
		for s := 0; s < streams; s++ {
			p := (*[16]uint64)(part[s*n+i:])
			a ^= p[0] ^ p[4] ^ p[8] ^ p[12]
			b ^= p[1] ^ p[5] ^ p[9] ^ p[13]
			c ^= p[2] ^ p[6] ^ p[10] ^ p[14]
			d ^= p[3] ^ p[7] ^ p[11] ^ p[15]
		}
	}
	return a ^ b ^ c ^ d
}

func median(x []float64) float64 {
	if len(x) == 0 {
		return 0
	}
	s := slices.Clone(x)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
