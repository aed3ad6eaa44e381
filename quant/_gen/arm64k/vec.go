package main

import "fmt"

// q8kFile writes quantizeQ8_KNEON, quantizeQ8_K (ggml's
// quantize_row_q8_K_ref) byte for byte. Per block a first pass finds the
// largest and the smallest value (FMAX/FMIN, which propagate NaNs, from
// 0); the block is left to Go, by returning, when either is NaN, when they
// tie in magnitude (all zero, or the largest magnitude taken with both
// signs, where the first occurrence decides), or when -127/max is zero or
// infinite. Otherwise the value of largest magnitude has a known sign, and
// a second pass computes q = FCVTNS(iscale*x) (round to nearest, ties to
// even, as nearestInt; |iscale*x| <= 127 here) narrowed with saturation
// (the min(127, q) of Go), and the bsums as int16 sums of the quants.
func q8kFile() string {
	a := &asm{}
	header(a)
	a.p("")
	a.p("// func quantizeQ8_KNEON(x *float32, dst *byte, nb int) int")
	a.p("TEXT ·quantizeQ8_KNEON(SB), NOSPLIT, $0-32")
	a.op("MOVD x+0(FP), R0")
	a.op("MOVD dst+8(FP), R1")
	a.op("MOVD nb+16(FP), R2")
	a.op("MOVD $0, R3")
	a.op("MOVW $0x7f800000, R10")
	a.op("FMOVS R10, F29") // +Inf
	a.op("MOVW $0xc2fe0000, R10")
	a.op("FMOVS R10, F28") // -127
	a.op("FMOVS $1.0, F27")
	a.label("q8k_block")
	a.mark()
	a.op("MOVD R0, R4")
	for r := v(4); r < 12; r++ {
		a.i(movi0(r))
	}
	for k := 0; k < 16; k++ {
		a.op("VLD1.P 64(R4), [V0.B16, V1.B16, V2.B16, V3.B16]")
		for j := v(0); j < 4; j++ {
			a.i(vFMAXS.of(4+j, 4+j, j))
		}
		for j := v(0); j < 4; j++ {
			a.i(vFMINS.of(8+j, 8+j, j))
		}
	}
	a.i(vFMAXS.of(4, 4, 5))
	a.i(vFMAXS.of(6, 6, 7))
	a.i(vFMAXS.of(4, 4, 6))
	a.i(across(vFMAXVS, "s", 4, 4))
	a.i(vFMINS.of(8, 8, 9))
	a.i(vFMINS.of(10, 10, 11))
	a.i(vFMINS.of(8, 8, 10))
	a.i(across(vFMINVS, "s", 8, 8))
	a.op("FNEGS F8, F9")
	a.op("FCMPS F4, F4")
	a.op("BVS q8k_done") // NaN
	a.op("FCMPS F8, F8")
	a.op("BVS q8k_done")
	a.op("FCMPS F9, F4")
	a.op("BEQ q8k_done")           // a tie in magnitude, or all zero
	a.op("FCSELS GT, F4, F8, F10") // the value of largest magnitude
	a.op("FDIVS F10, F28, F11")    // iscale = -127/mx
	a.op("FABSS F11, F12")
	a.op("FCMPS F29, F12")
	a.op("BEQ q8k_done")
	a.op("FCMPS $(0.0), F12")
	a.op("BEQ q8k_done")
	a.op("FDIVS F11, F27, F26") // d = 1/iscale
	a.i(dupElem(30, 11, 0))
	a.op("MOVD R0, R4")
	a.op("ADD $4, R1, R5")
	for k := 0; k < 16; k++ {
		a.op("VLD1.P 64(R4), [V0.B16, V1.B16, V2.B16, V3.B16]")
		for j := v(0); j < 4; j++ {
			a.i(vFMULS.of(j, j, 30))
		}
		for j := v(0); j < 4; j++ {
			a.i(vFCVTNSS.of(j, j))
		}
		a.i(vSQXTNS.of(4, 0))
		a.i(vSQXTN2S.of(4, 1))
		a.i(vSQXTNS.of(5, 2))
		a.i(vSQXTN2S.of(5, 3))
		a.i(vSQXTNH.of(6, 4))
		a.i(vSQXTN2H.of(6, 5))
		a.op("VST1.P [V6.B16], 16(R5)")
		a.i(vADDH.of(v(12+k%2), 4, 5))
		if k%2 == 1 {
			a.i(vADDPH.of(v(16+k/2), 12, 13))
		}
	}
	for j := v(0); j < 4; j++ {
		a.i(vADDPH.of(16+j, 16+2*j, 17+2*j))
	}
	a.i(vADDPH.of(16, 16, 17))
	a.i(vADDPH.of(17, 18, 19))
	a.op("VST1 [V16.B16, V17.B16], (R5)")
	a.op("FMOVS F26, (R1)")
	a.op("ADD $292, R1")
	a.op("ADD $1024, R0")
	a.op("ADD $1, R3")
	a.op("CMP R2, R3")
	a.op("BLT q8k_block")
	counts["Q8_K quantize"] = fmt.Sprintf("%d per 256 values", a.mark())
	a.label("q8k_done")
	a.op("MOVD R3, ret+24(FP)")
	a.op("RET")
	return a.b.String()
}

