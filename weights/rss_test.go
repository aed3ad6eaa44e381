package weights

import (
	"runtime"
	"runtime/debug"
	"testing"

	"shade/model"
	"shade/quant"
	"shade/synth"
)

// rssShape has layers of about 4 MB, so that a budget of a quarter of the
// model is tens of megabytes below what the whole model would occupy.
var rssShape = synth.Shape{Name: "stream-rss", Arch: "llama", Dim: 512, Layers: 16, Heads: 8, KVHeads: 4, HeadDim: 64,
	FFN: 2048, ContextLen: 512, RopeBase: 10000, RMSEps: 1e-5}

// TestResidentMemoryWithinBudget reads VmRSS: while streaming under a
// quarter budget, the process grows by no more than the budget plus the
// layer buffers, the KV cache and the activations (and a few MB of Go
// runtime slack) over what it held before the model loaded; the same
// model fully resident then grows by about its whole size (which shows the
// measurement sees mapped weights at all).
func TestResidentMemoryWithinBudget(t *testing.T) {
	if ProcessResidentBytes() == 0 {
		t.Skip("no /proc/self/status here")
	}
	path := writeModel(t, rssShape, quant.Q8_0)
	settle := func() int64 {
		runtime.GC()
		debug.FreeOSMemory()
		return ProcessResidentBytes()
	}
	baseline := settle()
	m, err := model.Open(path, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	total := m.WeightBytes()
	budget, _ := ParseBudget("25%", total)
	plan, st, err := Apply(m, 0, budget, Options{ReadAhead: 1})
	if err != nil {
		t.Fatal(err)
	}
	const ctx = 32
	run := func() {
		s, err := m.NewState(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Forward(model.Chain([]int32{1, 2, 3, 4, 5, 6, 7, 8})); err != nil {
			t.Fatal(err)
		}
		s.CommitAll()
		for tok := range int32(8) {
			if err := s.Forward(model.Chain([]int32{tok})); err != nil {
				t.Fatal(err)
			}
			s.CommitAll()
		}
		runtime.KeepAlive(s)
	}
	run()
	streamed := ProcessResidentBytes() - baseline
	c := m.Config
	kvBytes := int64(2 * c.Layers * c.KVDim() * ctx * 4)
	activations := int64(8 * (4*c.Dim + 2*c.QDim() + 2*c.KVDim() + 2*c.FFN) * 4)
	const slack = 8 << 20 // Go runtime and heap fluctuation, the file's header pages
	allowed := plan.ResidentBytes + st.BufferBytes() + kvBytes + activations + slack
	t.Logf("weights %s, budget %s, planned resident %s, buffers %s; process grew %s streaming (allowed %s)",
		Human(total), Human(budget), Human(plan.ResidentBytes), Human(st.BufferBytes()), Human(streamed), Human(allowed))
	if streamed > allowed {
		t.Fatalf("streaming under a %s budget the process grew by %s, more than budget + buffers + KV + activations + slack = %s",
			Human(budget), Human(streamed), Human(allowed))
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	run()
	resident := settle() - baseline
	t.Logf("fully resident the process grew %s", Human(resident))
	if resident < total*9/10 {
		t.Fatalf("fully resident the process grew by %s only, for %s of weights: VmRSS does not see the weights", Human(resident), Human(total))
	}
	if streamed >= resident-total/2 {
		t.Fatalf("streaming saved too little: %s against %s resident", Human(streamed), Human(resident))
	}
}
