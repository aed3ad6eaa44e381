package bench

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
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
	// Family and ModelNumber are x86's "cpu family" and "model" (0 where
	// unknown): virtual machines often name only "AMD EPYC", while the
	// numbers tell a Zen 3 from a Zen 4 or 5, whose kernels' speeds differ.
	Family      int    `json:"family,omitempty"`
	ModelNumber int    `json:"model_number,omitempty"`
	Microarch   string `json:"microarch,omitempty"` // e.g. "Zen 4", where the numbers are known
}

// String is the header line's form: "AMD EPYC (Zen 4, family 25 model 17)".
func (c CPUInfo) String() string {
	switch {
	case c.Family == 0:
		return c.Model
	case c.Microarch != "":
		return fmt.Sprintf("%s (%s, family %d model %d)", c.Model, c.Microarch, c.Family, c.ModelNumber)
	}
	return fmt.Sprintf("%s (family %d model %d)", c.Model, c.Family, c.ModelNumber)
}

// DetectCPU returns the processor's name and numbers (from /proc/cpuinfo
// where there is one) and its kernel-relevant features (from
// golang.org/x/sys/cpu).
func DetectCPU() CPUInfo {
	info := CPUInfo{Arch: runtime.GOARCH, Features: cpuFeatures()}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		info.Model, info.Family, info.ModelNumber = parseCPUInfo(f)
		f.Close()
	}
	if info.Model == "" {
		info.Model = "unknown " + runtime.GOARCH + " CPU"
	}
	info.Microarch = microarch(info.Model, info.Family, info.ModelNumber)
	return info
}

// microarch names AMD's Zen generations from x86 family and model numbers
// (AMD's published family/model ranges); "" for other vendors and numbers
// it does not know.
func microarch(name string, family, model int) string {
	if !strings.Contains(name, "AMD") {
		return ""
	}
	switch family {
	case 0x17:
		if model >= 0x30 {
			return "Zen 2"
		}
		return "Zen or Zen+"
	case 0x19:
		switch {
		case model < 0x10, model >= 0x20 && model < 0x60:
			return "Zen 3"
		case model < 0x20, model >= 0x60 && model < 0x80, model >= 0xa0 && model < 0xb0:
			return "Zen 4"
		}
	case 0x1a:
		return "Zen 5"
	}
	return ""
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

// parseCPUInfo reads the first "model name" (x86) or "Hardware"/"CPU part"
// (arm) line of a /proc/cpuinfo and x86's first "cpu family" and "model"
// numbers; "" and 0 for what it does not hold.
func parseCPUInfo(r io.Reader) (name string, family, model int) {
	var part string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		switch key {
		case "model name", "Hardware", "Model":
			if val != "" && name == "" {
				name = val
			}
		case "CPU part":
			if part == "" {
				part = "CPU part " + val
			}
		case "cpu family":
			if n, err := strconv.Atoi(val); err == nil && family == 0 {
				family = n
			}
		case "model":
			if n, err := strconv.Atoi(val); err == nil && model == 0 {
				model = n
			}
		}
	}
	if name == "" {
		name = part
	}
	return name, family, model
}
