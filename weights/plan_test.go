package weights

import (
	"slices"
	"testing"
)

func equalLayers(n int, b int64) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = b
	}
	return out
}

func TestNewPlan(t *testing.T) {
	tests := []struct {
		name         string
		in           PlanInput
		wantStreamed []int
		wantOver     int64
		wantResident int64
	}{
		{"everything fits", PlanInput{LayerBytes: equalLayers(8, 100), GlobalBytes: 50, DraftBytes: 30, Budget: 880}, nil, 0, 880},
		{"budget above the total", PlanInput{LayerBytes: equalLayers(8, 100), GlobalBytes: 50, Budget: 1 << 40}, nil, 0, 850},
		{"half streams, spread", PlanInput{LayerBytes: equalLayers(8, 100), GlobalBytes: 50, Budget: 450}, []int{1, 3, 5, 7}, 0, 450},
		{"half streams, tail", PlanInput{LayerBytes: equalLayers(8, 100), GlobalBytes: 50, Budget: 450, Layout: Tail}, []int{4, 5, 6, 7}, 0, 450},
		{"one byte short streams one more", PlanInput{LayerBytes: equalLayers(8, 100), GlobalBytes: 50, Budget: 449}, []int{0, 2, 4, 5, 7}, 0, 350},
		{"draft counts", PlanInput{LayerBytes: equalLayers(4, 100), GlobalBytes: 50, DraftBytes: 200, Budget: 450}, []int{1, 3}, 0, 450},
		{"one streamed sits mid-stack", PlanInput{LayerBytes: equalLayers(32, 10), Budget: 310}, []int{16}, 0, 310},
		{"16 of 32 alternate", PlanInput{LayerBytes: equalLayers(32, 10), Budget: 160}, []int{1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31}, 0, 160},
		{"zero budget", PlanInput{LayerBytes: equalLayers(4, 100), GlobalBytes: 50, Budget: 0}, []int{0, 1, 2, 3}, 50, 50},
		{"globals exceed", PlanInput{LayerBytes: equalLayers(4, 100), GlobalBytes: 50, DraftBytes: 100, Budget: 120}, []int{0, 1, 2, 3}, 30, 150},
		{"no layers", PlanInput{GlobalBytes: 50, Budget: 10}, []int{}, 40, 50},
		{"uneven sizes: by position, bytes counted", PlanInput{LayerBytes: []int64{10, 500, 10, 10}, Budget: 30}, []int{1, 3}, 0, 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewPlan(tt.in)
			if len(p.Streamed) != len(tt.wantStreamed) || (len(tt.wantStreamed) > 0 && !slices.Equal(p.Streamed, tt.wantStreamed)) {
				t.Fatalf("streamed %v, want %v", p.Streamed, tt.wantStreamed)
			}
			if p.OverBudget != tt.wantOver || p.ResidentBytes != tt.wantResident {
				t.Fatalf("over budget %d, resident %d; want %d, %d", p.OverBudget, p.ResidentBytes, tt.wantOver, tt.wantResident)
			}
			var streamed int64
			for i, r := range p.Resident {
				if !r {
					streamed += tt.in.LayerBytes[i]
				}
				if r == slices.Contains(p.Streamed, i) {
					t.Fatalf("layer %d: resident %v but streamed list %v", i, r, p.Streamed)
				}
			}
			if streamed != p.StreamedBytes {
				t.Fatalf("streamed bytes %d, layers add up to %d", p.StreamedBytes, streamed)
			}
			if p.OverBudget == 0 && p.ResidentBytes > p.BudgetBytes {
				t.Fatalf("resident %d over the budget %d", p.ResidentBytes, p.BudgetBytes)
			}
			if (p.Warning() != "") != (p.OverBudget > 0) {
				t.Fatalf("warning %q with over budget %d", p.Warning(), p.OverBudget)
			}
			if p.AllResident() != (len(tt.wantStreamed) == 0) {
				t.Fatalf("AllResident %v", p.AllResident())
			}
		})
	}
}

func TestChooseStreamedDistinct(t *testing.T) {
	for n := 1; n <= 80; n++ {
		for s := 0; s <= n; s++ {
			got := chooseStreamed(n, s, Spread)
			if len(got) != s {
				t.Fatalf("n=%d s=%d: %v", n, s, got)
			}
			for k := range got {
				if got[k] < 0 || got[k] >= n || (k > 0 && got[k] <= got[k-1]) {
					t.Fatalf("n=%d s=%d: %v not distinct ascending layers", n, s, got)
				}
			}
		}
	}
}
