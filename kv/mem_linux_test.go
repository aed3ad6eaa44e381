//go:build linux

package kv

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// statusKiB reads a field (VmSize, VmRSS) of /proc/self/status in KiB.
func statusKiB(t *testing.T, field string) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Skipf("no %s in /proc/self/status", field)
	return 0
}

// TestReserveIsMapped: a cache is reserved, not resident, until its slots
// are written, and a dropped cache's memory goes back to the system (on
// the heap, a new cache reused a dropped one's pages, zeroed them, and
// they stayed resident).
func TestReserveIsMapped(t *testing.T) {
	const layers, dim, capacity = 16, 1024, 8192 // 512 MiB
	rss0 := statusKiB(t, "VmRSS")
	settle := func(what string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for statusKiB(t, "VmRSS")-rss0 > 64<<10 {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d MiB more resident after 10 s of collections", what, (statusKiB(t, "VmRSS")-rss0)>>10)
			}
			runtime.GC()
			time.Sleep(10 * time.Millisecond)
		}
	}
	fill := func(c *Cache, slots int) {
		for l := range layers {
			for s := range slots {
				row := c.K(l, s)
				for i := range row {
					row[i] = uint16(s + i)
				}
				copy(c.V(l, s), row)
			}
		}
	}
	c, err := New(layers, dim, capacity)
	if err != nil {
		t.Fatal(err)
	}
	fill(c, capacity) // all of it resident
	if grew := statusKiB(t, "VmRSS") - rss0; grew < 256<<10 {
		t.Skipf("writing 512 MiB made only %d MiB resident: cannot tell", grew>>10)
	}
	// A new cache made right after the old one is collected: on the
	// heap it took the old one's pages, zeroed (all of them resident
	// again); mapped, the old pages go and the new ones are not touched.
	c = nil
	runtime.GC()
	c, err = New(layers, dim, capacity)
	if err != nil {
		t.Fatal(err)
	}
	fill(c, 64) // 4 MiB
	if got := c.K(3, 7)[5]; got != 12 {
		t.Fatalf("slot 7 of layer 3 reads %d, want 12", got)
	}
	if got := c.K(3, 64)[5]; got != 0 {
		t.Fatalf("an unwritten slot reads %d, want 0", got)
	}
	settle("a new 512 MiB cache with 4 MiB written, the old one dropped")
	runtime.KeepAlive(c)

	// Caches made and dropped one after another (a server's sessions),
	// with no collection of the test's: each new one collects the dropped
	// ones, so at most a few stay mapped.
	c = nil
	vm0 := statusKiB(t, "VmSize")
	var most int64
	for range 16 {
		c, err := New(layers, dim, capacity)
		if err != nil {
			t.Fatal(err)
		}
		c.K(0, 0)[0] = 1
		time.Sleep(5 * time.Millisecond) // the cleanups of the collection New ran
		most = max(most, statusKiB(t, "VmSize")-vm0)
	}
	if most > 2<<20 {
		t.Errorf("16 caches of 512 MiB made and dropped in turn: up to %d MiB mapped at once", most>>10)
	}
}
