package quant_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
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
	t1 := time.Now()
	n := m.Repack()
	out["repack_s"] = time.Since(t1).Seconds()
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
	return map[string]float64{"rss_mib": got["Rss"], "pss_mib": got["Pss"], "anon_mib": got["Anonymous"], "file_mib": got["Rss"] - got["Anonymous"]}
}
