package cost

import "time"

// CPUShare takes out of a layer's time the part the process did not run:
// the time since the last reading is multiplied by the share of it the
// process spent on a CPU (its CPU time ÷ (wall time × threads), at most
// 1). On a shared machine a layer also takes longer when another process
// has the core, which is not memory contention; memory stalls are CPU
// time, so they stay. The device profile's layer timings and elastic
// speculation's sensor both read layers through it, so that a baseline
// and a reading are the same quantity.
type CPUShare struct {
	cpu      func() int64 // process CPU time, ns; nil: no scaling
	threads  int
	lastWall int64
	lastCPU  int64
}

// NewCPUShare scales by the CPU time cpu reports (ns; nil or a negative
// reading: no scaling) spread over threads.
func NewCPUShare(cpu func() int64, threads int) CPUShare {
	if cpu != nil && cpu() < 0 {
		cpu = nil
	}
	return CPUShare{cpu: cpu, threads: max(threads, 1)}
}

// Scale returns took scaled by the CPU share since the last call (now is
// the wall clock, ns); the first call, or one after a long gap, leaves it.
func (c *CPUShare) Scale(now int64, took time.Duration) time.Duration {
	if c.cpu == nil {
		return took
	}
	cpu := c.cpu()
	if wall := now - c.lastWall; c.lastWall != 0 && wall > 0 && wall < int64(time.Second) {
		share := float64(cpu-c.lastCPU) / (float64(wall) * float64(c.threads))
		took = time.Duration(float64(took) * max(0.05, min(1, share)))
	}
	c.lastWall, c.lastCPU = now, cpu
	return took
}
