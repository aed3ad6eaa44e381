package main

import (
	"fmt"
	"strings"
)

// k35File writes k35_arm64.s: the Q3_K and Q5_K kernels, in the form of
// kquant_arm64.s's (one weight row, c activation rows, each output the Go
// twin's bits).
func k35File() string {
	a := &asm{}
	header(a)
	a.p("")
	a.p("// Preconditions (checked by the Go callers in k35_arm64.go): nb > 0")
	a.p("// super-blocks of one weight row at w; c Q8_K activation rows of nb")
	a.p("// super-blocks arb bytes apart at a; room for c outputs ys floats apart")
	a.p("// at y. The Asimd kernels need ARMv8 Advanced SIMD, the Dot ones")
	a.p("// FEAT_DotProd as well. A super-block's levels are unpacked once for")
	a.p("// all c rows; its integer sums are exact in int32. Both types keep")
	a.p("// ggml's AVX2 eight lanes and eight float32 lanes a row (FMLA by")
	a.p("// element), added as hsum8 at the end (Q5_K's minima in one more fused")
	a.p("// scalar a row, added after). So each output is the Go twin's.")
	for _, s := range sets {
		for c := 1; c <= maxActs; c++ {
			q3k(a, s.suffix, c)
		}
		for c := 1; c <= maxActs; c++ {
			q5k(a, s.suffix, c)
		}
	}
	return a.b.String()
}

