package bench

import (
	"sync"
	"time"
)

// int8Peak runs an int8 multiply-add loop of the CPU's best instruction for
// iters iterations and returns the multiply-adds done (and a checksum); nil
// where no such loop exists for this CPU.
var (
	int8Peak     func(iters int) (int64, int32)
	int8PeakName string
)

// Int8Peak is the int8 multiply-add rate the cores reach in a loop of
// independent dot-product instructions on registers: the ceiling a
// batched quantized matmul could approach.
type Int8Peak struct {
	GMACs       float64 `json:"g_mac_per_s"` // all threads
	Threads     int     `json:"threads"`
	Instruction string  `json:"instruction"`
}

// MeasureInt8Peak runs the loop on threads goroutines at once, reps times,
// and reports the median rate; zero where the CPU has no such loop.
func MeasureInt8Peak(threads, reps int) Int8Peak {
	if int8Peak == nil {
		return Int8Peak{Threads: threads}
	}
	const iters = 2_000_000
	var rates []float64
	for range reps {
		var wg sync.WaitGroup
		var mu sync.Mutex
		var total int64
		start := time.Now()
		for range threads {
			wg.Add(1)
			go func() {
				defer wg.Done()
				n, sum := int8Peak(iters)
				mu.Lock()
				total += n
				sinkVal ^= uint64(sum)
				mu.Unlock()
			}()
		}
		wg.Wait()
		rates = append(rates, float64(total)/time.Since(start).Seconds()/1e9)
	}
	return Int8Peak{GMACs: median(rates), Threads: threads, Instruction: int8PeakName}
}