// f16vecFile writes the F16, BF16 and F32 dot products and the F16
// attention helpers. The F16 and BF16 dots widen to float32, multiply
// (exact: products of two halves, or of two bfloat16s, fit in float32
// unless they overflow or underflow, as in the Go twin) and add the
// products in float64 over eight fixed lanes, summed in a fixed tree: one
// result for given inputs, whatever their alignment. The F32 dot keeps
// sixteen float32 lanes by FMLA, also summed in a fixed tree. MadF16's
// step is one FMLA (fused, as fma32) and an FCVTN to half (nearest, ties
// to even) and back.
func f16vecFile() string {
	a := &asm{}
	header(a)
	for _, bf := range []bool{false, true} {
		name := "dotF16NEON"
		if bf {
			name = "dotBF16NEON"
		}
		a.p("")
		a.p("// func %s(w *byte, x *float32, n int) float64", name)
		a.p("TEXT ·%s(SB), NOSPLIT, $0-32", name)
		a.op("MOVD w+0(FP), R0")
		a.op("MOVD x+8(FP), R1")
		a.op("MOVD n+16(FP), R2")
		for r := v(16); r < 24; r++ {
			a.i(movi0(r))
		}
		a.i(movi0(31))
		a.label(name + "_loop")
		a.mark()
		a.op("VLD1.P 32(R0), [V0.B16, V1.B16]")
		a.op("VLD1.P 64(R1), [V4.B16, V5.B16, V6.B16, V7.B16]")
		if bf {
			a.i(vZIP1H.of(2, 31, 0))
			a.i(vZIP2H.of(3, 31, 0))
			a.i(vZIP1H.of(8, 31, 1))
			a.i(vZIP2H.of(9, 31, 1))
		} else {
			a.i(vFCVTLH.of(2, 0))
			a.i(vFCVTL2H.of(3, 0))
			a.i(vFCVTLH.of(8, 1))
			a.i(vFCVTL2H.of(9, 1))
		}
		a.i(vFMULS.of(2, 2, 4))
		a.i(vFMULS.of(3, 3, 5))
		a.i(vFMULS.of(8, 8, 6))
		a.i(vFMULS.of(9, 9, 7))
		wide := []v{10, 11, 12, 13, 14, 15, 0, 1}
		for k, src := range []v{2, 3, 8, 9} {
			a.i(vFCVTLS.of(wide[2*k], src))
			a.i(vFCVTL2S.of(wide[2*k+1], src))
		}
		for k, w := range wide {
			a.i(vFADDD.of(v(16+k), v(16+k), w))
		}
		a.op("SUBS $16, R2")
		a.op("BNE %s_loop", name)
		counts[name] = fmt.Sprintf("%d per 16 values", a.mark())
		for k := v(0); k < 4; k++ {
			a.i(vFADDD.of(16+2*k, 16+2*k, 17+2*k))
		}
		a.i(vFADDD.of(16, 16, 18))
		a.i(vFADDD.of(20, 20, 22))
		a.i(vFADDD.of(16, 16, 20))
		a.i(across(vFADDPS2D, "d", 16, 16))
		a.op("FMOVD F16, ret+24(FP)")
		a.op("RET")
	}

	a.p("")
	a.p("// func dotF32NEON(a, b *float32, n int) float32")
	a.p("TEXT ·dotF32NEON(SB), NOSPLIT, $0-28")
	a.op("MOVD a+0(FP), R0")
	a.op("MOVD b+8(FP), R1")
	a.op("MOVD n+16(FP), R2")
	for r := v(16); r < 20; r++ {
		a.i(movi0(r))
	}
	a.label("dotF32NEON_loop")
	a.mark()
	a.op("VLD1.P 64(R0), [V0.B16, V1.B16, V2.B16, V3.B16]")
	a.op("VLD1.P 64(R1), [V4.B16, V5.B16, V6.B16, V7.B16]")
	for k := v(0); k < 4; k++ {
		a.i(vFMLAS.of(16+k, k, 4+k))
	}
	a.op("SUBS $16, R2")
	a.op("BNE dotF32NEON_loop")
	counts["dotF32NEON"] = fmt.Sprintf("%d per 16 values", a.mark())
	a.i(vFADDS.of(16, 16, 17))
	a.i(vFADDS.of(18, 18, 19))
	a.i(vFADDS.of(16, 16, 18))
	a.i(vFADDPS.of(16, 16, 16))
	a.i(vFADDPS.of(16, 16, 16))
	a.op("FMOVS F16, ret+24(FP)")
	a.op("RET")

	a.p("")
	a.p("// func madF16NEON(acc *float32, v *uint16, n int, s float32)")
	a.p("TEXT ·madF16NEON(SB), NOSPLIT, $0-28")
	a.op("MOVD acc+0(FP), R0")
	a.op("MOVD v+8(FP), R1")
	a.op("MOVD n+16(FP), R2")
	a.op("FMOVS s+24(FP), F31")
	a.label("madF16NEON_loop")
	a.mark()
	a.op("VLD1.P 16(R1), [V0.B16]")
	a.op("VLD1 (R0), [V2.B16, V3.B16]")
	a.i(vFCVTLH.of(4, 0))
	a.i(vFCVTL2H.of(5, 0))
	a.i(elem("fmla", 2, 4, 31, 0))
	a.i(elem("fmla", 3, 5, 31, 0))
	roundHalf(a)
	a.op("VST1.P [V2.B16, V3.B16], 32(R0)")
	a.op("SUBS $8, R2")
	a.op("BNE madF16NEON_loop")
	counts["madF16NEON"] = fmt.Sprintf("%d per 8 values", a.mark())
	a.op("RET")

	a.p("")
	a.p("// func scaleF16NEON(acc *float32, n int, s float32)")
	a.p("TEXT ·scaleF16NEON(SB), NOSPLIT, $0-20")
	a.op("MOVD acc+0(FP), R0")
	a.op("MOVD n+8(FP), R2")
	a.op("FMOVS s+16(FP), F31")
	a.label("scaleF16NEON_loop")
	a.mark()
	a.op("VLD1 (R0), [V2.B16, V3.B16]")
	a.i(elem("fmul", 2, 2, 31, 0))
	a.i(elem("fmul", 3, 3, 31, 0))
	roundHalf(a)
	a.op("VST1.P [V2.B16, V3.B16], 32(R0)")
	a.op("SUBS $8, R2")
	a.op("BNE scaleF16NEON_loop")
	counts["scaleF16NEON"] = fmt.Sprintf("%d per 8 values", a.mark())
	a.op("RET")

	a.p("")
	a.p("// func toF16NEON(dst *uint16, src *float32, n int)")
	a.p("TEXT ·toF16NEON(SB), NOSPLIT, $0-24")
	a.op("MOVD dst+0(FP), R0")
	a.op("MOVD src+8(FP), R1")
	a.op("MOVD n+16(FP), R2")
	a.label("toF16NEON_loop")
	a.mark()
	a.op("VLD1.P 32(R1), [V0.B16, V1.B16]")
	a.i(vFCVTNH.of(2, 0))
	a.i(vFCVTN2H.of(2, 1))
	a.op("VST1.P [V2.B16], 16(R0)")
	a.op("SUBS $8, R2")
	a.op("BNE toF16NEON_loop")
	counts["toF16NEON"] = fmt.Sprintf("%d per 8 values", a.mark())
	a.op("RET")
	scores(a)
	mads(a)
	return a.b.String()
}

