package quant

import (
	"math/rand/v2"
	"testing"
)

// Hooks for the panel cache's tests (panelcache_test.go, package
// quant_test), which must compute on panels whatever this CPU has.

// UseTestPanelKernel installs, until tb ends, pure-Go panel kernels (the
// panels are turned back into rows with panelBlock or q4kPanelBlock and
// given to gemmGo or gemmKGo), and gemmGo as the gemm kernel where the set
// has none, so that matrices are repacked and MatMul computes on their
// panels on any CPU. Its outputs are the Go twins', like those of every
// panel kernel.
func UseTestPanelKernel(tb testing.TB) {
	saved := k
	set := *k
	if set.gemm == nil {
		set.gemm = gemmGo
	}
	set.gemmPanel = gemmPanelTest
	set.gemmKPanel = gemmKPanelTest
	k = &set
	tb.Cleanup(func() { k = saved })
}

func gemmPanelTest(t Type, panels []byte, rb, lo, hi int, a *gemmActs, c int, y []float32, ys int) {
	bw := t.BlockBytes()
	rows := make([]byte, panelRows*rb)
	for r0 := lo; r0 < hi; r0 += panelRows {
		for i := range panelRows {
			for b := range rb / bw {
				panelBlock(t, panels, rb, r0+i, b, rows[i*rb+b*bw:i*rb+(b+1)*bw])
			}
		}
		gemmGo(t, rows, rb, 0, panelRows, a, 0, c, y[r0:], ys)
	}
}

// gemmKPanelTest is a Q4_K panel kernel: the panels of rows [lo, hi) back
// in the file's layout, then gemmKGo.
func gemmKPanelTest(panels []byte, nb, lo, hi int, a []byte, arb, n int, y []float32, ys int) {
	rb := nb * q4_KBytes
	rows := make([]byte, hi*rb)
	for r := lo; r < hi; r++ {
		for b := range nb {
			q4kPanelBlock(panels, nb, r, b, rows[r*rb+b*q4_KBytes:])
		}
	}
	gemmKGo(Q4_K, rows, rb, lo, hi, a, arb, n, y, ys)
}

// PackedForTest is m's panels as packPanels builds them in memory.
func PackedForTest(m Matrix) []byte {
	rows, pb := m.panelShape()
	out := alignedBytes(m.Rows / rows * pb)
	packPanels(nil, m, out)
	return out
}

// PanelsForTest is the panels m computes on now (nil when not repacked).
func PanelsForTest(m Matrix) []byte {
	if m.pk == nil {
		return nil
	}
	if pb := m.pk.panels.Load(); pb != nil {
		return pb.b
	}
	return nil
}

// RandomWeightsForTest is randomWeights: rows×cols of t, finite scales.
func RandomWeightsForTest(rng *rand.Rand, t Type, rows, cols int) []byte {
	return randomWeights(rng, t, rows, cols)
}

// ActivationsForTest is testData: activations at varied scales.
func ActivationsForTest(rng *rand.Rand, n int) []float32 { return testData(rng, n) }
