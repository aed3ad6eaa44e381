package weights

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"time"
)

// Stats are a streamer's counters since it was made, with the plan's
// figures alongside. Counters are atomics: reading them is cheap, from any
// goroutine, at any time. Since gives the counters of an interval.
type Stats struct {
	BudgetBytes          int64 `json:"budget_bytes"`
	PlannedResidentBytes int64 `json:"planned_resident_bytes"` // draft + target globals + resident layers
	// ProcessResidentBytes is the whole process's resident set (VmRSS)
	// when the stats were read: the budget's real counterpart, plus the KV
	// cache, the layer buffers and everything else the process holds.
	ProcessResidentBytes int64 `json:"process_resident_bytes"`
	BufferBytes          int64 `json:"buffer_bytes"` // the streamer's layer buffers
	OverBudgetBytes      int64 `json:"over_budget_bytes,omitempty"`
	Layers               int   `json:"layers"`
	StreamedLayers       []int `json:"streamed_layers"`
	StreamedBytesPerPass int64 `json:"streamed_bytes_per_pass"`
	Direct               bool  `json:"o_direct"`
	ReadAhead            int   `json:"read_ahead"`
	Readers              int   `json:"readers"` // reads in flight at once

	Passes     int64 `json:"passes"`      // forward passes begun (layer 0 asked for)
	LayersRead int64 `json:"layers_read"` // streamed layers read in full
	// LayersReady counts streamed layers whose read had completed when the
	// pass asked for them (read ahead, or between passes while the caller
	// drafted): those cost the pass no wait at all.
	LayersReady int64 `json:"layers_ready"`
	BytesRead   int64 `json:"bytes_read"` // bytes of streamed matrices read
	ReadErrors  int64 `json:"read_errors"`
	Resets      int64 `json:"pipeline_resets"` // passes that did not follow the pipeline's order
	// ReadTime is how long at least one read was in flight.
	ReadTime time.Duration `json:"read_ns"`
	// IOWait is how long forward passes blocked in Layer waiting for a
	// read to complete.
	IOWait time.Duration `json:"io_wait_ns"`
	// ComputeTime is the time spent between Layer calls: layer i's is the
	// time from its Layer(i) returning to the Layer(i+1) call. A pass's
	// last layer cannot be timed so (its end is not seen): it is counted
	// at the mean of the others.
	ComputeTime time.Duration `json:"compute_ns"`
	ReadGBps    float64       `json:"read_gb_per_s"` // BytesRead / ReadTime
	IOShare     float64       `json:"io_share"`      // IOWait / (IOWait + ComputeTime)
}

// Stats returns the counters so far.
func (s *Streamer) Stats() Stats {
	st := Stats{
		BudgetBytes: s.plan.BudgetBytes, PlannedResidentBytes: s.plan.ResidentBytes,
		ProcessResidentBytes: ProcessResidentBytes(), BufferBytes: s.BufferBytes(),
		OverBudgetBytes: s.plan.OverBudget, Layers: s.plan.Layers, StreamedLayers: s.order,
		StreamedBytesPerPass: s.plan.StreamedBytes, Direct: s.direct, ReadAhead: s.o.ReadAhead, Readers: s.o.Readers,
		Passes: s.passes.Load(), LayersRead: s.layersRead.Load(), LayersReady: s.ready.Load(), BytesRead: s.bytesRead.Load(),
		ReadErrors: s.readErrs.Load(), Resets: s.resets.Load(),
		ReadTime: s.readTime(), IOWait: time.Duration(s.ioWaitNs.Load()),
	}
	if gaps := s.gaps.Load(); gaps > 0 {
		st.ComputeTime = time.Duration(float64(s.computeNs.Load()) / float64(gaps) * float64(s.calls.Load()))
	}
	st.derive()
	return st
}

// Since returns the counters of the interval from an earlier reading.
func (s Stats) Since(prev Stats) Stats {
	s.Passes -= prev.Passes
	s.LayersRead -= prev.LayersRead
	s.LayersReady -= prev.LayersReady
	s.BytesRead -= prev.BytesRead
	s.ReadErrors -= prev.ReadErrors
	s.Resets -= prev.Resets
	s.ReadTime -= prev.ReadTime
	s.IOWait -= prev.IOWait
	s.ComputeTime -= prev.ComputeTime
	s.derive()
	return s
}

func (s *Stats) derive() {
	s.ReadGBps, s.IOShare = 0, 0
	if s.ReadTime > 0 {
		s.ReadGBps = float64(s.BytesRead) / s.ReadTime.Seconds() / 1e9
	}
	if t := s.IOWait + s.ComputeTime; t > 0 {
		s.IOShare = s.IOWait.Seconds() / t.Seconds()
	}
}

// ProcessResidentBytes is this process's resident set size (VmRSS), or 0
// where /proc is unavailable.
func ProcessResidentBytes() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("VmRSS:")); ok {
			if fields := bytes.Fields(rest); len(fields) >= 1 {
				if kb, err := strconv.ParseInt(string(fields[0]), 10, 64); err == nil {
					return kb * 1024
				}
			}
		}
	}
	return 0
}

// readTime is the time with reads in flight, the current stretch included.
func (s *Streamer) readTime() time.Duration {
	s.busyMu.Lock()
	defer s.busyMu.Unlock()
	d := time.Duration(s.readNs.Load())
	if s.inFlight > 0 {
		d += time.Since(s.busySince)
	}
	return d
}
