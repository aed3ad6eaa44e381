package bench

import (
	"bufio"
	"os"
	"runtime"
	"strings"

	"golang.org/x/sys/cpu"
)

// CPUInfo names the processor a report was measured on and the instruction
// set extensions the kernels choose between, so that two reports from
// different machines say why their numbers differ.
type CPUInfo struct {
	Model    string   `json:"model"`
	Arch     string   `json:"arch"`
	Features []string `json:"features"` // those that matter to the kernels, present ones only
}

// DetectCPU returns the processor's name (from /proc/cpuinfo where there is
// one) and its kernel-relevant features (from golang.org/x/sys/cpu).
func DetectCPU() CPUInfo {
	info := CPUInfo{Model: cpuModelName(), Arch: runtime.GOARCH, Features: cpuFeatures()}
	if info.Model == "" {
		info.Model = "unknown " + runtime.GOARCH + " CPU"
	}
	return info
}

func cpuFeatures() []string {
	var fs []string
	add := func(name string, has bool) {
		if has {
			fs = append(fs, name)
		}
	}
	switch runtime.GOARCH {
	case "amd64", "386":
		x := &cpu.X86
		add("avx2", x.HasAVX2)
		add("fma", x.HasFMA)
		add("f16c", x.HasF16C)
		add("avx512f", x.HasAVX512F)
		add("avx512bw", x.HasAVX512BW)
		add("avx512vl", x.HasAVX512VL)
		add("avx512vnni", x.HasAVX512VNNI)
		add("avx512vbmi", x.HasAVX512VBMI)
		add("avx-vnni", x.HasAVXVNNI)
	case "arm64":
		a := &cpu.ARM64
		add("asimd", a.HasASIMD)
		add("asimddp", a.HasASIMDDP)
		add("i8mm", a.HasI8MM)
		add("sve", a.HasSVE)
		add("sve2", a.HasSVE2)
		add("fphp", a.HasFPHP)
	}
	return fs
}

// cpuModelName reads the first "model name" (x86) or "Hardware"/"CPU part"
// (arm) line of /proc/cpuinfo; "" where there is none.
func cpuModelName() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	var part string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		switch key {
		case "model name", "Hardware", "Model":
			if val != "" {
				return val
			}
		case "CPU part":
			if part == "" {
				part = "CPU part " + val
			}
		}
	}
	return part
}
