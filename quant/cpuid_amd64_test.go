//go:build amd64 && !noasm && gc

package quant

import (
	"bufio"
	"os"
	"reflect"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// The AVX-512 kernels' prefetch variants, for BenchmarkPanelDecodeDRAM.
var _ = func() bool {
	for i := range prefetchVariants {
		v := &prefetchVariants[i]
		decodeVariants["avx512"] = append(decodeVariants["avx512"], decodeVariant{v.name, func() func() {
			old := tuned
			tuned = v
			return func() { tuned = old }
		}})
	}
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

// TestPrefetchForPicksByCPU holds the per-CPU kernel variants to the CPUs
// they were measured on.
func TestPrefetchForPicksByCPU(t *testing.T) {
	for _, tc := range []struct {
		cpu  x86CPU
		want string
	}{
		{x86CPU{amd: true, family: 0x1a, model: 0x02}, "L1"}, // Zen 5
		{x86CPU{amd: true, family: 0x19, model: 0x11}, "L2"}, // Zen 4
		{x86CPU{amd: true, family: 0x19, model: 0x01}, "L2"}, // Zen 3
		{x86CPU{amd: false, family: 0x06, model: 0xba}, "L2"},
	} {
		if got := prefetchFor(tc.cpu).name; got != tc.want {
			t.Errorf("%+v: variant %s, want %s", tc.cpu, got, tc.want)
		}
	}
	// Each variant's kernels are its own: a name is all the test above reads.
	name := func(f any) string { return runtime.FuncForPC(reflect.ValueOf(f).Pointer()).Name() }
	for _, v := range prefetchVariants {
		suffix := ""
		if v.name == "L1" {
			suffix = "L1"
		}
		// The generated names: gemm<t>PanelStreams<s>, gemm<t>Panel<c><s>, gemmQ4KPanel2V<s>.
		own := regexp.MustCompile(`\.gemm(Q4_0|Q8_0|Q4K)Panel(Streams|\d+|2V)` + suffix + `$`)
		for _, f := range []any{v.streams[0], v.streams[1], v.tiles[0][0], v.tiles[0][15], v.tiles[1][0], v.tiles[1][15], v.q4kDecode} {
			if n := name(f); !own.MatchString(n) {
				t.Errorf("variant %s holds %s", v.name, n)
			}
		}
	}
}
