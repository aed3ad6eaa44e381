//go:build linux

package quant_test

import (
	"bufio"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"shade/gguf"
	"shade/panelcache"
	"shade/par"
	"shade/quant"
)

// pmdMappedKiB is the FilePmdMapped of this process's mappings of path
// (kB of it mapped in 2 MiB entries), from /proc/self/smaps.
func pmdMappedKiB(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no /proc/self/smaps: %v", err)
	}
	defer f.Close()
	total, in := 0, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if fields := strings.Fields(line); len(fields) > 0 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":") {
			in = strings.HasSuffix(line, " "+path)
			continue
		}
		if in && strings.HasPrefix(line, "FilePmdMapped:") {
			n, _ := strconv.Atoi(strings.Fields(line)[1])
			total += n
		}
	}
	return total
}

// largeFoliosHere reports whether a file in dir, written, synced, dropped
// from the page cache and read back through a MADV_HUGEPAGE mapping, is
// mapped in 2 MiB entries: whether this kernel and file system can give
// the panel cache huge pages at all.
func largeFoliosHere(t *testing.T, dir string) bool {
	t.Helper()
	if b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil || strings.Contains(string(b), "[never]") {
		return false
	}
	path := filepath.Join(dir, "probe")
	if err := os.WriteFile(path, make([]byte, 8<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_ = f.Sync()
	_ = unix.Fadvise(int(f.Fd()), 0, 8<<20, unix.FADV_DONTNEED)
	m, err := unix.Mmap(int(f.Fd()), 0, 8<<20, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	_ = unix.Madvise(m, unix.MADV_HUGEPAGE)
	if unix.Madvise(m, unix.MADV_POPULATE_READ) != nil {
		return false
	}
	return pmdMappedKiB(t, path) > 0
}

// TestPanelCacheHugePages builds the panel cache of a model with 9 MiB of
// Q4_0 panels and checks that the mapping the matrices compute on is
// mapped in 2 MiB pages, where this kernel and file system can do it at all
// (a probe file decides; elsewhere it skips). A cache file left in the
// page cache as its writes made it is mapped in 4 KiB pages: an 8B model's
// decode then ran at half the speed (docs/panels.md).
func TestPanelCacheHugePages(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and reads a 10 MiB model")
	}
	quant.UseTestPanelKernel(t)
	dir := t.TempDir()
	if !largeFoliosHere(t, dir) {
		t.Skip("no large folios for files here (THP off, or the file system does not make them)")
	}
	const rows, cols = 8192, 2048
	path := filepath.Join(dir, "big.gguf")
	fd, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := gguf.NewWriter(fd)
	w.Set("general.architecture", "test")
	w.AddTensor("w", quant.Q4_0, cols, rows)
	w.WriteHeader()
	w.Write(quant.RandomWeightsForTest(rand.New(rand.NewPCG(5, 6)), quant.Q4_0, rows, cols))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	fd.Close()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ti, _ := f.Tensor("w")
	m, err := quant.NewMatrix(quant.Q4_0, rows, cols, f.TensorData(ti))
	if err != nil {
		t.Fatal(err)
	}
	m = quant.Repackable(m, f.ReleasePages)
	defer m.DropPanels()
	p := par.New(2)
	defer p.Close()
	r := panelcache.Install(p, f, []quant.Matrix{m}, panelcache.Options{Dir: filepath.Join(dir, "panels"), MinBytes: -1})
	if r.Source != panelcache.SourceBuilt || r.Warning != "" {
		t.Fatalf("%+v; want a build", r)
	}
	if kb := pmdMappedKiB(t, r.Path); kb < 4096 {
		t.Errorf("after the build, %d KiB of %s's %d MiB mapped in 2 MiB pages; want most", kb, r.Path, r.FileBytes>>20)
	}
}
