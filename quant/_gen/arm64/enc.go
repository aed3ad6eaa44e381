package main

import "fmt"

// The NEON instructions the kernels use, encoded by hand: the Go assembler
// has no mnemonics for SDOT, SMMLA and most signed, widening and
// floating-point vector forms, so every vector arithmetic instruction is
// emitted as a WORD with its LLVM/GNU syntax in a comment (encodings from
// the Arm Architecture Reference Manual, A64 "Advanced SIMD"; enc_test.go
// checks them). Loads, stores, branches and integer arithmetic are written
// in Go assembler syntax.

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

// Three registers, same arrangement.
func sdot(d, n, m int) inst {
	return inst{0x4e809400 | rdm(d, n, m), fmt.Sprintf("sdot v%d.4s, v%d.16b, v%d.16b", d, n, m)}
}
func smmla(d, n, m int) inst {
	return inst{0x4e80a400 | rdm(d, n, m), fmt.Sprintf("smmla v%d.4s, v%d.16b, v%d.16b", d, n, m)}
}
func and16b(d, n, m int) inst { return v3(0x4e201c00, "and", "16b", d, n, m) }
func eor16b(d, n, m int) inst { return v3(0x6e201c00, "eor", "16b", d, n, m) }
func orr16b(d, n, m int) inst { return v3(0x4ea01c00, "orr", "16b", d, n, m) }
func add4s(d, n, m int) inst  { return v3(0x4ea08400, "add", "4s", d, n, m) }
func fmul4s(d, n, m int) inst { return v3(0x6e20dc00, "fmul", "4s", d, n, m) }
func fmla4s(d, n, m int) inst { return v3(0x4e20cc00, "fmla", "4s", d, n, m) }
func fmax4s(d, n, m int) inst { return v3(0x4e20f400, "fmax", "4s", d, n, m) }
func zip1s(d, n, m int) inst  { return v3(0x4e803800, "zip1", "4s", d, n, m) }
func zip2s(d, n, m int) inst  { return v3(0x4e807800, "zip2", "4s", d, n, m) }
func zip1d(d, n, m int) inst  { return v3(0x4ec03800, "zip1", "2d", d, n, m) }
func zip2d(d, n, m int) inst  { return v3(0x4ec07800, "zip2", "2d", d, n, m) }
func uzp1s(d, n, m int) inst  { return v3(0x4e801800, "uzp1", "4s", d, n, m) }
func uzp2s(d, n, m int) inst  { return v3(0x4e805800, "uzp2", "4s", d, n, m) }
func mov16b(d, n int) inst {
	return inst{0x4ea01c00 | rdm(d, n, n), fmt.Sprintf("mov v%d.16b, v%d.16b", d, n)}
}
func movi16b(d int, imm uint8) inst {
	abc, defgh := uint32(imm>>5), uint32(imm&31)
	return inst{0x4f00e400 | abc<<16 | defgh<<5 | uint32(d), fmt.Sprintf("movi v%d.16b, #0x%x", d, imm)}
}

// Widening multiplies and pairwise sums (the ASIMD int8 dot).
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

