//go:build race

package quant

// raceEnabled: the race detector makes sync.Pool drop items at random, so
// allocation counts of code that recycles buffers through one are not
// meaningful under it.
const raceEnabled = true
