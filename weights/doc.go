// Package weights owns where each tensor of a model lives while it runs:
// resident in DRAM (the mapped file, faulted in on use) or streamed from
// storage for every forward pass. It holds the DRAM-budget planner (Plan),
// the streamer that reads the streamed layers with O_DIRECT into reused
// aligned buffers while the layers before them compute (Streamer, a
// model.LayerSource), the accounting of resident and streamed bytes and of
// I/O against compute time (Stats), and the measurement of the storage's
// own O_DIRECT read bandwidth that the streaming pipeline is judged against
// (MeasureDisk).
//
// The design follows the "Lever" seed: on a phone only part of a large
// target model fits DRAM next to the draft model, the rest stays on flash;
// here the machine's disk plays the flash. Budgets are given as a size or
// as a percentage of the target model's weight bytes (ParseBudget).
package weights