// q5k writes gemmQ5K<set>C<c>: dotQ5_KQ8_KGo's order, ggml's AVX2 one.
// The fifth bit of each level comes from qh (bit 2g of byte l for the low
// nibbles of group g, bit 2g+1 for the high ones), inserted at bit 4 of
// the unpacked bytes. Each activation row keeps the twin's eight int32
// lanes in two registers (lanes 0..3: bytes 0..15 of each 32-value
// sub-block, 4..7: bytes 16..31; lane l sums bytes 4l..4l+3 times the
// sub-block's scale): SDOT's lane k is exactly bytes 4k..4k+3 (Dot);
// Asimd's SMULL products (at most 31·128) are paired by ADDP twice into
// int16 lanes of four bytes (at most 4·31·128, exact), then widened by
// SMLAL with the scale. Per super-block the lanes go into the row's eight
// float32 lanes by FMLA (fused, as VFMADD), and Σ min·bsum into the row's
// lane of one register of summs by FMLS; the end adds the lanes in
// hsum_float_8's order, then the summs.
func q5k(a *asm, set string, c int) {
	name := fmt.Sprintf("gemmQ5K%sC%d", set, c)
	dot := set == "Dot"
	if c == 1 {
		a.p("")
		a.p("// The Q5_K kernels of this set follow ggml's AVX2 order, as")
		a.p("// dotQ5_KQ8_KGo: eight int32 lanes a row, each fused into its float32")
		a.p("// lane per super-block (FMLA), the mins into a fused scalar (FMLS),")
		a.p("// hsum_float_8 of the lanes plus that scalar at the end.")
	}
	kPrologue(a, name, c)
	const (
		vScLo, vScHi = v(11), v(14) // Dot: int32 scales 0..3, 4..7
		vSc16        = v(11)        // Asimd: int16 scales 0..7
		vSumms       = v(15)        // lane i: row i's summs
		rD           = "R6"         // f16 d, dmin of the super-block
	)
	accLo := func(i int) v { return v(16 + i) } // int32 lanes 0..3
	accHi := func(i int) v { return v(20 + i) } // int32 lanes 4..7
	fLo := func(i int) v { return v(24 + i) }   // float32 lanes 0..3
	fHi := func(i int) v { return v(28 + i) }   // float32 lanes 4..7
	a.i(movi0(vSumms))
	for i := 0; i < c; i++ {
		a.i(movi0(fLo(i)))
		a.i(movi0(fHi(i)))
	}
	a.label(name + "_block")
	a.mark()
	a.op("MOVWU (%s), %s", rW, rD)
	a.op("MOVWU 4(%s), R10", rW)
	a.op("MOVWU 8(%s), R11", rW)
	a.op("MOVWU 12(%s), R12", rW)
	a.op("LSRW $4, R12, R13")
	a.op("ANDW $0x0f0f0f0f, R13")
	a.op("LSRW $6, R11, R14")
	a.op("ANDW $0x03030303, R14")
	a.op("ORRW R14<<4, R13, R13")      // mins 4..7
	a.op("ANDW $0x3f3f3f3f, R11, R15") // mins 0..3
	a.op("ANDW $0x0f0f0f0f, R12")
	a.op("LSRW $6, R10, R14")
	a.op("ANDW $0x03030303, R14")
	a.op("ORRW R14<<4, R12, R12") // scales 4..7
	a.op("ANDW $0x3f3f3f3f, R10") // scales 0..3
	a.op("ORR R12<<32, R10, R10")
	a.op("ORR R13<<32, R15, R15")
	a.op("FMOVD R10, F%d", vScLo)
	if dot {
		a.i(vUXTLB.of(vScLo, vScLo))
		a.i(vUXTL2H.of(vScHi, vScLo))
		a.i(vUXTLH.of(vScLo, vScLo))
	} else {
		a.i(vUXTLB.of(vSc16, vScLo))
	}
	a.op("ADD $16, %s", rW)
	a.op("VLD1.P 32(%s), [V12.B16, V13.B16]", rW) // qh
	for i := 0; i < c; i++ {
		a.op("ADD $4, %s", actRegs[i]) // dy is read after the quants
	}
	for g := 0; g < 4; g++ {
		// Levels V0..V3 (values 64g+16k..), from qs in V4, V5; the 0x0f
		// and 0x10 bytes in V8, V9, V10 the shifted qh.
		a.i(movi8(8, 0x0f))
		a.i(movi8(9, 0x10))
		a.op("VLD1.P 32(%s), [V4.B16, V5.B16]", rW)
		a.i(vAND.of(0, 4, 8))
		a.i(vAND.of(1, 5, 8))
		a.i(shiftImm("ushr", "16b", 2, 4, 4))
		a.i(shiftImm("ushr", "16b", 3, 5, 4))
		for k, bit := range []int{2 * g, 2 * g, 2*g + 1, 2*g + 1} {
			src := v(12 + k%2)
			if bit < 4 {
				a.i(shiftImm("shl", "16b", 10, src, uint32(4-bit)))
				src = 10
			} else if bit > 4 {
				a.i(shiftImm("ushr", "16b", 10, src, uint32(bit-4)))
				src = 10
			}
			a.i(vBIT.of(v(k), src, 9))
		}
		for i := 0; i < c; i++ {
			a.op("VLD1.P 64(%s), [V4.B16, V5.B16, V6.B16, V7.B16]", actRegs[i])
			for h, j := range []uint32{uint32(2 * g), uint32(2*g + 1)} {
				first := g == 0 && h == 0
				lo, hi := v(2*h), v(2*h+1) // levels of bytes 0..15, 16..31
				alo, ahi := v(4+2*h), v(5+2*h)
				if dot {
					r, l := vScLo, j
					if j >= 4 {
						r, l = vScHi, j-4
					}
					a.i(movi0(8))
					a.i(movi0(9))
					a.i(vSDOT.of(8, lo, alo))
					a.i(vSDOT.of(9, hi, ahi))
					op := "mla"
					if first {
						op = "mul"
					}
					a.i(elem(op, accLo(i), 8, r, l))
					a.i(elem(op, accHi(i), 9, r, l))
				} else {
					a.i(vSMULL.of(8, lo, alo))
					a.i(vSMULL2.of(9, lo, alo))
					a.i(vADDPH.of(8, 8, 9))
					a.i(vSMULL.of(9, hi, ahi))
					a.i(vSMULL2.of(10, hi, ahi))
					a.i(vADDPH.of(9, 9, 10))
					a.i(vADDPH.of(8, 8, 9)) // lanes 0..3, 4..7 as int16
					op, op2 := "smlal", "smlal2"
					if first {
						op, op2 = "smull", "smull2"
					}
					a.i(elem(op, accLo(i), 8, vSc16, j))
					a.i(elem(op2, accHi(i), 8, vSc16, j))
				}
			}
		}
	}
	// Mins: int32 0..3 in V4, 4..7 in V5; row i's Σ min·bsum in lane i
	// of V8; its dy in lane i of V10.
	a.op("FMOVD R15, F4")
	a.i(vUXTLB.of(4, 4))
	a.i(vUXTL2H.of(5, 4))
	a.i(vUXTLH.of(4, 4))
	var mins []v
	for i := 0; i < c; i++ {
		a.op("SUB $260, %s, R10", actRegs[i])
		a.op("VLD1 (R10), V10.S[%d]", i)
		a.op("VLD1.P 32(%s), [V6.B16, V7.B16]", actRegs[i])
		a.i(vSADDLPH.of(6, 6))
		a.i(vSADDLPH.of(7, 7))
		a.i(vMULS.of(v(i), 6, 4))
		a.i(vMLAS.of(v(i), 7, 5))
		mins = append(mins, v(i))
	}
	reduceLanes(a, 8, 9, mins)
	a.i(vSCVTFS.of(8, 8))
	a.op("FMOVS %s, F9", rD)
	a.i(vFCVTLH.of(9, 9))           // d, dmin
	a.i(elem("fmul", 11, 10, 9, 0)) // d·dy by row
	a.i(elem("fmul", 14, 10, 9, 1)) // dmin·dy by row
	a.i(vFMLSS.of(vSumms, 14, 8))   // summs = fma(-(dmin·dy), Σ, summs)
	for i := 0; i < c; i++ {
		a.i(vSCVTFS.of(accLo(i), accLo(i)))
		a.i(vSCVTFS.of(accHi(i), accHi(i)))
		a.i(elem("fmla", fLo(i), accLo(i), 11, uint32(i)))
		a.i(elem("fmla", fHi(i), accHi(i), 11, uint32(i)))
	}
	a.op("SUBS $1, %s", rN)
	a.op("BNE %s_block", name)
	counts[fmt.Sprintf("Q5_K %s c=%d", set, c)] = fmt.Sprintf("%d per super-block (%d activation rows)", a.mark(), c)
	// y_i = hsum_float_8(lanes) + summs_i: r_k = acc[4+k] + acc[k], then
	// (r0+r2) + (r1+r3), each in lane 0.
	for i := 0; i < c; i++ {
		a.i(vFADDS.of(8, fHi(i), fLo(i)))
		a.i(dupElem(9, 8, 2))
		a.i(vFADDS.of(10, 8, 9))
		a.i(dupElem(9, 8, 1))
		a.i(dupElem(11, 8, 3))
		a.i(vFADDS.of(9, 9, 11))
		a.i(vFADDS.of(10, 10, 9))
		a.i(dupElem(9, vSumms, uint32(i)))
		a.i(vFADDS.of(10, 10, 9))
		a.op("FMOVS F10, (%s)", rY)
		if i < c-1 {
			a.op("ADD %s, %s", rYS, rY)
		}
	}
	a.op("RET")
}

