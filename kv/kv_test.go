package kv

import "testing"

func fill(c *Cache, slot int, x uint16) {
	for l := 0; l < c.layers; l++ {
		for i := range c.K(l, slot) {
			c.K(l, slot)[i] = x
			c.V(l, slot)[i] = x + 100
		}
	}
}

func TestCommitAndTruncate(t *testing.T) {
	c, err := New(2, 3, 8)
	if err != nil {
		t.Fatal(err)
	}
	for s := 0; s < 5; s++ {
		fill(c, s, uint16(s))
	}
	if err := c.Commit([]int{0, 1}); err != nil { // a chain: in place
		t.Fatal(err)
	}
	if err := c.Commit([]int{3, 4}); err != nil { // a tree path: slots 3, 4 move to 2, 3
		t.Fatal(err)
	}
	want := []uint16{0, 1, 3, 4}
	for l := 0; l < 2; l++ {
		for s, w := range want {
			if c.K(l, s)[2] != w || c.V(l, s)[0] != w+100 {
				t.Errorf("layer %d slot %d = %v/%v, want %v", l, s, c.K(l, s)[2], c.V(l, s)[0], w)
			}
		}
	}
	if c.Len() != 4 {
		t.Fatalf("Len = %d", c.Len())
	}
	if err := c.Truncate(1); err != nil || c.Len() != 1 {
		t.Fatalf("Truncate: %v, Len %d", err, c.Len())
	}
	for _, bad := range []struct {
		name  string
		slots []int
	}{{"below prefix", []int{0}}, {"unordered", []int{3, 2}}, {"past capacity", []int{9}}} {
		if err := c.Commit(bad.slots); err == nil {
			t.Errorf("%s: commit accepted", bad.name)
		}
	}
	if err := c.Truncate(2); err == nil {
		t.Error("truncate past Len accepted")
	}
	if err := c.Commit(make([]int, 8)); err == nil {
		t.Error("overflowing commit accepted")
	}
	if _, err := New(0, 1, 1); err == nil {
		t.Error("empty shape accepted")
	}
}

// TestNewTooLarge: a shape whose size overflows is an error before any
// allocation, and Bytes says what a shape reserves.
func TestNewTooLarge(t *testing.T) {
	if got := Bytes(2, 8, 16); got != 2*8*16*2*2 {
		t.Errorf("Bytes(2, 8, 16) = %d", got)
	}
	for _, s := range [][3]int{{1 << 30, 1 << 20, 1 << 20}, {1, 1 << 62, 4}, {32, 1024, 1 << 50}, {0, 1, 1}} {
		if b := Bytes(s[0], s[1], s[2]); b != -1 {
			t.Errorf("Bytes%v = %d, want -1", s, b)
		}
		if _, err := New(s[0], s[1], s[2]); err == nil {
			t.Errorf("New%v accepted", s)
		}
	}
}

func TestCopyFrom(t *testing.T) {
	src, _ := New(2, 3, 8)
	for s := range 5 {
		for l := range 2 {
			for i := range 3 {
				src.K(l, s)[i] = uint16(100*l + 10*s + i)
				src.V(l, s)[i] = uint16(1000 + 100*l + 10*s + i)
			}
		}
	}
	if err := src.Commit([]int{0, 1, 2, 3, 4}); err != nil {
		t.Fatal(err)
	}
	dst, _ := New(2, 3, 6)
	if err := dst.CopyFrom(src, 3); err != nil {
		t.Fatal(err)
	}
	if dst.Len() != 3 {
		t.Fatalf("Len %d after copying 3", dst.Len())
	}
	for s := range 3 {
		for l := range 2 {
			if dst.K(l, s)[2] != src.K(l, s)[2] || dst.V(l, s)[1] != src.V(l, s)[1] {
				t.Fatalf("slot %d layer %d differs", s, l)
			}
		}
	}
	dst.K(0, 0)[0] = 7
	if src.K(0, 0)[0] == 7 {
		t.Error("the copy shares memory with its source")
	}
	other, _ := New(2, 4, 8)
	for _, c := range []struct {
		dst *Cache
		n   int
	}{{dst, 6}, {dst, -1}, {other, 2}} {
		if err := c.dst.CopyFrom(src, c.n); err == nil {
			t.Errorf("copy of %d into %d×%d: no error", c.n, c.dst.layers, c.dst.dim)
		}
	}
}
