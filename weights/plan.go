package weights

import (
	"fmt"
	"strings"
)

// Layout says which target layers stream when not all of them fit.
type Layout int

const (
	// Spread streams layers spaced evenly among the resident ones, so that
	// every streamed layer is read while the resident layers before it
	// compute. It is the default.
	Spread Layout = iota
	// Tail streams the last layers. With a contiguous tail the disk can
	// only read ahead as many layers as there are buffers while the
	// resident head computes, then waits on every tail layer in turn;
	// it is kept to measure against Spread.
	Tail
)

// ParseLayout reads a Layout by name: "spread" or "tail".
func ParseLayout(s string) (Layout, error) {
	switch s {
	case "spread", "":
		return Spread, nil
	case "tail":
		return Tail, nil
	}
	return Spread, fmt.Errorf("layout %q: want spread or tail", s)
}

func (l Layout) String() string {
	if l == Tail {
		return "tail"
	}
	return "spread"
}

// PlanInput is what the planner needs to know of the models.
type PlanInput struct {
	LayerBytes  []int64 // bytes of each target layer's matrices
	GlobalBytes int64   // the target's embedding, output head and norms
	DraftBytes  int64   // the draft model's weights (0 without one); they count against the budget
	Budget      int64   // DRAM budget in bytes
	Layout      Layout
}

// Plan is where each target layer lives. Resident: the draft, the target's
// embedding, output head and norms, and as many target layers as fit the
// budget after them; the other layers stream.
type Plan struct {
	BudgetBytes   int64  `json:"budget_bytes"`
	TargetBytes   int64  `json:"target_bytes"` // globals + every layer
	DraftBytes    int64  `json:"draft_bytes"`
	GlobalBytes   int64  `json:"global_bytes"`
	ResidentBytes int64  `json:"planned_resident_bytes"` // draft + globals + resident layers
	StreamedBytes int64  `json:"streamed_bytes_per_pass"`
	Layers        int    `json:"layers"`
	Streamed      []int  `json:"streamed_layers"` // ascending
	Resident      []bool `json:"-"`               // per layer
	// OverBudget is by how much the draft and the target's globals alone
	// exceed the budget (every layer then streams); 0 when they fit.
	OverBudget int64  `json:"over_budget_bytes,omitempty"`
	Layout     Layout `json:"-"`
}

// NewPlan chooses the streamed layers: the fewest that let the rest fit.
func NewPlan(in PlanInput) Plan {
	n := len(in.LayerBytes)
	p := Plan{BudgetBytes: in.Budget, DraftBytes: in.DraftBytes, GlobalBytes: in.GlobalBytes, Layers: n, Layout: in.Layout}
	var layers int64
	for _, b := range in.LayerBytes {
		layers += b
	}
	p.TargetBytes = in.GlobalBytes + layers
	avail := in.Budget - in.DraftBytes - in.GlobalBytes
	if avail < 0 {
		p.OverBudget = -avail
		avail = 0
	}
	for s := 0; s <= n; s++ {
		streamed := chooseStreamed(n, s, in.Layout)
		var out int64
		for _, i := range streamed {
			out += in.LayerBytes[i]
		}
		if layers-out <= avail || s == n {
			p.Streamed, p.StreamedBytes = streamed, out
			break
		}
	}
	p.Resident = make([]bool, n)
	for i := range p.Resident {
		p.Resident[i] = true
	}
	for _, i := range p.Streamed {
		p.Resident[i] = false
	}
	p.ResidentBytes = in.DraftBytes + in.GlobalBytes + layers - p.StreamedBytes
	return p
}

// chooseStreamed returns s of n layers. Spread puts the k-th at the middle
// of the k-th of s equal stretches of the stack (for 16 of 32: 1, 3, …, 31),
// so that between two streamed layers there is always resident compute to
// hide a read behind, and the pass's first streamed layer comes after a
// resident one that hides the read-ahead's first wait. Layers within a
// model are of one size in practice; when they are not, the planner still
// picks by position and only counts bytes.
func chooseStreamed(n, s int, layout Layout) []int {
	out := make([]int, 0, s)
	if layout == Tail {
		for i := n - s; i < n; i++ {
			out = append(out, i)
		}
		return out
	}
	for k := range s {
		out = append(out, (2*k+1)*n/(2*s))
	}
	return out
}

// AllResident reports whether every layer fits: no streamer is needed.
func (p *Plan) AllResident() bool { return len(p.Streamed) == 0 }

// Warning says what is wrong with the budget, or "" when nothing is.
func (p *Plan) Warning() string {
	if p.OverBudget == 0 {
		return ""
	}
	return fmt.Sprintf("dram budget %s is exceeded by %s: the draft (%s) and the target's embedding, head and norms (%s) always stay resident; every layer streams",
		Human(p.BudgetBytes), Human(p.OverBudget), Human(p.DraftBytes), Human(p.GlobalBytes))
}

// String is one line for a person: what stays and what streams.
func (p *Plan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "dram budget %s: %d of %d target layers resident, %d streamed (%s per pass, %s layout); resident %s (draft %s, target globals %s)",
		Human(p.BudgetBytes), p.Layers-len(p.Streamed), p.Layers, len(p.Streamed), Human(p.StreamedBytes), p.Layout,
		Human(p.ResidentBytes), Human(p.DraftBytes), Human(p.GlobalBytes))
	return b.String()
}

// Human formats a byte count with a binary unit.
func Human(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.2f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}