// q3k writes gemmQ3K<set>C<c>: ggml's haswell order (dotQ3_KQ8_KGo),
// on levels q3 = u-4 (int8, -4..3), u the two bits of qs (bit pair j of
// byte l for chunk j of a half) with the hmask bit (4h+j of byte l)
// inserted at bit 2, and 16 int8 scales from the 12 packed bytes
// (q3kScales, less 32). Each activation row keeps two int32x4
// accumulators a super-block: lanes 0..3 (the first 16 values of each
// 32-value chunk) and lanes 4..7 (the last 16), lane k of a 16-value half
// summing its values 4k..4k+3 times the half's scale: SDOT does so
// (Dot), or SMULL, SMULL2, ADDP and SADDLP (Asimd; a pair of products is
// at most 2·4·128). The eight lanes then go into the row's eight float32
// lanes, kept on the stack, as FMLA by element by dy·f16(x.d), and the
// epilogue adds them as hsum8.
func q3k(a *asm, set string, c int) {
	name := fmt.Sprintf("gemmQ3K%sC%d", set, c)
	dot := set == "Dot"
	a.p("")
	a.p("// func %s(w *byte, a *byte, arb int, nb int, y *float32, ys int)", name)
	a.p("TEXT ·%s(SB), NOSPLIT, $%d-48", name, 32*c)
	a.mark()
	a.op("MOVD w+0(FP), %s", rW)
	a.op("MOVD a+8(FP), R1")
	a.op("MOVD arb+16(FP), R2")
	a.op("MOVD nb+24(FP), %s", rN)
	a.op("MOVD y+32(FP), %s", rY)
	a.op("MOVD ys+40(FP), %s", rYS)
	a.op("LSL $2, %s", rYS)
	for i := 1; i < c; i++ {
		a.op("ADD R2, %s, %s", actRegs[i-1], actRegs[i])
	}
	a.i(movi0(vDy))
	// Row i's float32 lanes 0..3, 4..7 at facc(i) and facc(i)+16.
	facc := func(i int) string { return fmt.Sprintf("facc%d-%d(SP)", i, 32*(c-i)) }
	a.i(movi0(8))
	a.i(movi0(9))
	for i := 0; i < c; i++ {
		a.op("FSTPQ (F8, F9), %s", facc(i))
	}
	const (
		vFour  = v(30) // 0x04 bytes: the hmask bit's place, and the offset
		vOff32 = v(29) // 0x20 bytes
		vScRaw = v(27)
	)
	lo := func(i int) v { return v(20 + i) }
	hi := func(i int) v { return []v{14, 15, 24, 28}[i] }
	a.i(movi8(vMask, 0x03))
	a.i(movi8(vFour, 0x04))
	a.i(movi8(vOff32, 0x20))
	a.label(name + "_block")
	a.mark()
	a.op("MOVHU 108(%s), R10", rW)
	a.op("FMOVS R10, F%d", vXd)
	a.i(vFCVTLH.of(vXd, vXd))
	// The scales' low nibbles are in aux0 (R10, scales 0..3 and 8..11) and
	// aux1 (R11, 4..7 and 12..15), their top bit pairs in tmp (R12).
	a.op("MOVWU 96(%s), R10", rW)
	a.op("MOVWU 100(%s), R11", rW)
	a.op("MOVWU 104(%s), R12", rW)
	a.op("ANDW $0x0f0f0f0f, R10, R13")
	a.op("ANDW $0x03030303, R12, R14")
	a.op("ORRW R14<<4, R13, R13") // scales 0..3
	a.op("ANDW $0x0f0f0f0f, R11, R15")
	a.op("LSRW $2, R12, R14")
	a.op("ANDW $0x03030303, R14")
	a.op("ORRW R14<<4, R15, R15") // 4..7
	a.op("LSRW $4, R10, R10")
	a.op("ANDW $0x0f0f0f0f, R10")
	a.op("LSRW $4, R12, R14")
	a.op("ANDW $0x03030303, R14")
	a.op("ORRW R14<<4, R10, R10") // 8..11
	a.op("LSRW $4, R11, R11")
	a.op("ANDW $0x0f0f0f0f, R11")
	a.op("LSRW $6, R12, R14")
	a.op("ANDW $0x03030303, R14")
	a.op("ORRW R14<<4, R11, R11") // 12..15
	a.op("ORR R15<<32, R13, R13")
	a.op("ORR R11<<32, R10, R10")
	a.op("FMOVD R13, F%d", vScRaw)
	a.op("VMOV R10, V%d.D[1]", vScRaw)
	a.i(vSUBB.of(vScRaw, vScRaw, vOff32))
	// int32 scales 4k..4k+3 in V16+k.
	a.i(vSXTLB.of(16, vScRaw))
	a.i(vSXTL2B.of(17, vScRaw))
	a.i(vSXTL2H.of(19, 17))
	a.i(vSXTLH.of(18, 17))
	a.i(vSXTL2H.of(17, 16))
	a.i(vSXTLH.of(16, 16))
	scale := func(idx uint32) (v, uint32) { return v(16 + idx/4), idx % 4 }
	loadDy(a, c)
	for h := 0; h < 2; h++ {
		// qs of the half in V8, V9; hmask in V10, V11. Vector m = 2j+s
		// holds values 32j+16s..32j+16s+15 of the half: activation quants
		// 16m.., sub-block 8h+m, lanes 4s..4s+3.
		a.op("FLDPQ %d(%s), (F8, F9)", 32+32*h, rW)
		a.op("FLDPQ 0(%s), (F10, F11)", rW)
		for j := 0; j < 4; j++ {
			for s := 0; s < 2; s++ {
				m, src, hm := v(2*j+s), v(8+s), v(10+s)
				if j == 0 {
					a.i(vAND.of(m, src, vMask))
				} else {
					a.i(shiftImm("ushr", "16b", m, src, uint32(2*j)))
					if j < 3 {
						a.i(vAND.of(m, m, vMask))
					}
				}
				bit := 4*h + j
				t := v(12 + s)
				switch {
				case bit < 2:
					a.i(shiftImm("shl", "16b", t, hm, uint32(2-bit)))
				case bit > 2:
					a.i(shiftImm("ushr", "16b", t, hm, uint32(bit-2)))
				default:
					t = hm
				}
				a.i(vBIT.of(m, t, vFour))
				a.i(vSUBB.of(m, m, vFour))
			}
		}
		for i := 0; i < c; i++ {
			for m := uint32(0); m < 8; m++ {
				if m%4 == 0 {
					a.op("VLD1.P 64(%s), [V8.B16, V9.B16, V10.B16, V11.B16]", actRegs[i])
				}
				q8 := v(8 + m%4)
				r, l := scale(uint32(8*h) + m)
				acc := lo(i)
				if m%2 == 1 {
					acc = hi(i)
				}
				first := h == 0 && m < 2
				t := v(12 + m%2)
				if dot {
					a.i(movi0(t))
					a.i(vSDOT.of(t, v(m), q8))
				} else {
					t = 12
					a.i(vSMULL.of(12, v(m), q8))
					a.i(vSMULL2.of(13, v(m), q8))
					a.i(vADDPH.of(12, 12, 13))
					a.i(vSADDLPH.of(12, 12))
				}
				if first {
					a.i(elem("mul", acc, t, r, l))
				} else {
					a.i(elem("mla", acc, t, r, l))
				}
			}
			if h == 1 {
				a.op("ADD $32, %s", actRegs[i]) // past the bsums
			}
		}
	}
	a.i(elem("fmul", 12, vDy, vXd, 0)) // lane i: d = dy_i·f16(x.d)
	for i := 0; i < c; i++ {
		a.op("FLDPQ %s, (F8, F9)", facc(i))
		a.i(vSCVTFS.of(lo(i), lo(i)))
		a.i(vSCVTFS.of(hi(i), hi(i)))
		a.i(elem("fmla", 8, lo(i), 12, uint32(i)))
		a.i(elem("fmla", 9, hi(i), 12, uint32(i)))
		a.op("FSTPQ (F8, F9), %s", facc(i))
	}
	a.op("ADD $110, %s", rW)
	a.op("SUBS $1, %s", rN)
	a.op("BNE %s_block", name)
	counts[fmt.Sprintf("Q3_K %s c=%d", set, c)] = fmt.Sprintf("%d per super-block (%d activation rows)", a.mark(), c)
	hsum8Epilogue(a, c, facc)
}

