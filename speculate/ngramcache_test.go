package speculate

import (
	"slices"
	"testing"
)

func TestNgramCacheContinue(t *testing.T) {
	tests := []struct {
		name  string
		ctx   []int32
		extra []int32
		k     int
		want  []int32
	}{
		{"from the prompt", []int32{5, 6, 7, 8, 9, 5, 6}, nil, 3, []int32{7, 8, 9}},
		{"through extra", []int32{5, 6, 7, 8, 9, 5, 6}, []int32{7}, 2, []int32{8, 9}},
		// "1 2" was followed by 3 twice and by 4 once: frequency wins.
		{"more frequent", []int32{1, 2, 3, 0, 1, 2, 3, 0, 7, 1, 2, 4, 0, 1, 2}, nil, 1, []int32{3}},
		// "9 1 2" → 4 once outweighs "1 2" → 3 twice: a longer match counts more.
		{"longer match", []int32{1, 2, 3, 0, 1, 2, 3, 0, 9, 1, 2, 4, 0, 9, 1, 2}, nil, 1, []int32{4}},
		{"nothing seen", []int32{1, 2, 3}, []int32{8}, 3, nil},
		{"k zero", []int32{5, 6, 7, 5, 6}, nil, 0, nil},
	}
	for _, tc := range tests {
		c := NewNgramCache(2, 3)
		if got := c.Continue(tc.ctx, tc.extra, tc.k); !slices.Equal(got, tc.want) {
			t.Errorf("%s: Continue = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestNgramCacheRejected(t *testing.T) {
	c := NewNgramCache(2, 3)
	ctx := []int32{10, 11, 12}
	// A tree under the pending token 12: 20→21→22 accepted only at 20;
	// the branch 20→30→31 and 40 rejected; node 5 (41) came from filling.
	var tr Tree
	a := tr.Add(20, -1, nil)
	tr.Add(21, a, nil)
	b := tr.Add(30, a, nil)
	tr.Add(31, b, nil)
	tr.Add(40, -1, nil)
	tr.Add(41, -1, nil)
	c.Rejected(ctx, &tr, []int32{a}, 5)
	// The rejected branch "12 20 30 31" is now a source: after "20 30", 31.
	if got := c.Continue([]int32{1, 2}, []int32{20, 30}, 1); !slices.Equal(got, []int32{31}) {
		t.Errorf("after a rejected branch: %v, want [31]", got)
	}
	// Nothing was drafted after the rejected leaf 40.
	if got := c.Continue([]int32{11, 12}, []int32{40}, 1); got != nil {
		t.Errorf("after 40 nothing was drafted, got %v", got)
	}
	// Filled nodes are not sources.
	if got := c.Continue([]int32{0, 12}, nil, 1); slices.Contains(got, 41) {
		t.Errorf("a filled node became a source: %v", got)
	}
}

func TestNgramCacheDecayAndBound(t *testing.T) {
	c := NewNgramCache(2, 2)
	c.Decay = 0.5
	ctx := []int32{1, 2, 3, 4, 1, 2}
	if got := c.Continue(ctx, nil, 1); !slices.Equal(got, []int32{3}) {
		t.Fatalf("fresh: %v", got)
	}
	for range 20 {
		c.Tick()
	}
	// Stale votes are filtered out: nothing proposed from a faded past.
	if got := c.Continue(ctx, nil, 1); got != nil {
		t.Errorf("after decay: %v, want nothing", got)
	}
	c = NewNgramCache(2, 4)
	c.MaxEntries = 100
	long := make([]int32, 5000)
	for i := range long {
		long[i] = int32(i*7919) % 1000
		if i%50 == 0 {
			c.Tick()
		}
	}
	c.Continue(long, nil, 4)
	if c.Len() > c.MaxEntries {
		t.Errorf("%d n-grams held, bound %d", c.Len(), c.MaxEntries)
	}
}
