//go:build amd64 && !noasm && gc

package quant

// cpuid executes CPUID for a leaf and sub-leaf (cpuid_amd64.s).
//
//go:noescape
func cpuid(leaf, sub uint32) (eax, ebx, ecx, edx uint32)

// x86CPU is what a kernel choice beyond the instruction set depends on: the
// vendor and the family, which name a microarchitecture (AMD family 0x19 is
// Zen 3 and Zen 4, 0x1a Zen 5). golang.org/x/sys/cpu reports features only.
type x86CPU struct {
	amd    bool
	family int // "cpu family" of /proc/cpuinfo: base plus extended family
	model  int // "model": extended model and base model
}

// detectX86 reads the vendor string (leaf 0) and the family and model
// (leaf 1), as the SDM and AMD's manuals define them.
func detectX86() x86CPU {
	maxLeaf, b, c, d := cpuid(0, 0)
	vendor := string(le32(b)) + string(le32(d)) + string(le32(c))
	if maxLeaf < 1 {
		return x86CPU{amd: vendor == "AuthenticAMD"}
	}
	a, _, _, _ := cpuid(1, 0)
	return x86CPUFromSignature(vendor, a)
}

// x86CPUFromSignature decodes leaf 1's EAX: the extended family counts only
// when the base family is 0xf, the extended model when it is 0x6 or 0xf.
func x86CPUFromSignature(vendor string, eax uint32) x86CPU {
	base := int(eax>>8) & 0xf
	family, model := base, int(eax>>4)&0xf
	if base == 0xf {
		family += int(eax>>20) & 0xff
	}
	if base == 0x6 || base == 0xf {
		model |= (int(eax>>16) & 0xf) << 4
	}
	return x86CPU{amd: vendor == "AuthenticAMD", family: family, model: model}
}

// zen5 reports AMD's family 0x1a, the Zen 5 cores, where some prefetches
// were measured to pay that do not on Zen 4.
func (c x86CPU) zen5() bool { return c.amd && c.family == 0x1a }

func le32(v uint32) []byte { return []byte{byte(v), byte(v >> 8), byte(v >> 16), byte(v >> 24)} }

// thisX86 is the CPU this process runs on.
var thisX86 = detectX86()
