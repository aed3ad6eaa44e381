package main

import "fmt"

// decKernel writes gemm<typ>Dec, the kernel for one activation row (decode)
// and whole tiles of 16 weight rows, over ng groups of four blocks. It needs
// AVX-512 VBMI besides the gemm kernels' features.
//
// The tile is read four rows at a time (four sequential streams, which the
// hardware prefetchers follow, where sixteen interleaved rows defeat them),
// in the rows' natural layout. Per group of four blocks, each row's blocks
// are taken apart with one VPERMT2B (Q4_0) or two (Q8_0) into registers
// whose 128-bit lane k holds block k's first or second 16 values, so that
// two VPDPBUSD against the activations laid out the same way leave in lane k
// four int32 partial sums of block k. A reduction over the four rows (Q4_0:
// VPACKSSDW and VPMADDWD by ones, exact since the partial sums fit int16;
// Q8_0: unpacks, shuffles and adds) leaves lane k = the four rows' Σ u·a of
// block k; the correction is added and the sums converted to float32, the
// scales dw*da computed alongside (one gather of the four rows' four
// scales), and both stored to the scratch. A second pass reads the scratch
// of the four row quads back per group, transposes the 128-bit lanes so that
// each block's 16 rows share a register and does the block's FMA, in block
// order: every output sees gemm.go's operations in gemm.go's order.
//
// Arguments: w row 0 of the tile at the first group, ng groups, a the
// activation blocks (32 bytes each, contiguous), side their (da, corr)
// pairs, y the 16 accumulators (read at the start, written at the end), rb
// the row stride. The scratch is the kernel's frame.
func decKernel(p func(string, ...any), typ string) {
	name := fmt.Sprintf("gemm%sDec", typ)
	q4 := typ == "Q4_0"
	blockBytes, groupBytes := 34, 136
	if q4 {
		blockBytes, groupBytes = 18, 72
	}
	// Permutation tables: output byte 16k+i takes group byte pos(k, i); a
	// byte of the first table is at pos-base1, of the second at pos-base2
	// (with bit 6 set).
	perm := func(tab string, base1, base2 int, pos func(k, i int) int) {
		var idx [64]int
		for k := 0; k < 4; k++ {
			for i := 0; i < 16; i++ {
				x := pos(k, i)
				switch {
				case x >= base1 && x < base1+64:
					idx[16*k+i] = x - base1
				case x >= base2 && x < base2+64:
					idx[16*k+i] = x - base2 | 64
				default:
					panic(fmt.Sprintf("%s: byte %d of block %d out of both tables", tab, i, k))
				}
			}
		}
		bytes(p, tab, idx[:])
	}
	p("")
	if q4 {
		// Nibble bytes of block k: group bytes 18k+2 .. 18k+17; tables at
		// 0 and 8 (the group's 72 bytes).
		perm("decPermQ4_0", 0, 8, func(k, i int) int { return 18*k + 2 + i })
	} else {
		// First halves: 34k+2+i from tables at 0 and 64; second halves:
		// 34k+18+i from tables at 8 and 72 (the group's 136 bytes).
		perm("decPermQ8_0a", 0, 64, func(k, i int) int { return 34*k + 2 + i })
		perm("decPermQ8_0b", 8, 72, func(k, i int) int { return 34*k + 18 + i })
	}
	// Gather offsets: lane 4k+r reads row r's block k, at r*rb + k*blockBytes.
	var offs [16]int
	for l := range offs {
		offs[l] = l / 4 * blockBytes
	}
	dwords(p, "decOff"+typ, offs[:])
	p("")
	p("// func %s(w *byte, ng int, a *byte, side *uint32, y *float32, rb int)", name)
	p("//")
	p("// The frame is the scratch: 512 bytes a group, ng <= %d.", decGroups)
	p("TEXT ·%s(SB), 0, $%d-48", name, 512*decGroups)
	p("\tMOVQ rb+40(FP), BX")
	p("\tLEAQ (BX)(BX*2), R12")
	p("\tLEAQ (BX)(BX*4), AX")
	p("\tLEAQ (R12)(BX*4), DX")
	p("\tVPBROADCASTD BX, Z8")
	p("\tVPMULLD decRowOfLane<>(SB), Z8, Z8")
	p("\tVPADDD decOff%s<>(SB), Z8, Z8", typ)
	p("\tMOVL $0xffff, CX")
	p("\tKMOVW CX, K1")
	if q4 {
		p("\tMOVL $0x0f0f0f0f, CX")
		p("\tVPBROADCASTD CX, Z10")
		p("\tMOVL $0x00010001, CX")
		p("\tVPBROADCASTD CX, Z11")
		p("\tVMOVDQU64 decPermQ4_0<>(SB), Z31")
	} else {
		p("\tMOVL $0x80808080, CX")
		p("\tVPBROADCASTD CX, Z10")
		p("\tVMOVDQU64 decPermQ8_0a<>(SB), Z30")
		p("\tVMOVDQU64 decPermQ8_0b<>(SB), Z31")
	}
	p("\tVMOVDQU64 decSideDa<>(SB), Z29")
	p("\tVMOVDQU64 decSideCorr<>(SB), Z28")
	p("\tMOVQ w+0(FP), SI")
	p("\tLEAQ 0(SP), R11")
	p("\tMOVQ $4, R14")
	p("")
	p("quad_%s:", name)
	p("\tMOVQ ng+8(FP), CX")
	p("\tMOVQ a+16(FP), R8")
	p("\tMOVQ side+24(FP), R9")
	p("\tMOVQ SI, R13")
	p("\tMOVQ R11, R10")
	p("")
	p("group_%s:", name)
	rows := []string{"(R13)", "(R13)(BX*1)", "(R13)(BX*2)", "(R13)(R12*1)"}
	at := func(off, r int) string { return fmt.Sprintf("%d%s", off, rows[r]) }
	// Prefetch the next quad's rows at this group (what is read next, a
	// quad later): the first and last byte of each row's group and every
	// line between.
	next := []string{"(R13)(BX*4)", "(R13)(AX*1)", "(R13)(R12*2)", "(R13)(DX*1)"}
	for r := 0; r < 4; r++ {
		for off := 0; off < groupBytes; off += 64 {
			p("\t%s %d%s", decPrefetch, off, next[r])
		}
		p("\t%s %d%s", decPrefetch, groupBytes-1, next[r])
	}
	// Activations: lane k of Z26 (Z27) is block k's values 0-15 (16-31);
	// Z24 (Z25) holds da (corr) of block k in lanes 4k..4k+3.
	p("\tVMOVDQU64 (R8), Z24")
	p("\tVMOVDQU64 64(R8), Z25")
	p("\tVSHUFI32X4 $0x88, Z25, Z24, Z26")
	p("\tVSHUFI32X4 $0xdd, Z25, Z24, Z27")
	p("\tVMOVDQU32 (R9), Y23")
	p("\tVPERMD Z23, Z29, Z24")
	p("\tVPERMD Z23, Z28, Z25")
	p("\tKMOVW K1, K2")
	p("\tVPGATHERDD (R13)(Z8*1), K2, Z9")
	for r := 0; r < 4; r++ {
		lo, hi, s := fmt.Sprintf("Z%d", 12+2*r), fmt.Sprintf("Z%d", 13+2*r), fmt.Sprintf("Z%d", r)
		if q4 {
			p("\tVMOVDQU64 %s, %s", at(0, r), lo)
			p("\tVPERMT2B %s, Z31, %s", at(8, r), lo)
			p("\tVPSRLW $4, %s, %s", lo, hi)
			p("\tVPANDD Z10, %s, %s", lo, lo)
			p("\tVPANDD Z10, %s, %s", hi, hi)
		} else {
			p("\tVMOVDQU64 %s, %s", at(0, r), lo)
			p("\tVMOVDQU64 %s, %s", at(8, r), hi)
			p("\tVPERMT2B %s, Z30, %s", at(64, r), lo)
			p("\tVPERMT2B %s, Z31, %s", at(72, r), hi)
			p("\tVPXORD Z10, %s, %s", lo, lo)
			p("\tVPXORD Z10, %s, %s", hi, hi)
		}
		p("\tVPXORD %s, %s, %s", s, s, s)
		p("\tVPDPBUSD Z26, %s, %s", lo, s)
		p("\tVPDPBUSD Z27, %s, %s", hi, s)
	}
	// Reduce: lane k of Z0 = the four rows' sums of block k.
	if q4 {
		p("\tVPACKSSDW Z1, Z0, Z0")
		p("\tVPACKSSDW Z3, Z2, Z2")
		p("\tVPMADDWD Z11, Z0, Z0")
		p("\tVPMADDWD Z11, Z2, Z2")
		p("\tVPACKSSDW Z2, Z0, Z0")
		p("\tVPMADDWD Z11, Z0, Z0")
	} else {
		p("\tVPUNPCKLQDQ Z1, Z0, Z4")
		p("\tVPUNPCKHQDQ Z1, Z0, Z5")
		p("\tVPUNPCKLQDQ Z3, Z2, Z6")
		p("\tVPUNPCKHQDQ Z3, Z2, Z7")
		p("\tVPADDD Z5, Z4, Z4")
		p("\tVPADDD Z7, Z6, Z6")
		p("\tVSHUFPS $0x88, Z6, Z4, Z0")
		p("\tVSHUFPS $0xdd, Z6, Z4, Z1")
		p("\tVPADDD Z1, Z0, Z0")
	}
	p("\tVPADDD Z25, Z0, Z0")
	p("\tVCVTDQ2PS Z0, Z0")
	p("\tVPMOVDW Z9, Y9")
	p("\tVCVTPH2PS Y9, Z9")
	p("\tVMULPS Z24, Z9, Z9")
	p("\tVMOVUPS Z0, (R10)")
	p("\tVMOVUPS Z9, 64(R10)")
	p("\tADDQ $%d, R13", groupBytes)
	p("\tADDQ $128, R8")
	p("\tADDQ $32, R9")
	p("\tADDQ $512, R10")
	p("\tDECQ CX")
	p("\tJNZ group_%s", name)
	p("")
	p("\tLEAQ (SI)(BX*4), SI")
	p("\tADDQ $128, R11")
	p("\tDECQ R14")
	p("\tJNZ quad_%s", name)
	p("")
	// Second pass: per group, Z0+k = block k's sums of rows 0..15, Z4+k
	// its scales; FMAs in block order.
	p("\tMOVQ y+32(FP), DI")
	p("\tVMOVUPS (DI), Z16")
	p("\tMOVQ ng+8(FP), CX")
	p("\tLEAQ 0(SP), R10")
	p("")
	p("fma_%s:", name)
	for h, base := range []int{0, 4} {
		r := func(q int) string { return fmt.Sprintf("%d(R10)", 128*q+64*h) }
		t := func(i int) string { return fmt.Sprintf("Z%d", 20+4*h+i) }
		o := func(i int) string { return fmt.Sprintf("Z%d", base+i) }
		p("\tVMOVUPS %s, %s", r(0), t(0))
		p("\tVMOVUPS %s, %s", r(2), t(2))
		p("\tVSHUFI32X4 $0xee, %s, %s, %s", r(1), t(0), t(1))
		p("\tVSHUFI32X4 $0x44, %s, %s, %s", r(1), t(0), t(0))
		p("\tVSHUFI32X4 $0xee, %s, %s, %s", r(3), t(2), t(3))
		p("\tVSHUFI32X4 $0x44, %s, %s, %s", r(3), t(2), t(2))
		p("\tVSHUFI32X4 $0x88, %s, %s, %s", t(2), t(0), o(0))
		p("\tVSHUFI32X4 $0xdd, %s, %s, %s", t(2), t(0), o(1))
		p("\tVSHUFI32X4 $0x88, %s, %s, %s", t(3), t(1), o(2))
		p("\tVSHUFI32X4 $0xdd, %s, %s, %s", t(3), t(1), o(3))
	}
	for k := 0; k < 4; k++ {
		p("\tVFMADD231PS Z%d, Z%d, Z16", 4+k, k)
	}
	p("\tADDQ $512, R10")
	p("\tDECQ CX")
	p("\tJNZ fma_%s", name)
	p("")
	p("\tVMOVUPS Z16, (DI)")
	p("\tVZEROUPPER")
	p("\tRET")
}

