package main

import "fmt"

// The NEON and scalar floating-point instructions the kernels use, encoded
// by hand from the Arm Architecture Reference Manual (A64 "Advanced SIMD"
// and "Floating-point data-processing"), as quant/_gen/arm64 does for the
// Q4_0 and Q8_0 kernels; enc_test.go checks them.

// inst is one encoded instruction and its assembly text.
type inst struct {
	word uint32
	text string
}

func rd(d, n int) uint32 { return uint32(n&31)<<5 | uint32(d&31) }

func rdm(d, n, m int) uint32 { return uint32(m&31)<<16 | rd(d, n) }

func v3(op uint32, name, arr string, d, n, m int) inst {
	return inst{op | rdm(d, n, m), fmt.Sprintf("%s v%d.%s, v%d.%s, v%d.%s", name, d, arr, n, arr, m, arr)}
}

func and16b(d, n, m int) inst   { return v3(0x4e201c00, "and", "16b", d, n, m) }
func orr16b(d, n, m int) inst   { return v3(0x4ea01c00, "orr", "16b", d, n, m) }
func eor16b(d, n, m int) inst   { return v3(0x6e201c00, "eor", "16b", d, n, m) }
func sub16b(d, n, m int) inst   { return v3(0x6e208400, "sub", "16b", d, n, m) }
func cmtst16b(d, n, m int) inst { return v3(0x4e208c00, "cmtst", "16b", d, n, m) }

// tbl16b looks up the bytes of index register m in table register n.
func tbl16b(d, n, m int) inst {
	return inst{0x4e000000 | rdm(d, n, m), fmt.Sprintf("tbl v%d.16b, {v%d.16b}, v%d.16b", d, n, m)}
}

func sdot(d, n, m int) inst {
	return inst{0x4e809400 | rdm(d, n, m), fmt.Sprintf("sdot v%d.4s, v%d.16b, v%d.16b", d, n, m)}
}

func smull8h(d, n, m int) inst {
	return inst{0x0e20c000 | rdm(d, n, m), fmt.Sprintf("smull v%d.8h, v%d.8b, v%d.8b", d, n, m)}
}

func smull28h(d, n, m int) inst {
	return inst{0x4e20c000 | rdm(d, n, m), fmt.Sprintf("smull2 v%d.8h, v%d.16b, v%d.16b", d, n, m)}
}

func saddlp4s(d, n int) inst {
	return inst{0x4e602800 | rd(d, n), fmt.Sprintf("saddlp v%d.4s, v%d.8h", d, n)}
}

func sadalp4s(d, n int) inst {
	return inst{0x4e606800 | rd(d, n), fmt.Sprintf("sadalp v%d.4s, v%d.8h", d, n)}
}

func movi16b(d int, imm uint8) inst {
	abc, defgh := uint32(imm>>5), uint32(imm&31)
	return inst{0x4f00e400 | abc<<16 | defgh<<5 | uint32(d&31), fmt.Sprintf("movi v%d.16b, #0x%x", d, imm)}
}

// ushr16b shifts each byte right by sh (1..8).
func ushr16b(d, n, sh int) inst {
	return inst{0x6f000400 | uint32(16-sh)<<16 | rd(d, n), fmt.Sprintf("ushr v%d.16b, v%d.16b, #%d", d, n, sh)}
}

func addv4s(d, n int) inst { return inst{0x4eb1b800 | rd(d, n), fmt.Sprintf("addv s%d, v%d.4s", d, n)} }
func scvtfS(d, n int) inst { return inst{0x5e21d800 | rd(d, n), fmt.Sprintf("scvtf s%d, s%d", d, n)} }
func fcvtSH(d, n int) inst { return inst{0x1ee24000 | rd(d, n), fmt.Sprintf("fcvt s%d, h%d", d, n)} }
func fmovSW(d, n int) inst { return inst{0x1e270000 | rd(d, n), fmt.Sprintf("fmov s%d, w%d", d, n)} }

func fmulS(d, n, m int) inst {
	return inst{0x1e200800 | rdm(d, n, m), fmt.Sprintf("fmul s%d, s%d, s%d", d, n, m)}
}

func faddS(d, n, m int) inst {
	return inst{0x1e202800 | rdm(d, n, m), fmt.Sprintf("fadd s%d, s%d, s%d", d, n, m)}
}

func addp4s(d, n, m int) inst { return v3(0x4ea0bc00, "addp", "4s", d, n, m) }
func fadd4s(d, n, m int) inst { return v3(0x4e20d400, "fadd", "4s", d, n, m) }

func scvtf4s(d, n int) inst {
	return inst{0x4e21d800 | rd(d, n), fmt.Sprintf("scvtf v%d.4s, v%d.4s", d, n)}
}

// fmlaElem4s adds n times lane 0 of m to d, each lane rounded once.
func fmlaElem4s(d, n, m int) inst {
	return inst{0x4f801000 | rdm(d, n, m), fmt.Sprintf("fmla v%d.4s, v%d.4s, v%d.s[0]", d, n, m)}
}

// ext16b takes bytes imm.. of n then m.
func ext16b(d, n, m, imm int) inst {
	return inst{0x6e000000 | uint32(imm&15)<<11 | rdm(d, n, m), fmt.Sprintf("ext v%d.16b, v%d.16b, v%d.16b, #%d", d, n, m, imm)}
}

// faddp2s adds lanes 0 and 1 of n.
func faddp2s(d, n int) inst {
	return inst{0x7e30d800 | rd(d, n), fmt.Sprintf("faddp s%d, v%d.2s", d, n)}
}

// fmaddS is d = a + n*m, rounded once.
func fmaddS(d, n, m, a int) inst {
	return inst{0x1f000000 | uint32(a&31)<<10 | rdm(d, n, m), fmt.Sprintf("fmadd s%d, s%d, s%d, s%d", d, n, m, a)}
}
