package weights

import (
	"bytes"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"shade/model"
	"shade/quant"
)

// throttledDevice serves reads from memory at a fixed bandwidth, one read
// at a time, like a storage device: it makes the layout comparison
// independent of a shared disk's noise.
type throttledDevice struct {
	mu   sync.Mutex
	r    io.ReaderAt
	gbps float64
}

func (d *throttledDevice) ReadAt(p []byte, off int64) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	t0 := time.Now()
	n, err := d.r.ReadAt(p, off)
	time.Sleep(time.Until(t0.Add(time.Duration(float64(n) / d.gbps))))
	return n, err
}

// BenchmarkStreamLayout compares the spread and tail layouts at a 50%
// budget on a device whose bandwidth makes reading a streamed layer take
// about as long as computing two layers (the balanced case, where the
// layout decides whether reads hide behind compute): it reports decode
// passes per second and the I/O wait share.
//
//	go test ./weights -run '^$' -bench StreamLayout -benchtime 40x
func BenchmarkStreamLayout(b *testing.B) {
	m := openModel(b, writeModel(b, rssShape, quant.Q8_0))
	s, err := m.NewState(b.N + 8)
	if err != nil {
		b.Fatal(err)
	}
	// Calibrate: the compute time of one resident decode pass (the
	// fastest of 16: the machine is shared).
	tok := []int32{1}
	best := time.Duration(1 << 62)
	for range 16 {
		t0 := time.Now()
		s.Forward(model.Chain(tok))
		best = min(best, time.Since(t0))
	}
	perLayer := best / time.Duration(rssShape.Layers)
	budget, _ := ParseBudget("50%", m.WeightBytes())
	layerBytes := float64(m.Weights.LayerBytes[0])
	gbps := layerBytes / float64(2*perLayer) // bytes per ns = GB/s
	for _, layout := range []Layout{Spread, Tail} {
		for _, ra := range []int{1, 2} {
			b.Run(fmt.Sprintf("%v/read-ahead-%d", layout, ra), func(b *testing.B) {
				_, st, err := Apply(m, 0, budget, Options{ReadAhead: ra, Layout: layout,
					WrapReader: func(io.ReaderAt) io.ReaderAt {
						return &throttledDevice{r: bytes.NewReader(m.File.Bytes()), gbps: gbps}
					}})
				if err != nil {
					b.Fatal(err)
				}
				defer st.Close()
				s.Truncate(0)
				s.Forward(model.Chain(tok)) // fill the pipeline
				s0 := st.Stats()
				b.ResetTimer()
				for range b.N {
					if err := s.Forward(model.Chain(tok)); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				d := st.Stats().Since(s0)
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "passes/s")
				b.ReportMetric(d.IOShare, "io-share")
				b.ReportMetric(gbps, "device-GB/s")
			})
		}
	}
}