// scores writes scoresF16NEON: ScoresF16 for head sizes that are a
// multiple of 32, in scoreF16Go's order (ggml's AVX2 one): value 8j+l of
// each 32 goes by FMLA to lane l of accumulator j (two NEON registers of
// four lanes each), then accumulators 0+2 and 1+3, then the two, then
// lanes l and l+4, then pairs, then the pair sums. With no tail the
// float64 sum of scoreF16Go is that float32 exactly.
func scores(a *asm) {
	a.p("")
	a.p("// func scoresF16NEON(out *float32, ldo int, q *float32, nq int, k *uint16, stride, count, hd int)")
	a.p("TEXT ·scoresF16NEON(SB), NOSPLIT, $0-64")
	a.op("MOVD out+0(FP), R0")
	a.op("MOVD ldo+8(FP), R1")
	a.op("MOVD q+16(FP), R2")
	a.op("MOVD nq+24(FP), R3")
	a.op("MOVD k+32(FP), R4")
	a.op("MOVD stride+40(FP), R5")
	a.op("MOVD count+48(FP), R6")
	a.op("MOVD hd+56(FP), R7")
	a.label("scores_row")
	a.op("MOVD R2, R10")
	a.op("MOVD R0, R11")
	a.op("MOVD R3, R12")
	a.label("scores_query")
	a.op("MOVD R4, R13")
	a.op("MOVD R7, R15")
	for r := v(16); r < 24; r++ {
		a.i(movi0(r))
	}
	a.label("scores_chunk")
	a.mark()
	a.op("VLD1.P 64(R13), [V0.B16, V1.B16, V2.B16, V3.B16]")
	a.op("VLD1.P 64(R10), [V4.B16, V5.B16, V6.B16, V7.B16]")
	a.op("VLD1.P 64(R10), [V24.B16, V25.B16, V26.B16, V27.B16]")
	for j := v(0); j < 4; j++ {
		a.i(vFCVTLH.of(8+2*j, j))
		a.i(vFCVTL2H.of(9+2*j, j))
	}
	qs := []v{4, 5, 6, 7, 24, 25, 26, 27}
	for k := v(0); k < 8; k++ {
		a.i(vFMLAS.of(16+k, 8+k, qs[k]))
	}
	a.op("SUBS $32, R15")
	a.op("BNE scores_chunk")
	counts["scoresF16NEON"] = fmt.Sprintf("%d per 32 values", a.mark())
	a.i(vFADDS.of(16, 16, 20)) // acc0 += acc2
	a.i(vFADDS.of(17, 17, 21))
	a.i(vFADDS.of(18, 18, 22)) // acc1 += acc3
	a.i(vFADDS.of(19, 19, 23))
	a.i(vFADDS.of(16, 16, 18)) // acc0 += acc1
	a.i(vFADDS.of(17, 17, 19))
	a.i(vFADDS.of(16, 16, 17)) // t[l] = acc0[l] + acc0[l+4]
	a.i(vFADDPS.of(16, 16, 16))
	a.i(vFADDPS.of(16, 16, 16))
	a.op("FMOVS F16, (R11)")
	a.op("ADD R1, R11")
	a.op("SUBS $1, R12")
	a.op("BNE scores_query")
	a.op("ADD $4, R0")
	a.op("ADD R5, R4")
	a.op("SUBS $1, R6")
	a.op("BNE scores_row")
	a.op("RET")
}