// Two registers.
func ushr16b(d, n, sh int) inst {
	immhb := uint32(16 - sh) // immh = 0001: bytes; shift = 16 - immh:immb
	return inst{0x6f000400 | (0x08|immhb&7)<<16 | rd(d, n), fmt.Sprintf("ushr v%d.16b, v%d.16b, #%d", d, n, sh)}
}
func addv4s(d, n int) inst { return inst{0x4eb1b800 | rd(d, n), fmt.Sprintf("addv s%d, v%d.4s", d, n)} }
func scvtf4s(d, n int) inst {
	return inst{0x4e21d800 | rd(d, n), fmt.Sprintf("scvtf v%d.4s, v%d.4s", d, n)}
}
func fabs4s(d, n int) inst {
	return inst{0x4ea0f800 | rd(d, n), fmt.Sprintf("fabs v%d.4s, v%d.4s", d, n)}
}
func fmaxv4s(d, n int) inst {
	return inst{0x6e30f800 | rd(d, n), fmt.Sprintf("fmaxv s%d, v%d.4s", d, n)}
}
func fcvtns4s(d, n int) inst {
	return inst{0x4e21a800 | rd(d, n), fmt.Sprintf("fcvtns v%d.4s, v%d.4s", d, n)}
}
func fcvtl4s(d, n int) inst {
	return inst{0x0e217800 | rd(d, n), fmt.Sprintf("fcvtl v%d.4s, v%d.4h", d, n)}
}
func fcvtl24s(d, n int) inst {
	return inst{0x4e217800 | rd(d, n), fmt.Sprintf("fcvtl2 v%d.4s, v%d.8h", d, n)}
}
func xtn4h(d, n int) inst {
	return inst{0x0e612800 | rd(d, n), fmt.Sprintf("xtn v%d.4h, v%d.4s", d, n)}
}
func xtn28h(d, n int) inst {
	return inst{0x4e612800 | rd(d, n), fmt.Sprintf("xtn2 v%d.8h, v%d.4s", d, n)}
}
func xtn8b(d, n int) inst {
	return inst{0x0e212800 | rd(d, n), fmt.Sprintf("xtn v%d.8b, v%d.8h", d, n)}
}
func xtn216b(d, n int) inst {
	return inst{0x4e212800 | rd(d, n), fmt.Sprintf("xtn2 v%d.16b, v%d.8h", d, n)}
}

// By element.
func sdotElem(d, n, m, idx int) inst {
	h, l := uint32(idx>>1&1), uint32(idx&1)
	return inst{0x4f80e000 | l<<21 | h<<11 | rdm(d, n, m), fmt.Sprintf("sdot v%d.4s, v%d.16b, v%d.4b[%d]", d, n, m, idx)}
}
func fmulElem4s(d, n, m, idx int) inst {
	h, l := uint32(idx>>1&1), uint32(idx&1)
	return inst{0x4f809000 | l<<21 | h<<11 | rdm(d, n, m), fmt.Sprintf("fmul v%d.4s, v%d.4s, v%d.s[%d]", d, n, m, idx)}
}
func dup4s(d, n, idx int) inst {
	imm5 := uint32(idx)<<3 | 4
	return inst{0x4e000400 | imm5<<16 | rd(d, n), fmt.Sprintf("dup v%d.4s, v%d.s[%d]", d, n, idx)}
}

// Scalar floating point (single precision; fcvt from and to half).
func scvtfS(d, n int) inst { return inst{0x5e21d800 | rd(d, n), fmt.Sprintf("scvtf s%d, s%d", d, n)} }
func fcvtSH(d, n int) inst { return inst{0x1ee24000 | rd(d, n), fmt.Sprintf("fcvt s%d, h%d", d, n)} }
func fcvtHS(d, n int) inst { return inst{0x1e23c000 | rd(d, n), fmt.Sprintf("fcvt h%d, s%d", d, n)} }
func fmulS(d, n, m int) inst {
	return inst{0x1e200800 | rdm(d, n, m), fmt.Sprintf("fmul s%d, s%d, s%d", d, n, m)}
}
func fdivS(d, n, m int) inst {
	return inst{0x1e201800 | rdm(d, n, m), fmt.Sprintf("fdiv s%d, s%d, s%d", d, n, m)}
}

// fmaddS is d = n*m + a, rounded once.
func fmaddS(d, n, m, a int) inst {
	return inst{0x1f000000 | uint32(a&31)<<10 | rdm(d, n, m), fmt.Sprintf("fmadd s%d, s%d, s%d, s%d", d, n, m, a)}
}
func fmovSW(d, n int) inst { return inst{0x1e270000 | rd(d, n), fmt.Sprintf("fmov s%d, w%d", d, n)} }
func fmovWS(d, n int) inst { return inst{0x1e260000 | rd(d, n), fmt.Sprintf("fmov w%d, s%d", d, n)} }
