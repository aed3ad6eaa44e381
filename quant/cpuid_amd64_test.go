//go:build amd64 && !noasm && gc

package quant

import (
	"bufio"
	"os"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// The AVX-512 decode kernels' two prefetch variants, for
// BenchmarkPanelDecodeDRAM: "zen5" is what Zen 5 picks, "other" the rest.
var _ = func() bool {
	use := func(streams streamsKernels, q4k func(t *byte, toff int, nb int, a *byte, bp *int16, y *float32, yoff int)) func() func() {
		return func() func() {
			s, q := panelStreamKernels, q4kDecodeVNNI
			panelStreamKernels, q4kDecodeVNNI = streams, q4k
			return func() { panelStreamKernels, q4kDecodeVNNI = s, q }
		}
	}
	decodeVariants["avx512"] = append(decodeVariants["avx512"],
		decodeVariant{"other", use(streamsPrefetchL2, gemmQ4KPanel2V)},
		decodeVariant{"zen5", use(streamsPrefetchL1, gemmQ4KPanel2VL1)})
	return true
}()

func TestX86CPUFromSignature(t *testing.T) {
	for _, tc := range []struct {
		vendor string
		eax    uint32
		want   x86CPU
	}{
		{"AuthenticAMD", 0x00a00f11, x86CPU{amd: true, family: 0x19, model: 0x01}},  // Zen 3, Milan
		{"AuthenticAMD", 0x00a10f11, x86CPU{amd: true, family: 0x19, model: 0x11}},  // Zen 4, Genoa
		{"AuthenticAMD", 0x00b00f21, x86CPU{amd: true, family: 0x1a, model: 0x02}},  // Zen 5, Turin
		{"AuthenticAMD", 0x00800f12, x86CPU{amd: true, family: 0x17, model: 0x01}},  // Zen, Naples
		{"GenuineIntel", 0x000906ea, x86CPU{amd: false, family: 0x06, model: 0x9e}}, // Coffee Lake
		{"GenuineIntel", 0x000b06a2, x86CPU{amd: false, family: 0x06, model: 0xba}}, // Raptor Lake
		{"GenuineIntel", 0x00000f29, x86CPU{amd: false, family: 0x0f, model: 0x02}}, // Pentium 4: no extended family
	} {
		if got := x86CPUFromSignature(tc.vendor, tc.eax); got != tc.want {
			t.Errorf("%s %#08x: %+v, want %+v", tc.vendor, tc.eax, got, tc.want)
		}
	}
}

// TestDetectX86MatchesProc holds CPUID's reading against the kernel's, where
// /proc/cpuinfo is there to read.
func TestDetectX86MatchesProc(t *testing.T) {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	var want x86CPU
	var fields int
	sc := bufio.NewScanner(f)
	for sc.Scan() && fields < 3 {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		switch key {
		case "vendor_id":
			want.amd = val == "AuthenticAMD"
			fields++
		case "cpu family":
			want.family, _ = strconv.Atoi(val)
			fields++
		case "model":
			want.model, _ = strconv.Atoi(val)
			fields++
		}
	}
	if fields < 3 {
		t.Skip("/proc/cpuinfo names no vendor, family and model")
	}
	if got := detectX86(); got != want {
		t.Errorf("CPUID says %+v, /proc/cpuinfo %+v", got, want)
	}
}

// TestStreamsForPicksByCPU holds the per-CPU kernel variants (streamsFor,
// tilesFor, q4kDecodeFor) to the CPUs they were measured on.
func TestStreamsForPicksByCPU(t *testing.T) {
	name := func(f any) string { return runtime.FuncForPC(reflect.ValueOf(f).Pointer()).Name() }
	same := func(a, b streamsKernels) bool { return name(a[0]) == name(b[0]) && name(a[1]) == name(b[1]) }
	for _, tc := range []struct {
		cpu  x86CPU
		want streamsKernels
	}{
		{x86CPU{amd: true, family: 0x1a, model: 0x02}, streamsPrefetchL1},
		{x86CPU{amd: true, family: 0x19, model: 0x11}, streamsPrefetchL2},
		{x86CPU{amd: true, family: 0x19, model: 0x01}, streamsPrefetchL2},
		{x86CPU{amd: false, family: 0x06, model: 0xba}, streamsPrefetchL2},
	} {
		wantDecode := any(gemmQ4KPanel2V)
		if name(tc.want[0]) == name(streamsPrefetchL1[0]) {
			wantDecode = gemmQ4KPanel2VL1 // the Zen 5 choices go together
		}
		if got := q4kDecodeFor(tc.cpu); name(got) != name(wantDecode) {
			t.Errorf("%+v: Q4_K decode %s, want %s", tc.cpu, name(got), name(wantDecode))
		}
		wantTiles := tilesPrefetchL2
		if name(tc.want[0]) == name(streamsPrefetchL1[0]) {
			wantTiles = tilesPrefetchL1
		}
		if got := tilesFor(tc.cpu); name(got[0][15]) != name(wantTiles[0][15]) || name(got[1][0]) != name(wantTiles[1][0]) {
			t.Errorf("%+v: tiles %s, want %s", tc.cpu, name(got[0][15]), name(wantTiles[0][15]))
		}
		if !same(streamsFor(tc.cpu), tc.want) {
			t.Errorf("%+v: got %s, want %s", tc.cpu, name(streamsFor(tc.cpu)[0]), name(tc.want[0]))
		}
	}
}