// mads writes madsF16NEON: MadsF16 with each chunk of 32 (then 8)
// accumulators held in registers over all the rows, each step MadF16's
// (FMLA, then to half and back).
func mads(a *asm) {
	a.p("")
	a.p("// func madsF16NEON(acc *float32, v *uint16, stride int, w *float32, count, n int)")
	a.p("TEXT ·madsF16NEON(SB), NOSPLIT, $0-48")
	a.op("MOVD acc+0(FP), R0")
	a.op("MOVD v+8(FP), R1")
	a.op("MOVD stride+16(FP), R2")
	a.op("MOVD w+24(FP), R3")
	a.op("MOVD count+32(FP), R4")
	a.op("MOVD n+40(FP), R5")
	for _, width := range []int{32, 8} {
		regs := v(width / 4)
		loop := fmt.Sprintf("mads%d", width)
		a.label(loop)
		a.op("CMP $%d, R5", width)
		if width == 32 {
			a.op("BLT mads8")
		} else {
			a.op("BLT mads_done")
		}
		if width == 32 {
			a.op("VLD1 (R0), [V16.B16, V17.B16, V18.B16, V19.B16]")
			a.op("ADD $64, R0, R13")
			a.op("VLD1 (R13), [V20.B16, V21.B16, V22.B16, V23.B16]")
			a.op("MOVD R1, R10")
		} else {
			a.op("VLD1 (R0), [V16.B16, V17.B16]")
			a.op("MOVD R1, R10")
		}
		a.op("MOVD R3, R11")
		a.op("MOVD R4, R12")
		a.label(loop + "_row")
		a.mark()
		if width == 32 {
			a.op("VLD1 (R10), [V0.B16, V1.B16, V2.B16, V3.B16]")
		} else {
			a.op("VLD1 (R10), [V0.B16]")
		}
		a.op("ADD R2, R10")
		a.op("VLD1.P 4(R11), V31.S[0]")
		for k := v(0); k < regs/2; k++ {
			a.i(vFCVTLH.of(4+2*k, k))
			a.i(vFCVTL2H.of(5+2*k, k))
		}
		for k := v(0); k < regs; k++ {
			a.i(elem("fmla", 16+k, 4+k, 31, 0))
		}
		for k := v(0); k < regs/2; k++ {
			a.i(vFCVTNH.of(24+k, 16+2*k))
			a.i(vFCVTN2H.of(24+k, 17+2*k))
		}
		for k := v(0); k < regs/2; k++ {
			a.i(vFCVTLH.of(16+2*k, 24+k))
			a.i(vFCVTL2H.of(17+2*k, 24+k))
		}
		a.op("SUBS $1, R12")
		a.op("BNE %s_row", loop)
		counts["madsF16NEON/"+fmt.Sprint(width)] = fmt.Sprintf("%d per row of %d values", a.mark(), width)
		if width == 32 {
			a.op("VST1.P [V16.B16, V17.B16, V18.B16, V19.B16], 64(R0)")
			a.op("VST1.P [V20.B16, V21.B16, V22.B16, V23.B16], 64(R0)")
		} else {
			a.op("VST1.P [V16.B16, V17.B16], 32(R0)")
		}
		a.op("ADD $%d, R1", 2*width)
		a.op("SUB $%d, R5", width)
		a.op("B %s", loop)
	}
	a.label("mads_done")
	a.op("RET")
}

