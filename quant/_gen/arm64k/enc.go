package main

import "fmt"

// An encoder for the Advanced SIMD instructions the Go assembler has no
// mnemonic for (or spells in ways easy to get wrong). Each function returns
// the 32-bit word and its text in the ARM syntax llvm-mc and the ARM ARM
// use, which becomes the WORD's comment. The bit layouts follow the Arm
// Architecture Reference Manual (DDI 0487), section C4.1 "A64 instruction
// set encoding"; enc_test.go holds every form against reference encodings.

// inst is one encoded instruction.
type inst struct {
	word uint32
	text string
}

// v names a vector register V0..V31.
type v uint32

func reg(r v, arr string) string { return fmt.Sprintf("v%d.%s", r, arr) }

func chk(r ...v) {
	for _, x := range r {
		if x > 31 {
			panic(fmt.Sprintf("register v%d", x))
		}
	}
}

// same3 is the "three registers of the same type" class and its
// relatives (three different, across lanes): base | Rm<<16 | Rn<<5 | Rd.
type same3 struct {
	name       string
	base       uint32
	ad, an, am string // arrangements of Vd, Vn, Vm
}

func (o same3) of(d, n, m v) inst {
	chk(d, n, m)
	return inst{o.base | uint32(m)<<16 | uint32(n)<<5 | uint32(d),
		fmt.Sprintf("%s %s, %s, %s", o.name, reg(d, o.ad), reg(n, o.an), reg(m, o.am))}
}

// misc2 is the "two-register miscellaneous" class: base | Rn<<5 | Rd.
type misc2 struct {
	name   string
	base   uint32
	ad, an string
}

func (o misc2) of(d, n v) inst {
	chk(d, n)
	return inst{o.base | uint32(n)<<5 | uint32(d), fmt.Sprintf("%s %s, %s", o.name, reg(d, o.ad), reg(n, o.an))}
}

// Three-same and three-different forms (Q=1 unless the name ends in a
// 64-bit arrangement).
var (
	vAND    = same3{"and", 0x4e201c00, "16b", "16b", "16b"}
	vORR    = same3{"orr", 0x4ea01c00, "16b", "16b", "16b"}
	vBIT    = same3{"bit", 0x6ea01c00, "16b", "16b", "16b"}
	vSUBB   = same3{"sub", 0x6e208400, "16b", "16b", "16b"}
	vADDH   = same3{"add", 0x4e608400, "8h", "8h", "8h"}
	vADDS   = same3{"add", 0x4ea08400, "4s", "4s", "4s"}
	vSUBS   = same3{"sub", 0x6ea08400, "4s", "4s", "4s"}
	vADDPH  = same3{"addp", 0x4e60bc00, "8h", "8h", "8h"}
	vADDPS  = same3{"addp", 0x4ea0bc00, "4s", "4s", "4s"}
	vMULS   = same3{"mul", 0x4ea09c00, "4s", "4s", "4s"}
	vMLAS   = same3{"mla", 0x4ea09400, "4s", "4s", "4s"}
	vSDOT   = same3{"sdot", 0x4e809400, "4s", "16b", "16b"} // FEAT_DotProd
	vSMULL  = same3{"smull", 0x0e20c000, "8h", "8b", "8b"}
	vSMULL2 = same3{"smull2", 0x4e20c000, "8h", "16b", "16b"}
	vSMLAL  = same3{"smlal", 0x0e208000, "8h", "8b", "8b"}
	vSMLAL2 = same3{"smlal2", 0x4e208000, "8h", "16b", "16b"}
	vZIP1H  = same3{"zip1", 0x4e403800, "8h", "8h", "8h"}
	vZIP2H  = same3{"zip2", 0x4e407800, "8h", "8h", "8h"}
	vFADDS  = same3{"fadd", 0x4e20d400, "4s", "4s", "4s"}
	vFSUBS  = same3{"fsub", 0x4ea0d400, "4s", "4s", "4s"}
	vFMULS  = same3{"fmul", 0x6e20dc00, "4s", "4s", "4s"}
	vFDIVS  = same3{"fdiv", 0x6e20fc00, "4s", "4s", "4s"}
	vFMAXS  = same3{"fmax", 0x4e20f400, "4s", "4s", "4s"}
	vFMINS  = same3{"fmin", 0x4ea0f400, "4s", "4s", "4s"}
	vFMLAS  = same3{"fmla", 0x4e20cc00, "4s", "4s", "4s"}
	vFMLSS  = same3{"fmls", 0x4ea0cc00, "4s", "4s", "4s"}
	vFADDD  = same3{"fadd", 0x4e60d400, "2d", "2d", "2d"}
	vFADDPS = same3{"faddp", 0x6e20d400, "4s", "4s", "4s"}
)