// decTables writes the tables the decode kernels share.
func decTables(p func(string, ...any)) {
	var row, da, corr [16]int
	for l := range row {
		row[l] = l % 4
		da[l] = 2 * (l / 4)
		corr[l] = 2*(l/4) + 1
	}
	p("")
	p("// decRowOfLane: lane 4k+r of the decode kernels' gathers reads row r.")
	dwords(p, "decRowOfLane", row[:])
	p("// decSideDa, decSideCorr pick block k's da and corr from its side")
	p("// entries into lanes 4k..4k+3.")
	dwords(p, "decSideDa", da[:])
	dwords(p, "decSideCorr", corr[:])
}

func bytes(p func(string, ...any), tab string, v []int) {
	for q := 0; q < len(v); q += 8 {
		var x uint64
		for i := 7; i >= 0; i-- {
			x = x<<8 | uint64(v[q+i])
		}
		p("DATA %s<>+%d(SB)/8, $0x%016x", tab, q, x)
	}
	p("GLOBL %s<>(SB), RODATA|NOPTR, $%d", tab, len(v))
}

func dwords(p func(string, ...any), tab string, v []int) {
	for q := 0; q < len(v); q += 2 {
		p("DATA %s<>+%d(SB)/8, $0x%08x%08x", tab, 4*q, v[q+1], v[q])
	}
	p("GLOBL %s<>(SB), RODATA|NOPTR, $%d", tab, 4*len(v))
}

// decGroups is the most groups one call of a decode kernel takes (its frame
// holds their scratch); decGroups in gemm_amd64.go must match.
const decGroups = 32

// decPrefetch is the decode kernels' prefetch instruction. PREFETCHT1
// (into L2) rather than T0: on Zen 4, a 128256x2048 sweep from DRAM on one
// thread read Q4_0 at 15.7 GB/s with T1, 13.5 with T2, 8.9 with T0 and 7.9
// with NTA (Q8_0: 21.8, 20.0, 11.3, 10.9); T0 ties up the few L1 miss
// buffers.
const decPrefetch = "PREFETCHT1"
