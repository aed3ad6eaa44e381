package main

// encForms returns a sample of every instruction form the encoder
// produces, with registers and indices that exercise each field's bits,
// for enc_test.go.
func encForms() []inst {
	var out []inst
	regs := [][3]v{{0, 1, 2}, {31, 30, 29}, {17, 8, 21}}
	for _, o := range []same3{vAND, vORR, vBIT, vSUBB, vADDH, vADDS, vADDPH, vADDPS, vMULS, vMLAS, vSDOT,
		vSMULL, vSMULL2, vSMLAL, vSMLAL2, vZIP1H, vZIP2H, vFADDS, vFSUBS, vFMULS, vFDIVS, vFMAXS, vFMINS,
		vFMLAS, vFMLSS, vFADDD, vFADDPS, vSUBS, vFACGTS, vFCMGES} {
		for _, r := range regs {
			out = append(out, o.of(r[0], r[1], r[2]))
		}
	}
	for _, o := range []misc2{vSADDLPH, vSCVTFS, vFCVTNSS, vFCVTZSS, vFRINTNS, vFNEGS, vFCVTLH, vFCVTL2H,
		vFCVTLS, vFCVTL2S, vFCVTNH, vFCVTN2H, vSQXTNS, vSQXTN2S, vSQXTNH, vSQXTN2H, vUXTLB, vUXTLH, vUXTL2H,
		vSXTLB, vSXTL2B, vSXTLH, vSXTL2H} {
		for _, r := range regs {
			out = append(out, o.of(r[0], r[1]))
		}
	}
	for _, r := range regs {
		out = append(out, across(vFMAXVS, "s", r[0], r[1]), across(vFMINVS, "s", r[0], r[1]),
			across(vFADDPS2D, "d", r[0], r[1]))
	}
	for _, sh := range []struct {
		name, arr string
		n         uint32
	}{{"ushr", "16b", 4}, {"ushr", "16b", 2}, {"ushr", "16b", 1}, {"shl", "16b", 4}, {"shl", "16b", 2},
		{"shl", "4s", 23}, {"ushr", "4s", 9}, {"shl", "8h", 3}} {
		out = append(out, shiftImm(sh.name, sh.arr, 3, 28, sh.n), shiftImm(sh.name, sh.arr, 30, 1, sh.n))
	}
	for _, imm := range []uint8{0x0f, 0x30, 0x20, 0xff, 0x81} {
		out = append(out, movi8(7, imm), movi8(31, imm))
	}
	out = append(out, movi0(0), movi0(19), movi0(31))
	for _, name := range []string{"mul", "mla", "fmul", "fmla"} {
		for idx := uint32(0); idx < 4; idx++ {
			out = append(out, elem(name, 16, 10, 28, idx), elem(name, 3, 25, 9, idx))
		}
	}
	for _, name := range []string{"smull", "smull2", "smlal", "smlal2"} {
		for idx := uint32(0); idx < 8; idx++ {
			out = append(out, elem(name, 20, 12, 15, idx), elem(name, 1, 30, 6, idx))
		}
	}
	for idx := uint32(0); idx < 4; idx++ {
		out = append(out, dupElem(30, 3, idx), dupElem(1, 27, idx), dupScalar(13, 24, idx), dupScalar(0, 7, idx))
	}
	out = append(out, dupGPR(28, 10), dupGPR(3, 0), dupGPR(31, 30), fcvtHS(26, 26), fcvtHS(0, 31), fcvtHS(31, 1))
	return out
}