// Two-register forms.
var (
	vSADDLPH  = misc2{"saddlp", 0x4e602800, "4s", "8h"}
	vSCVTFS   = misc2{"scvtf", 0x4e21d800, "4s", "4s"}
	vFCVTNSS  = misc2{"fcvtns", 0x4e21a800, "4s", "4s"}
	vFCVTZSS  = misc2{"fcvtzs", 0x4ea1b800, "4s", "4s"}
	vFRINTNS  = misc2{"frintn", 0x4e218800, "4s", "4s"}
	vFNEGS    = misc2{"fneg", 0x6ea0f800, "4s", "4s"}
	vFCVTLH   = misc2{"fcvtl", 0x0e217800, "4s", "4h"}   // half to single, low half
	vFCVTL2H  = misc2{"fcvtl2", 0x4e217800, "4s", "8h"}  // high half
	vFCVTLS   = misc2{"fcvtl", 0x0e617800, "2d", "2s"}   // single to double
	vFCVTL2S  = misc2{"fcvtl2", 0x4e617800, "2d", "4s"}  //
	vFCVTNH   = misc2{"fcvtn", 0x0e216800, "4h", "4s"}   // single to half, low half
	vFCVTN2H  = misc2{"fcvtn2", 0x4e216800, "8h", "4s"}  // high half, low kept
	vSQXTNS   = misc2{"sqxtn", 0x0e614800, "4h", "4s"}   // int32 to int16, saturating
	vSQXTN2S  = misc2{"sqxtn2", 0x4e614800, "8h", "4s"}  //
	vSQXTNH   = misc2{"sqxtn", 0x0e214800, "8b", "8h"}   // int16 to int8, saturating
	vSQXTN2H  = misc2{"sqxtn2", 0x4e214800, "16b", "8h"} //
	vUXTLB    = misc2{"uxtl", 0x2f08a400, "8h", "8b"}    // ushll #0
	vUXTLH    = misc2{"uxtl", 0x2f10a400, "4s", "4h"}    //
	vUXTL2H   = misc2{"uxtl2", 0x6f10a400, "4s", "8h"}   //
	vSXTLB    = misc2{"sxtl", 0x0f08a400, "8h", "8b"}    // sshll #0
	vSXTL2B   = misc2{"sxtl2", 0x4f08a400, "8h", "16b"}  //
	vSXTLH    = misc2{"sxtl", 0x0f10a400, "4s", "4h"}    //
	vSXTL2H   = misc2{"sxtl2", 0x4f10a400, "4s", "8h"}   //
	vFMAXVS   = misc2{"fmaxv", 0x6e30f800, "4s", "4s"}   // printed with an s destination
	vFMINVS   = misc2{"fminv", 0x6eb0f800, "4s", "4s"}   //
	vFADDPS2D = misc2{"faddp", 0x7e70d800, "2d", "2d"}   // scalar pairwise: faddp d, v.2d
)

// across returns an across-lanes or scalar-pairwise instruction, whose
// destination is a scalar register (s or d).
func across(o misc2, scalar string, d, n v) inst {
	i := o.of(d, n)
	i.text = fmt.Sprintf("%s %s%d, %s", o.name, scalar, d, reg(n, o.an))
	return i
}

// shiftImm encodes the "shift by immediate" class: USHR/SHL on bytes,
// halves or words. immh:immb is esize+shift for left shifts and
// 2*esize-shift for right shifts.
func shiftImm(name string, arr string, d, n v, sh uint32) inst {
	chk(d, n)
	esize := map[string]uint32{"16b": 8, "8h": 16, "4s": 32}[arr]
	if esize == 0 || sh >= esize || (name == "ushr" && sh == 0) {
		panic("shift " + name + " " + arr)
	}
	var base, imm uint32
	switch name {
	case "ushr":
		base, imm = 0x6f000400, 2*esize-sh
	case "shl":
		base, imm = 0x4f005400, esize+sh
	default:
		panic(name)
	}
	return inst{base | imm<<16 | uint32(n)<<5 | uint32(d), fmt.Sprintf("%s %s, %s, #%d", name, reg(d, arr), reg(n, arr), sh)}
}