// roundHalf rounds the eight floats of V2, V3 to half precision and back.
func roundHalf(a *asm) {
	a.i(vFCVTNH.of(6, 2))
	a.i(vFCVTN2H.of(6, 3))
	a.i(vFCVTLH.of(2, 6))
	a.i(vFCVTL2H.of(3, 6))
}

// siluFile writes siluMulNEON: silu.go's siluMulGo and expAVX2 (ggml's
// AVX2 ggml_v_silu), four values at a time, with each Go operation as one
// vector instruction (fma32 as FMLA or FMLS, fused like VFMADD and
// VFNMADD), so the bits are the Go twin's. Both of the exponential's forms
// are computed for every lane and selected with BIT, where the AVX2 kernel
// branches: a lane's value is the same either way. The constants come from
// Go (siluConsts) in the order shift, log2(e), ln2 high, ln2 low, p0..p4,
// 1, 126, 192, the bits 0x82000000 and 0x7f000000, and two zeros.
func siluFile() string {
	a := &asm{}
	header(a)
	a.p("")
	a.p("// func siluMulNEON(h, u *float32, n int, c *[siluConstCount]float32)")
	a.p("TEXT ·siluMulNEON(SB), NOSPLIT, $0-32")
	a.op("MOVD h+0(FP), R0")
	a.op("MOVD u+8(FP), R1")
	a.op("MOVD n+16(FP), R2")
	a.op("MOVD c+24(FP), R3")
	a.op("VLD1 (R3), [V0.B16, V1.B16, V2.B16, V3.B16]")
	for k := v(0); k < 16; k++ {
		a.i(dupElem(16+k, k/4, uint32(k%4)))
	}
	const (
		shift, log2e, ln2hi, ln2lo, p0 = 16, 17, 18, 19, 20
		p1, p2, p3, p4                 = 21, 22, 23, 24
		one, c126, c192, gBits, s1Bits = 25, 26, 27, 28, 29
		zero                           = 30
	)
	a.label("silu_loop")
	a.mark()
	a.op("VLD1 (R0), [V0.B16]")
	a.op("VLD1.P 16(R1), [V1.B16]")
	a.i(vFSUBS.of(2, zero, 0))           // x = 0 - g
	a.i(vORR.of(3, shift, shift))        //
	a.i(vFMLAS.of(3, 2, log2e))          // z = fma(x, log2e, shift)
	a.i(vFSUBS.of(4, 3, shift))          // n = z - shift
	a.i(vFMLSS.of(2, 4, ln2hi))          // b = x - n*ln2hi, fused
	a.i(vFMLSS.of(2, 4, ln2lo))          // b = b - n*ln2lo, fused
	a.i(shiftImm("shl", "4s", 5, 3, 23)) // e = bits(z) << 23
	a.i(vADDS.of(6, 5, one))             // k = e + bits(1)
	a.i(vFACGTS.of(7, 4, c126))          // c = |n| > 126
	a.i(vFMULS.of(8, 2, 2))              // u = b*b
	a.i(vORR.of(9, p1, p1))              //
	a.i(vFMLAS.of(9, p0, 2))             // t1 = fma(p0, b, p1)
	a.i(vORR.of(10, p3, p3))             //
	a.i(vFMLAS.of(10, p2, 2))            // t2 = fma(p2, b, p3)
	a.i(vFMLAS.of(10, 9, 8))             // t2 = fma(t1, u, t2)
	a.i(vFMULS.of(11, p4, 2))            // p4*b
	a.i(vFMLAS.of(11, 10, 8))            // j = fma(t2, u, p4*b)
	a.i(vORR.of(12, 6, 6))               //
	a.i(vFMLAS.of(12, 11, 6))            // e^x = fma(j, k, k)
	a.i(vFCMGES.of(13, zero, 4))         // n <= 0
	a.i(vAND.of(13, 13, gBits))          // g = 0x82000000 there
	a.i(vADDS.of(14, 13, s1Bits))        // s1 = g + 0x7f000000
	a.i(vSUBS.of(15, 5, 13))             // s2 = e - g
	a.i(vORR.of(9, 15, 15))              //
	a.i(vFMLAS.of(9, 15, 11))            // fma(s2, j, s2)
	a.i(vFMULS.of(9, 9, 14))             // · s1
	a.i(vBIT.of(12, 9, 7))               // where |n| > 126
	a.i(vFMULS.of(10, 14, 14))           // s1·s1
	a.i(vFACGTS.of(13, 4, c192))         // |n| > 192
	a.i(vBIT.of(12, 10, 13))             // there
	a.i(vFADDS.of(12, one, 12))          // d = 1 + e^x
	a.i(vFDIVS.of(0, 0, 12))             // g / d
	a.i(vFMULS.of(0, 0, 1))              // · u
	a.op("VST1.P [V0.B16], 16(R0)")
	a.op("SUBS $4, R2")
	a.op("BNE silu_loop")
	counts["siluMulNEON"] = fmt.Sprintf("%d per 4 values", a.mark())
	a.op("RET")
	return a.b.String()
}
