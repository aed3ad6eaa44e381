package quant_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"shade/model"
	"shade/panelcache"
	"shade/quant"
)

// TestPanelCacheMeasure is not a check but the measurement behind
// docs/panels.md, opt-in: SHADE_PANEL_MEASURE=model.gguf (not with
// -short), SHADE_PANEL_MODE=cache|memory|off, SHADE_PANEL_DIR=cache dir.
// It loads the model with the test panel kernel (CPUs without panel
// kernels repack nothing otherwise), and prints one JSON line: load and
// repack seconds, where the panels came from, and the process's memory
// (/proc/self/smaps_rollup) after the repack, after one decode step, and
// after asking the kernel to page the panels out (MADV_PAGEOUT: what
// reclaim under memory pressure could take); SHADE_PANEL_HOLD=10s waits
// that long after the step and measures again (run two at once to see
// what they share). Run it once per process, so
// that each measure starts clean (docs/panels.md has the driver).
func TestPanelCacheMeasure(t *testing.T) {
	path := os.Getenv("SHADE_PANEL_MEASURE")
	if path == "" || testing.Short() {
		t.Skip("set SHADE_PANEL_MEASURE=model.gguf to measure")
	}
	mode, err := panelcache.ParseMode(os.Getenv("SHADE_PANEL_MODE"))
	if err != nil {
		t.Fatal(err)
	}
	quant.UseTestPanelKernel(t)
	out := map[string]any{"mode": mode.String()}
	t0 := time.Now()
	m, err := model.Open(path, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	out["open_s"] = time.Since(t0).Seconds()
	m.Panels = &panelcache.Options{Mode: mode, Dir: os.Getenv("SHADE_PANEL_DIR"), Warn: func(s string) { t.Log(s) }}
	t1, c1 := time.Now(), cpuSeconds()
	n := m.Repack()
	out["repack_s"] = time.Since(t1).Seconds()
	out["repack_cpu_s"] = cpuSeconds() - c1 // what a shared machine's load does not inflate as much
	out["repack_bytes"] = n
	out["panels"] = m.PanelStats()
	out["after_repack"] = smaps(t)
	s, err := m.NewState(8)
	if err != nil {
		t.Fatal(err)
	}
	t2 := time.Now()
	if err := s.Forward(model.Chain([]int32{1})); err != nil {
		t.Fatal(err)
	}
	out["step_s"] = time.Since(t2).Seconds()
	out["after_step"] = smaps(t)
	if d, err := time.ParseDuration(os.Getenv("SHADE_PANEL_HOLD")); err == nil {
		// Another process loads the model meanwhile: Pss shows what
		// the two share.
		time.Sleep(d)
		out["after_hold"] = smaps(t)
	}
	var mats []quant.Matrix
	mats = append(mats, m.Weights.Embed, m.Weights.Output)
	for i := range m.Config.Layers {
		l, _ := m.Weights.Layers.Layer(i)
		for _, lm := range l.Matrices() {
			mats = append(mats, *lm.M)
		}
	}
	for _, q := range mats {
		if b := quant.PanelsForTest(q); len(b) > 0 {
			page := uintptr(os.Getpagesize())
			base := uintptr(unsafe.Pointer(&b[0]))
			lo := ((base+page-1)&^(page-1) - base)
			hi := ((base+uintptr(len(b)))&^(page-1) - base)
			if hi > lo {
				_ = unix.Madvise(b[lo:hi], unix.MADV_PAGEOUT)
			}
		}
	}
	out["after_pageout"] = smaps(t)
	b, _ := json.Marshal(out)
	fmt.Printf("MEASURE %s\n", b)
}

// cpuSeconds is the process's user and system CPU time.
func cpuSeconds() float64 {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// smaps is the process's memory in MiB: Rss, Pss, Anonymous and the
// file-backed rest.
func smaps(t *testing.T) map[string]float64 {
	f, err := os.Open("/proc/self/smaps_rollup")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	got := map[string]float64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) == 3 && fs[2] == "kB" {
			if v, err := strconv.ParseFloat(fs[1], 64); err == nil {
				got[strings.TrimSuffix(fs[0], ":")] = v / 1024
			}
		}
	}
	return map[string]float64{"rss_mib": got["Rss"], "pss_mib": got["Pss"], "anon_mib": got["Anonymous"], "file_mib": got["Rss"] - got["Anonymous"],
		"anon_huge_mib": got["AnonHugePages"], "file_pmd_mib": got["FilePmdMapped"]}
}

// TestPanelMemoryKindMeasure is the other half of the measurement, opt-in
// like TestPanelCacheMeasure (SHADE_PANEL_MEASURE=model.gguf): whether a
// memory-bound pass over the weights runs slower from a file mapping (page
// cache, as panels from a cache file are) than from anonymous memory (as
// panels repacked in memory are). It runs the layers' products of one
// decode step (n = 1, this CPU's own kernels in the file's layout) on the
// mapped model file and on an anonymous copy of it, alternating, and
// prints the median ms of each.
func TestPanelMemoryKindMeasure(t *testing.T) {
	path := os.Getenv("SHADE_PANEL_MEASURE")
	if path == "" || testing.Short() {
		t.Skip("set SHADE_PANEL_MEASURE=model.gguf to measure")
	}
	m, err := model.Open(path, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var mapped, anon []quant.Matrix
	for i := range m.Config.Layers {
		l, _ := m.Weights.Layers.Layer(i)
		for _, lm := range l.Matrices() {
			q := *lm.M
			b, err := unix.Mmap(-1, 0, len(q.Data), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Munmap(b)
			copy(b, q.Data)
			p, _ := quant.NewMatrix(q.Type, q.Rows, q.Cols, q.Data)
			a, _ := quant.NewMatrix(q.Type, q.Rows, q.Cols, b)
			mapped, anon = append(mapped, p), append(anon, a)
		}
	}
	x := make([]float32, 16384)
	y := make([]float32, 16384)
	for i := range x {
		x[i] = float32(i%7) - 3
	}
	var buf quant.Scratch
	pass := func(ms []quant.Matrix) float64 {
		t0 := time.Now()
		for _, q := range ms {
			quant.MatMul(m.Pool, q, x[:q.Cols], 1, y[:q.Rows], &buf)
		}
		return time.Since(t0).Seconds() * 1000
	}
	pass(mapped)
	pass(anon)
	var a, b []float64
	for range 15 {
		a = append(a, pass(mapped))
		b = append(b, pass(anon))
	}
	med := func(v []float64) float64 { slices.Sort(v); return v[len(v)/2] }
	out := map[string]any{"kernels": quant.Kernels(), "file_mapped_ms": med(a), "anonymous_ms": med(b), "ratio_file_over_anon": med(a) / med(b)}
	j, _ := json.Marshal(out)
	fmt.Printf("MEASURE %s\n", j)
}