// movi8 is MOVI Vd.16B, #imm (op=0, cmode=1110): abc in bits 18..16,
// defgh in bits 9..5.
func movi8(d v, imm uint8) inst {
	chk(d)
	x := uint32(imm)
	return inst{0x4f00e400 | (x>>5)<<16 | (x&31)<<5 | uint32(d), fmt.Sprintf("movi %s, #0x%x", reg(d, "16b"), imm)}
}

// movi0 is MOVI Vd.2D, #0 (op=1, cmode=1110), the zeroing idiom.
func movi0(d v) inst {
	chk(d)
	return inst{0x6f00e400 | uint32(d), fmt.Sprintf("movi %s, #0000000000000000", reg(d, "2d"))}
}

// elem encodes the "vector x indexed element" class. For 32-bit elements
// the index is H:L and Vm is M:Rm (any register); for 16-bit elements the
// index is H:L:M and Vm must be V0..V15.
func elem(name string, d, n, m v, idx uint32) inst {
	chk(d, n, m)
	type form struct {
		base   uint32
		ad, an string
		es     string
	}
	f, ok := map[string]form{
		"mul":    {0x4f808000, "4s", "4s", "s"},
		"mla":    {0x6f800000, "4s", "4s", "s"},
		"fmul":   {0x4f809000, "4s", "4s", "s"},
		"fmla":   {0x4f801000, "4s", "4s", "s"},
		"smull":  {0x0f40a000, "4s", "4h", "h"},
		"smull2": {0x4f40a000, "4s", "8h", "h"},
		"smlal":  {0x0f402000, "4s", "4h", "h"},
		"smlal2": {0x4f402000, "4s", "8h", "h"},
	}[name]
	if !ok {
		panic(name)
	}
	var h, l, mm, rm uint32
	if f.es == "s" {
		if idx > 3 {
			panic("index")
		}
		h, l, mm, rm = idx>>1, idx&1, uint32(m)>>4, uint32(m)&15
	} else {
		if idx > 7 || m > 15 {
			panic("index or register of a 16-bit element")
		}
		h, l, mm, rm = idx>>2, (idx>>1)&1, idx&1, uint32(m)
	}
	w := f.base | l<<21 | mm<<20 | rm<<16 | h<<11 | uint32(n)<<5 | uint32(d)
	return inst{w, fmt.Sprintf("%s %s, %s, v%d.%s[%d]", name, reg(d, f.ad), reg(n, f.an), m, f.es, idx)}
}

// dupElem is DUP Vd.4S, Vn.S[i] (imm5 = i:100).
func dupElem(d, n v, idx uint32) inst {
	chk(d, n)
	imm5 := idx<<3 | 4
	return inst{0x4e000400 | imm5<<16 | uint32(n)<<5 | uint32(d), fmt.Sprintf("dup %s, v%d.s[%d]", reg(d, "4s"), n, idx)}
}

// dupScalar is DUP Sd, Vn.S[i] (MOV Sd, Vn.S[i]): a lane to a scalar
// register.
func dupScalar(d, n v, idx uint32) inst {
	chk(d, n)
	imm5 := idx<<3 | 4
	return inst{0x5e000400 | imm5<<16 | uint32(n)<<5 | uint32(d), fmt.Sprintf("mov s%d, v%d.s[%d]", d, n, idx)}
}

// dupGPR is DUP Vd.4S, Wn.
func dupGPR(d v, rn uint32) inst {
	chk(d)
	if rn > 30 {
		panic("gpr")
	}
	return inst{0x4e040c00 | rn<<5 | uint32(d), fmt.Sprintf("dup %s, w%d", reg(d, "4s"), rn)}
}

// fcvtHS is the scalar FCVT Sd, Hn (half to single).
func fcvtHS(d, n v) inst {
	chk(d, n)
	return inst{0x1ee24000 | uint32(n)<<5 | uint32(d), fmt.Sprintf("fcvt s%d, h%d", d, n)}
}
