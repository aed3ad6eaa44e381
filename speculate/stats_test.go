package speculate

import (
	"reflect"
	"testing"
	"time"
)

func TestStatsAdd(t *testing.T) {
	a := Stats{Steps: 2, Drafted: 10, Accepted: 6, Generated: 8, ByDepth: []DepthStats{{4, 3}},
		DraftTime: time.Second, MaxTree: 9, Pruned: 1, PruneNote: "off"}
	b := Stats{Steps: 3, Drafted: 5, Accepted: 5, Generated: 8, ByDepth: []DepthStats{{2, 2}, {2, 1}},
		DraftTime: 2 * time.Second, VerifyTime: time.Second, MaxTree: 7, Pruned: 2, PrunedLost: 1,
		HeadRows: 4, Sleep: time.Millisecond, Filled: 3, PruneNote: "other"}
	want := Stats{Steps: 5, Drafted: 15, Accepted: 11, Generated: 16, ByDepth: []DepthStats{{6, 5}, {2, 1}},
		DraftTime: 3 * time.Second, VerifyTime: time.Second, MaxTree: 9, Pruned: 3, PrunedLost: 1,
		HeadRows: 4, Sleep: time.Millisecond, Filled: 3, PruneNote: "off"}
	a.Add(&b)
	if !reflect.DeepEqual(a, want) {
		t.Errorf("sum\n got %+v\nwant %+v", a, want)
	}
	var zero Stats
	zero.Add(&b)
	if !reflect.DeepEqual(zero, b) {
		t.Errorf("zero + b\n got %+v\nwant %+v", zero, b)
	}
}
