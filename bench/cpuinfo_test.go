package bench

import (
	"strings"
	"testing"
)

func TestParseCPUInfo(t *testing.T) {
	cases := []struct {
		name, text    string
		model         string
		family, numer int
		arch          string
	}{
		{"zen 4 vm", "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\nmodel name\t: AMD EPYC\n\nprocessor\t: 1\ncpu family\t: 99\nmodel\t\t: 98\nmodel name\t: other\n", "AMD EPYC", 25, 17, "Zen 4"},
		{"zen 3", "cpu family\t: 25\nmodel\t\t: 1\nmodel name\t: AMD EPYC 7763 64-Core Processor\n", "AMD EPYC 7763 64-Core Processor", 25, 1, "Zen 3"},
		{"zen 5", "cpu family\t: 26\nmodel\t\t: 2\nmodel name\t: AMD EPYC\n", "AMD EPYC", 26, 2, "Zen 5"},
		{"zen 2", "cpu family\t: 23\nmodel\t\t: 49\nmodel name\t: AMD EPYC 7B12\n", "AMD EPYC 7B12", 23, 49, "Zen 2"},
		{"intel", "cpu family\t: 6\nmodel\t\t: 143\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\n", "Intel(R) Xeon(R) Platinum 8480+", 6, 143, ""},
		{"arm", "processor\t: 0\nBogoMIPS\t: 50.00\nCPU implementer\t: 0x41\nCPU part\t: 0xd0c\n", "CPU part 0xd0c", 0, 0, ""},
		{"garbage", "cpu family\t: x\nmodel: \n:::\nno colon\n", "", 0, 0, ""},
		{"empty", "", "", 0, 0, ""},
	}
	for _, c := range cases {
		name, fam, num := parseCPUInfo(strings.NewReader(c.text))
		if name != c.model || fam != c.family || num != c.numer {
			t.Errorf("%s: %q %d %d, want %q %d %d", c.name, name, fam, num, c.model, c.family, c.numer)
		}
		if got := microarch(name, fam, num); got != c.arch {
			t.Errorf("%s: microarch %q, want %q", c.name, got, c.arch)
		}
	}
	zen4 := CPUInfo{Model: "AMD EPYC", Family: 25, ModelNumber: 17, Microarch: "Zen 4"}
	if s := zen4.String(); s != "AMD EPYC (Zen 4, family 25 model 17)" {
		t.Errorf("String: %q", s)
	}
	if s := (CPUInfo{Model: "x"}).String(); s != "x" {
		t.Errorf("String without numbers: %q", s)
	}
}
