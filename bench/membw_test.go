package bench

import "testing"

// TestReadRegionsMatchesGo checks the dispatched reader folds exactly the
// words the Go reader does.
func TestReadRegionsMatchesGo(t *testing.T) {
	buf := make([]uint64, 4096)
	for i := range buf {
		buf[i] = uint64(i)*0x9e3779b97f4a7c15 + 7
	}
	for _, streams := range []int{1, 2, 4, 8} {
		n := len(buf) / streams
		n -= n % 16
		var want uint64
		for s := range streams {
			for _, w := range buf[s*n : s*n+n] {
				want ^= w
			}
		}
		if got := readStreamsGo(buf, streams); got != want {
			t.Errorf("Go reader, %d streams: %#x, want %#x", streams, got, want)
		}
		if got := readRegions(buf, streams); got != want {
			t.Errorf("%d streams: %#x, want %#x", streams, got, want)
		}
	}
}

func TestMemoryBandwidthSmall(t *testing.T) {
	r := MemoryBandwidth(2, 8<<20, 1)
	if r.GBps <= 0 || r.StreamsPerThread == 0 || len(r.ByStreams) != 4 {
		t.Errorf("%+v", r)
	}
}

func TestMedianProbe(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{40, 10, 30, 20}, 20}, // the lower middle one
	} {
		var probes []BandwidthResult
		for _, g := range tc.in {
			probes = append(probes, BandwidthResult{GBps: g})
		}
		if got := medianProbe(probes).GBps; got != tc.want {
			t.Errorf("medianProbe(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