// k35DeclFile writes k35_decl_arm64.go: the kernels' declarations and
// their table.
func k35DeclFile() string {
	var b strings.Builder
	b.WriteString("// Code generated by go run ./quant/_gen/arm64k; DO NOT EDIT.\n\n")
	b.WriteString("//go:build arm64 && !noasm && gc\n\npackage quant\n")
	for _, s := range sets {
		for _, typ := range []string{"Q3K", "Q5K"} {
			for c := 1; c <= maxActs; c++ {
				fmt.Fprintf(&b, "\n//go:noescape\nfunc gemm%s%sC%d(w *byte, a *byte, arb int, nb int, y *float32, ys int)\n", typ, s.suffix, c)
			}
		}
	}
	b.WriteString("\n// k35Kernels[s][t][c-1] is the kernel of set s (0 Asimd, 1 Dot) for\n")
	b.WriteString("// type t (0 Q3_K, 1 Q5_K) and c activation rows.\n")
	b.WriteString("var k35Kernels = [2][2][" + fmt.Sprint(maxActs) + "]func(w *byte, a *byte, arb int, nb int, y *float32, ys int){\n")
	for _, s := range sets {
		b.WriteString("\t{\n")
		for _, typ := range []string{"Q3K", "Q5K"} {
			b.WriteString("\t\t{")
			for c := 1; c <= maxActs; c++ {
				if c > 1 {
					b.WriteString(", ")
				}
				fmt.Fprintf(&b, "gemm%s%sC%d", typ, s.suffix, c)
			}
			b.WriteString("},\n")
		}
		b.WriteString("\t},\n")
	}
	b.WriteString("}\n")
	return b.String()
}
