// Package qos owns the foreground-frame simulator and the experiment runner
// behind `shade fg` and `shade bench qos`: a frame loop pinned to one core
// that stands in for the app the user is touching (a compute part and a
// memory-bound composition burst per frame, on a 120 Hz vsync grid, with
// jank, frame-time percentiles and per-frame CLOCK_MONOTONIC timestamps),
// its calibration, CPU pinning, the harness that runs it as a child process
// beside a background workload on the other core (continuous or sporadic),
// and the statistics that relate the two (medians over repetitions,
// Pearson correlation of the background's contention samples with the
// foreground's slowdown in time windows).
//
// The package measures; it does not decide. Background workloads and
// the policies they run under are values handed to the harness: the
// background LLM and its policies (plain decoding, speculation, rate caps,
// elastic speculation) are package bench's, so this one depends on no part
// of the runtime.
package qos
