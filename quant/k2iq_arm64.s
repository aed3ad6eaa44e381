//go:build arm64 && !noasm && gc

#include "textflag.h"

// Dot products of Q2_K and IQ4_XS weights with Q8_K activations on
// Advanced SIMD: the SDOT ones (FEAT_DotProd) and the ASIMD ones, on
// widening multiplies, for every ARMv8 core. Go twins dotQ2_KQ8_KGo and
// dotIQ4_XSQ8_KGo in k2iq.go. Each takes (w, a *byte, nb int) with nb > 0
// whole super-blocks. A super-block's integer sums are exact (int16 lanes
// hold at most 4·45·128 for Q2_K, 2·127·128 for IQ4_XS; int32 lanes wrap
// as the twins' int32 does); the float32 steps are the twins', in their
// order: for Q2_K ggml's eight AVX2 lanes (lane l in v0 lane l for l < 4,
// in v1 lane l-4) and their fused multiply-adds, for IQ4_XS scalar ops
// each rounded alone. The results are the twins' bits.
// Instructions the Go assembler has no mnemonic for are WORDs, encoded by
// llvm-mc (-triple=aarch64 -mattr=+dotprod) from the text in their
// comments.

// func dotQ2_KQ8_KSDOT(w, a *byte, nb int) float32
TEXT ·dotQ2_KQ8_KSDOT(SB), NOSPLIT, $0-28
	MOVD w+0(FP), R0
	MOVD a+8(FP), R1
	MOVD nb+16(FP), R2
	WORD $0x6f00e400 // movi v0.2d, #0
	WORD $0x6f00e401 // movi v1.2d, #0
	WORD $0x4f00e47f // movi v31.16b, #3
	WORD $0x4f00e5fe // movi v30.16b, #15
dotQ2_KQ8_KSDOTloop:
	// Mins: prod_l = min 2l * bsum 2l + min 2l+1 * bsum 2l+1, lanes
	// 0..3 in v24, 4..7 in v19 (ggml's VPMADDWD lanes).
	VLD1 (R0), [V16.B16]
	ADD $260, R1, R3
	VLD1 (R3), [V20.B16, V21.B16]
	WORD $0x4e3e1e11 // and v17.16b, v16.16b, v30.16b
	WORD $0x6f0c0612 // ushr v18.16b, v16.16b, #4
	WORD $0x2f08a656 // uxtl v22.8h, v18.8b
	WORD $0x6f08a657 // uxtl2 v23.8h, v18.16b
	WORD $0x0e74c2d8 // smull v24.4s, v22.4h, v20.4h
	WORD $0x4e74c2dc // smull2 v28.4s, v22.8h, v20.8h
	WORD $0x4ebcbf18 // addp v24.4s, v24.4s, v28.4s
	WORD $0x0e75c2f3 // smull v19.4s, v23.4h, v21.4h
	WORD $0x4e75c2fd // smull2 v29.4s, v23.8h, v21.8h
	WORD $0x4ebdbe73 // addp v19.4s, v19.4s, v29.4s
	// sumi: (q2*scale)*q8 (q2*scale ≤ 45 a positive int8, so the
	// products take each sub-block's scale along); SDOT's lane i sums
	// bytes 4i..4i+3, ggml's lane order: each chunk's first 16 bytes
	// into v25 (lanes 0..3), its second 16 into v11 (lanes 4..7).
	WORD $0x6f00e419 // movi v25.2d, #0
	WORD $0x6f00e40b // movi v11.2d, #0
	ADD $16, R0, R4
	ADD $4, R1, R3
	VLD1.P 32(R4), [V2.B16, V3.B16]
	VLD1 (R4), [V26.B16, V27.B16]
	// Half 0: qs bytes 16..47, activations 4..131.
	WORD $0x4e3f1c44 // and v4.16b, v2.16b, v31.16b
	WORD $0x4e3f1c65 // and v5.16b, v3.16b, v31.16b
	WORD $0x4e010626 // dup v6.16b, v17.b[0]
	WORD $0x4e030627 // dup v7.16b, v17.b[1]
	WORD $0x4e269c84 // mul v4.16b, v4.16b, v6.16b
	WORD $0x4e279ca5 // mul v5.16b, v5.16b, v7.16b
	VLD1.P 32(R3), [V8.B16, V9.B16]
	WORD $0x4e889499 // sdot v25.4s, v4.16b, v8.16b
	WORD $0x4e8994ab // sdot v11.4s, v5.16b, v9.16b
	WORD $0x6f0e0444 // ushr v4.16b, v2.16b, #2
	WORD $0x6f0e0465 // ushr v5.16b, v3.16b, #2
	WORD $0x4e3f1c84 // and v4.16b, v4.16b, v31.16b
	WORD $0x4e3f1ca5 // and v5.16b, v5.16b, v31.16b
	WORD $0x4e050626 // dup v6.16b, v17.b[2]
	WORD $0x4e070627 // dup v7.16b, v17.b[3]
	WORD $0x4e269c84 // mul v4.16b, v4.16b, v6.16b
	WORD $0x4e279ca5 // mul v5.16b, v5.16b, v7.16b
	VLD1.P 32(R3), [V8.B16, V9.B16]
	WORD $0x4e889499 // sdot v25.4s, v4.16b, v8.16b
	WORD $0x4e8994ab // sdot v11.4s, v5.16b, v9.16b
	WORD $0x6f0c0444 // ushr v4.16b, v2.16b, #4
	WORD $0x6f0c0465 // ushr v5.16b, v3.16b, #4
	WORD $0x4e3f1c84 // and v4.16b, v4.16b, v31.16b
	WORD $0x4e3f1ca5 // and v5.16b, v5.16b, v31.16b
	WORD $0x4e090626 // dup v6.16b, v17.b[4]
	WORD $0x4e0b0627 // dup v7.16b, v17.b[5]
	WORD $0x4e269c84 // mul v4.16b, v4.16b, v6.16b
	WORD $0x4e279ca5 // mul v5.16b, v5.16b, v7.16b
	VLD1.P 32(R3), [V8.B16, V9.B16]
	WORD $0x4e889499 // sdot v25.4s, v4.16b, v8.16b
	WORD $0x4e8994ab // sdot v11.4s, v5.16b, v9.16b
	WORD $0x6f0a0444 // ushr v4.16b, v2.16b, #6
	WORD $0x6f0a0465 // ushr v5.16b, v3.16b, #6
	WORD $0x4e3f1c84 // and v4.16b, v4.16b, v31.16b
	WORD $0x4e3f1ca5 // and v5.16b, v5.16b, v31.16b
	WORD $0x4e0d0626 // dup v6.16b, v17.b[6]
	WORD $0x4e0f0627 // dup v7.16b, v17.b[7]
	WORD $0x4e269c84 // mul v4.16b, v4.16b, v6.16b
	WORD $0x4e279ca5 // mul v5.16b, v5.16b, v7.16b
	VLD1.P 32(R3), [V8.B16, V9.B16]
	WORD $0x4e889499 // sdot v25.4s, v4.16b, v8.16b
	WORD $0x4e8994ab // sdot v11.4s, v5.16b, v9.16b
	// Half 1: qs bytes 48..79, activations 132..259.
	WORD $0x4e3f1f44 // and v4.16b, v26.16b, v31.16b
	WORD $0x4e3f1f65 // and v5.16b, v27.16b, v31.16b
	WORD $0x4e110626 // dup v6.16b, v17.b[8]
	WORD $0x4e130627 // dup v7.16b, v17.b[9]
	WORD $0x4e269c84 // mul v4.16b, v4.16b, v6.16b
	WORD $0x4e279ca5 // mul v5.16b, v5.16b, v7.16b
	VLD1.P 32(R3), [V8.B16, V9.B16]
	WORD $0x4e889499 // sdot v25.4s, v4.16b, v8.16b
	WORD $0x4e8994ab // sdot v11.4s, v5.16b, v9.16b
	WORD $0x6f0e0744 // ushr v4.16b, v26.16b, #2
	WORD $0x6f0e0765 // ushr v5.16b, v27.16b, #2
	WORD $0x4e3f1c84 // and v4.16b, v4.16b, v31.16b
	WORD $0x4e3f1ca5 // and v5.16b, v5.16b, v31.16b
	WORD $0x4e150626 // dup v6.16b, v17.b[10]
	WORD $0x4e170627 // dup v7.16b, v17.b[11]
	WORD $0x4e269c84 // mul v4.16b, v4.16b, v6.16b
	WORD $0x4e279ca5 // mul v5.16b, v5.16b, v7.16b
	VLD1.P 32(R3), [V8.B16, V9.B16]
	WORD $0x4e889499 // sdot v25.4s, v4.16b, v8.16b
	WORD $0x4e8994ab // sdot v11.4s, v5.16b, v9.16b
	WORD $0x6f0c0744 // ushr v4.16b, v26.16b, #4
	WORD $0x6f0c0765 // ushr v5.16b, v27.16b, #4
	WORD $0x4e3f1c84 // and v4.16b, v4.16b, v31.16b
	WORD $0x4e3f1ca5 // and v5.16b, v5.16b, v31.16b
	WORD $0x4e190626 // dup v6.16b, v17.b[12]
	WORD $0x4e1b0627 // dup v7.16b, v17.b[13]
	WORD $0x4e269c84 // mul v4.16b, v4.16b, v6.16b
	WORD $0x4e279ca5 // mul v5.16b, v5.16b, v7.16b
	VLD1.P 32(R3), [V8.B16, V9.B16]
	WORD $0x4e889499 // sdot v25.4s, v4.16b, v8.16b
	WORD $0x4e8994ab // sdot v11.4s, v5.16b, v9.16b
	WORD $0x6f0a0744 // ushr v4.16b, v26.16b, #6
	WORD $0x6f0a0765 // ushr v5.16b, v27.16b, #6
	WORD $0x4e3f1c84 // and v4.16b, v4.16b, v31.16b
	WORD $0x4e3f1ca5 // and v5.16b, v5.16b, v31.16b
	WORD $0x4e1d0626 // dup v6.16b, v17.b[14]
	WORD $0x4e1f0627 // dup v7.16b, v17.b[15]
	WORD $0x4e269c84 // mul v4.16b, v4.16b, v6.16b
	WORD $0x4e279ca5 // mul v5.16b, v5.16b, v7.16b
	VLD1.P 32(R3), [V8.B16, V9.B16]
	WORD $0x4e889499 // sdot v25.4s, v4.16b, v8.16b
	WORD $0x4e8994ab // sdot v11.4s, v5.16b, v9.16b
	WORD $0x4e21db18 // scvtf v24.4s, v24.4s
	WORD $0x4e21da73 // scvtf v19.4s, v19.4s
	WORD $0x4e21db39 // scvtf v25.4s, v25.4s
	WORD $0x4e21d96b // scvtf v11.4s, v11.4s
	// d = dy*f16(d), dy*f16(dmin); acc -= (dy*dmin)*prod (FMLS rounds as
	// the twin's fma(-dy*dmin, prod, acc)), then acc += d*sumi, fused.
	FMOVS (R1), F26
	MOVHU 80(R0), R4
	FMOVS R4, F27
	WORD $0x1ee2437b // fcvt s27, h27
	MOVHU 82(R0), R4
	FMOVS R4, F28
	WORD $0x1ee2439c // fcvt s28, h28
	FMULS F26, F27, F27
	FMULS F26, F28, F28
	WORD $0x4f9c5300 // fmls v0.4s, v24.4s, v28.s[0]
	WORD $0x4f9c5261 // fmls v1.4s, v19.4s, v28.s[0]
	WORD $0x4f9b1320 // fmla v0.4s, v25.4s, v27.s[0]
	WORD $0x4f9b1161 // fmla v1.4s, v11.4s, v27.s[0]
	ADD $84, R0
	ADD $292, R1
	SUBS $1, R2
	BNE dotQ2_KQ8_KSDOTloop
	// hsum_float_8: r_i = acc[4+i] + acc[i], then (r0+r2) + (r1+r3).
	WORD $0x4e20d422 // fadd v2.4s, v1.4s, v0.4s
	WORD $0x6e024043 // ext v3.16b, v2.16b, v2.16b, #8
	WORD $0x4e23d442 // fadd v2.4s, v2.4s, v3.4s
	WORD $0x7e30d842 // faddp s2, v2.2s
	FMOVS F2, ret+24(FP)
	RET

// func dotQ2_KQ8_KASIMD(w, a *byte, nb int) float32
TEXT ·dotQ2_KQ8_KASIMD(SB), NOSPLIT, $0-28
	MOVD w+0(FP), R0
	MOVD a+8(FP), R1
	MOVD nb+16(FP), R2
	WORD $0x6f00e400 // movi v0.2d, #0
	WORD $0x6f00e401 // movi v1.2d, #0
	WORD $0x4f00e47f // movi v31.16b, #3
	WORD $0x4f00e5fe // movi v30.16b, #15
dotQ2_KQ8_KASIMDloop:
	// Mins: prod_l = min 2l * bsum 2l + min 2l+1 * bsum 2l+1, lanes
	// 0..3 in v24, 4..7 in v19 (ggml's VPMADDWD lanes).
	VLD1 (R0), [V16.B16]
	ADD $260, R1, R3
	VLD1 (R3), [V20.B16, V21.B16]
	WORD $0x4e3e1e11 // and v17.16b, v16.16b, v30.16b
	WORD $0x6f0c0612 // ushr v18.16b, v16.16b, #4
	WORD $0x2f08a656 // uxtl v22.8h, v18.8b
	WORD $0x6f08a657 // uxtl2 v23.8h, v18.16b
	WORD $0x0e74c2d8 // smull v24.4s, v22.4h, v20.4h
	WORD $0x4e74c2dc // smull2 v28.4s, v22.8h, v20.8h
	WORD $0x4ebcbf18 // addp v24.4s, v24.4s, v28.4s
	WORD $0x0e75c2f3 // smull v19.4s, v23.4h, v21.4h
	WORD $0x4e75c2fd // smull2 v29.4s, v23.8h, v21.8h
	WORD $0x4ebdbe73 // addp v19.4s, v19.4s, v29.4s
	// sumi: (q2*scale)*q8 (q2*scale ≤ 45 a positive int8, so the
	// products take each sub-block's scale along), widened to int16
	// by byte position over a half's four chunks (at most 4·45·128):
	// v10, v12 bytes 0..7 and 8..15 of each chunk's first 16, v13, v14
	// of its second 16; pairs then go to int32 in v15, v28, v29, v11.
	ADD $16, R0, R4
	ADD $4, R1, R3
	VLD1.P 32(R4), [V2.B16, V3.B16]
	VLD1 (R4), [V26.B16, V27.B16]
	// Half 0: qs bytes 16..47, activations 4..131.
	WORD $0x4e3f1c44 // and v4.16b, v2.16b, v31.16b
	WORD $0x4e3f1c65 // and v5.16b, v3.16b, v31.16b
	WORD $0x4e010626 // dup v6.16b, v17.b[0]
	WORD $0x4e030627 // dup v7.16b, v17.b[1]
	WORD $0x4e269c84 // mul v4.16b, v4.16b, v6.16b
	WORD $0x4e279ca5 // mul v5.16b, v5.16b, v7.16b
	VLD1.P 32(R3), [V8.B16, V9.B16]
	WORD $0x0e28c08a // smull v10.8h, v4.8b, v8.8b
	WORD $0x4e28c08c // smull2 v12.8h, v4.16b, v8.16b
	WORD $0x0e29c0ad // smull v13.8h, v5.8b, v9.8b
	WORD $0x4e29c0ae // smull2 v14.8h, v5.16b, v9.16b
	WORD $0x6f0e0444 // ushr v4.16b, v2.16b, #2
	WORD $0x6f0e0465 // ushr v5.16b, v3.16b, #2
	WORD $0x4e3f1c84 // and v4.16b, v4.16b, v31.16b
	WORD $0x4e3f1ca5 // and v5.16b, v5.16b, v31.16b
	WORD $0x4e050626 // dup v6.16b, v17.b[2]
	WORD $0x4e070627 // dup v7.16b, v17.b[3]
	WORD $0x4e269c84 // mul v4.16b, v4.16b, v6.16b
	WORD $0x4e279ca5 // mul v5.16b, v5.16b, v7.16b
	VLD1.P 32(R3), [V8.B16, V9.B16]
	WORD $0x0e28808a // smlal v10.8h, v4.8b, v8.8b
	WORD $0x4e28808c // smlal2 v12.8h, v4.16b, v8.16b
	WORD $0x0e2980ad // smlal v13.8h, v5.8b, v9.8b
	WORD $0x4e2980ae // smlal2 v14.8h, v5.16b, v9.16b
	WORD $0x6f0c0444 // ushr v4.16b, v2.16b, #4
	WORD $0x6f0c0465 // ushr v5.16b, v3.16b, #4
	WORD $0x4e3f1c84 // and v4.16b, v4.16b, v31.16b
	WORD $0x4e3f1ca5 // and v5.16b, v5.16b, v31.16b
	WORD $0x4e090626 // dup v6.16b, v17.b[4]
	WORD $0x4e0b0627 // dup v7.16b, v17.b[5]
	WORD $0x4e269c84 // mul v4.16b, v4.16b, v6.16b
	WORD $0x4e279ca5 // mul v5.16b, v5.16b, v7.16b
	VLD1.P 32(R3), [V8.B16, V9.B16]
	WORD $0x0e28808a // smlal v10.8h, v4.8b, v8.8b
	WORD $0x4e28808c // smlal2 v12.8h, v4.16b, v8.16b
	WORD $0x0e2980ad // smlal v13.8h, v5.8b, v9.8b
	WORD $0x4e2980ae // smlal2 v14.8h, v5.16b, v9.16b
	WORD $0x6f0a0444 // ushr v4.16b, v2.16b, #6
	WORD $0x6f0a0465 // ushr v5.16b, v3.16b, #6
	WORD $0x4e3f1c84 // and v4.16b, v4.16b, v31.16b
	WORD $0x4e3f1ca5 // and v5.16b, v5.16b, v31.16b
	WORD $0x4e0d0626 // dup v6.16b, v17.b[6]
	WORD $0x4e0f0627 // dup v7.16b, v17.b[7]
	WORD $0x4e269c84 // mul v4.16b, v4.16b, v6.16b
	WORD $0x4e279ca5 // mul v5.16b, v5.16b, v7.16b
	VLD1.P 32(R3), [V8.B16, V9.B16]
	WORD $0x0e28808a // smlal v10.8h, v4.8b, v8.8b
	WORD $0x4e28808c // smlal2 v12.8h, v4.16b, v8.16b
	WORD $0x0e2980ad // smlal v13.8h, v5.8b, v9.8b
	WORD $0x4e2980ae // smlal2 v14.8h, v5.16b, v9.16b
	WORD $0x4e60294f // saddlp v15.4s, v10.8h
	WORD $0x4e60299c // saddlp v28.4s, v12.8h
	WORD $0x4e6029bd // saddlp v29.4s, v13.8h
	WORD $0x4e6029cb // saddlp v11.4s, v14.8h
	// Half 1: qs bytes 48..79, activations 132..259.
	WORD $0x4e3f1f44 // and v4.16b, v26.16b, v31.16b
	WORD $0x4e3f1f65 // and v5.16b, v27.16b, v31.16b
	WORD $0x4e110626 // dup v6.16b, v17.b[8]
	WORD $0x4e130627 // dup v7.16b, v17.b[9]
	WORD $0x4e269c84 // mul v4.16b, v4.16b, v6.16b
	WORD $0x4e279ca5 // mul v5.16b, v5.16b, v7.16b
	VLD1.P 32(R3), [V8.B16, V9.B16]
	WORD $0x0e28c08a // smull v10.8h, v4.8b, v8.8b
	WORD $0x4e28c08c // smull2 v12.8h, v4.16b, v8.16b
	WORD $0x0e29c0ad // smull v13.8h, v5.8b, v9.8b
	WORD $0x4e29c0ae // smull2 v14.8h, v5.16b, v9.16b
	WORD $0x6f0e0744 // ushr v4.16b, v26.16b, #2
	WORD $0x6f0e0765 // ushr v5.16b, v27.16b, #2
	WORD $0x4e3f1c84 // and v4.16b, v4.16b, v31.16b
	WORD $0x4e3f1ca5 // and v5.16b, v5.16b, v31.16b
	WORD $0x4e150626 // dup v6.16b, v17.b[10]
	WORD $0x4e170627 // dup v7.16b, v17.b[11]
	WORD $0x4e269c84 // mul v4.16b, v4.16b, v6.16b
	WORD $0x4e279ca5 // mul v5.16b, v5.16b, v7.16b
	VLD1.P 32(R3), [V8.B16, V9.B16]
	WORD $0x0e28808a // smlal v10.8h, v4.8b, v8.8b
	WORD $0x4e28808c // smlal2 v12.8h, v4.16b, v8.16b
	WORD $0x0e2980ad // smlal v13.8h, v5.8b, v9.8b
	WORD $0x4e2980ae // smlal2 v14.8h, v5.16b, v9.16b
	WORD $0x6f0c0744 // ushr v4.16b, v26.16b, #4
	WORD $0x6f0c0765 // ushr v5.16b, v27.16b, #4
	WORD $0x4e3f1c84 // and v4.16b, v4.16b, v31.16b
	WORD $0x4e3f1ca5 // and v5.16b, v5.16b, v31.16b
	WORD $0x4e190626 // dup v6.16b, v17.b[12]
	WORD $0x4e1b0627 // dup v7.16b, v17.b[13]
	WORD $0x4e269c84 // mul v4.16b, v4.16b, v6.16b
	WORD $0x4e279ca5 // mul v5.16b, v5.16b, v7.16b
	VLD1.P 32(R3), [V8.B16, V9.B16]
	WORD $0x0e28808a // smlal v10.8h, v4.8b, v8.8b
	WORD $0x4e28808c // smlal2 v12.8h, v4.16b, v8.16b
	WORD $0x0e2980ad // smlal v13.8h, v5.8b, v9.8b
	WORD $0x4e2980ae // smlal2 v14.8h, v5.16b, v9.16b
	WORD $0x6f0a0744 // ushr v4.16b, v26.16b, #6
	WORD $0x6f0a0765 // ushr v5.16b, v27.16b, #6
	WORD $0x4e3f1c84 // and v4.16b, v4.16b, v31.16b
	WORD $0x4e3f1ca5 // and v5.16b, v5.16b, v31.16b
	WORD $0x4e1d0626 // dup v6.16b, v17.b[14]
	WORD $0x4e1f0627 // dup v7.16b, v17.b[15]
	WORD $0x4e269c84 // mul v4.16b, v4.16b, v6.16b
	WORD $0x4e279ca5 // mul v5.16b, v5.16b, v7.16b
	VLD1.P 32(R3), [V8.B16, V9.B16]
	WORD $0x0e28808a // smlal v10.8h, v4.8b, v8.8b
	WORD $0x4e28808c // smlal2 v12.8h, v4.16b, v8.16b
	WORD $0x0e2980ad // smlal v13.8h, v5.8b, v9.8b
	WORD $0x4e2980ae // smlal2 v14.8h, v5.16b, v9.16b
	WORD $0x4e60694f // sadalp v15.4s, v10.8h
	WORD $0x4e60699c // sadalp v28.4s, v12.8h
	WORD $0x4e6069bd // sadalp v29.4s, v13.8h
	WORD $0x4e6069cb // sadalp v11.4s, v14.8h
	// Lane l: bytes 4l..4l+3 (v15, v28 pairs of bytes 0..7, 8..15).
	WORD $0x4ebcbdf9 // addp v25.4s, v15.4s, v28.4s
	WORD $0x4eabbfab // addp v11.4s, v29.4s, v11.4s
	WORD $0x4e21db18 // scvtf v24.4s, v24.4s
	WORD $0x4e21da73 // scvtf v19.4s, v19.4s
	WORD $0x4e21db39 // scvtf v25.4s, v25.4s
	WORD $0x4e21d96b // scvtf v11.4s, v11.4s
	// d = dy*f16(d), dy*f16(dmin); acc -= (dy*dmin)*prod (FMLS rounds as
	// the twin's fma(-dy*dmin, prod, acc)), then acc += d*sumi, fused.
	FMOVS (R1), F26
	MOVHU 80(R0), R4
	FMOVS R4, F27
	WORD $0x1ee2437b // fcvt s27, h27
	MOVHU 82(R0), R4
	FMOVS R4, F28
	WORD $0x1ee2439c // fcvt s28, h28
	FMULS F26, F27, F27
	FMULS F26, F28, F28
	WORD $0x4f9c5300 // fmls v0.4s, v24.4s, v28.s[0]
	WORD $0x4f9c5261 // fmls v1.4s, v19.4s, v28.s[0]
	WORD $0x4f9b1320 // fmla v0.4s, v25.4s, v27.s[0]
	WORD $0x4f9b1161 // fmla v1.4s, v11.4s, v27.s[0]
	ADD $84, R0
	ADD $292, R1
	SUBS $1, R2
	BNE dotQ2_KQ8_KASIMDloop
	// hsum_float_8: r_i = acc[4+i] + acc[i], then (r0+r2) + (r1+r3).
	WORD $0x4e20d422 // fadd v2.4s, v1.4s, v0.4s
	WORD $0x6e024043 // ext v3.16b, v2.16b, v2.16b, #8
	WORD $0x4e23d442 // fadd v2.4s, v2.4s, v3.4s
	WORD $0x7e30d842 // faddp s2, v2.2s
	FMOVS F2, ret+24(FP)
	RET

// iq4kvarm<> is kvaluesIQ4NL, the TBL table.
DATA iq4kvarm<>+0x00(SB)/8, $0xf6eaddcfbfad9881
DATA iq4kvarm<>+0x08(SB)/8, $0x7159453526190d01
GLOBL iq4kvarm<>(SB), RODATA|NOPTR, $16

// iq4sarm<> spreads and shifts an IQ4_XS block's scale bits (its bytes
// 0..7 in a vector) to one int16 a sub-block: +0 the TBL indices putting
// scales_h in every word, +16 those putting scales_l's first half in
// words 0..3 and its second in 4..7; +32 and +48 the USHL shifts (right
// by 2ib, and by 4·(ib mod 4)) bringing field ib to the bottom of word ib.
DATA iq4sarm<>+0x00(SB)/8, $0x0302030203020302
DATA iq4sarm<>+0x08(SB)/8, $0x0302030203020302
DATA iq4sarm<>+0x10(SB)/8, $0x0504050405040504
DATA iq4sarm<>+0x18(SB)/8, $0x0706070607060706
DATA iq4sarm<>+0x20(SB)/8, $0xfffafffcfffe0000
DATA iq4sarm<>+0x28(SB)/8, $0xfff2fff4fff6fff8
DATA iq4sarm<>+0x30(SB)/8, $0xfff4fff8fffc0000
DATA iq4sarm<>+0x38(SB)/8, $0xfff4fff8fffc0000
GLOBL iq4sarm<>(SB), RODATA|NOPTR, $64

// The IQ4_XS dots keep ggml's AVX2 order (dotIQ4_XSQ8_KGo): eight int32
// lanes a super-block, lane l summing values 4l..4l+3 of every sub-block
// times its scale, here lanes 0..3 (values 0..15, the low nibbles) in v25
// and 4..7 (values 16..31, the high nibbles) in v24. SDOT's lane i sums
// bytes 4i..4i+3, which is this grouping; without SDOT, SMULL and SMULL2
// products go pairwise into int16 (within ±2·127·128) by ADDP and into
// int32 by SADDLP, the same grouping. Each super-block scales its lanes
// into two float32 accumulators (v0, v9) by one FMLA a lane, summed once
// at the end as hsum8.

// func dotIQ4_XSQ8_KSDOT(w, a *byte, nb int) float32
TEXT ·dotIQ4_XSQ8_KSDOT(SB), NOSPLIT, $0-28
	MOVD w+0(FP), R0
	MOVD a+8(FP), R1
	MOVD nb+16(FP), R2
	MOVD $iq4kvarm<>(SB), R5
	VLD1 (R5), [V29.B16]
	WORD $0x6f00e400 // movi v0.2d, #0
	WORD $0x6f00e409 // movi v9.2d, #0
	WORD $0x4f00e5fe // movi v30.16b, #15
	WORD $0x4f018411 // movi v17.8h, #32
	WORD $0x4f0085fc // movi v28.8h, #15
	WORD $0x4f00847f // movi v31.8h, #3
	MOVD $iq4sarm<>(SB), R5
	VLD1 (R5), [V20.B16, V21.B16, V22.B16, V23.B16]
dotIQ4_XSQ8_KSDOTloop:
	// ls-32 as int16 in v16, then as int32: sub-blocks 0..3 in v18,
	// 4..7 in v19. ls = nibble ib of scales_l | bits 2ib, 2ib+1 of
	// scales_h << 4, spread to word ib by TBL and shifted into place by
	// USHL's per-lane (right) shifts.
	VLD1 (R0), [V16.B8]
	WORD $0x4e140212 // tbl v18.16b, {v16.16b}, v20.16b
	WORD $0x4e150210 // tbl v16.16b, {v16.16b}, v21.16b
	WORD $0x6e764652 // ushl v18.8h, v18.8h, v22.8h
	WORD $0x6e774610 // ushl v16.8h, v16.8h, v23.8h
	WORD $0x4e3f1e52 // and v18.16b, v18.16b, v31.16b
	WORD $0x4e3c1e10 // and v16.16b, v16.16b, v28.16b
	WORD $0x4f145652 // shl v18.8h, v18.8h, #4
	WORD $0x4eb21e10 // orr v16.16b, v16.16b, v18.16b
	WORD $0x6e718610 // sub v16.8h, v16.8h, v17.8h
	WORD $0x0f10a612 // sxtl v18.4s, v16.4h
	WORD $0x4f10a613 // sxtl2 v19.4s, v16.8h
	WORD $0x6f00e419 // movi v25.2d, #0
	WORD $0x6f00e418 // movi v24.2d, #0
	ADD $8, R0, R4
	ADD $4, R1, R3
	VLD1.P 64(R4), [V1.B16, V2.B16, V3.B16, V4.B16]
	VLD1 (R4), [V5.B16, V6.B16, V7.B16, V8.B16]
	// Sub-block 0: levels by TBL (values 0..15 from the low nibbles, 16..31
	// from the high ones), their int32 lanes times ls-32 into v25 and v24.
	WORD $0x4e3e1c2a // and v10.16b, v1.16b, v30.16b
	WORD $0x6f0c042b // ushr v11.16b, v1.16b, #4
	WORD $0x4e0a03aa // tbl v10.16b, {v29.16b}, v10.16b
	WORD $0x4e0b03ab // tbl v11.16b, {v29.16b}, v11.16b
	VLD1.P 32(R3), [V12.B16, V13.B16]
	WORD $0x6f00e40e // movi v14.2d, #0
	WORD $0x6f00e40f // movi v15.2d, #0
	WORD $0x4e8c954e // sdot v14.4s, v10.16b, v12.16b
	WORD $0x4e8d956f // sdot v15.4s, v11.16b, v13.16b
	WORD $0x6f9201d9 // mla v25.4s, v14.4s, v18.s[0]
	WORD $0x6f9201f8 // mla v24.4s, v15.4s, v18.s[0]
	// Sub-block 1.
	WORD $0x4e3e1c4a // and v10.16b, v2.16b, v30.16b
	WORD $0x6f0c044b // ushr v11.16b, v2.16b, #4
	WORD $0x4e0a03aa // tbl v10.16b, {v29.16b}, v10.16b
	WORD $0x4e0b03ab // tbl v11.16b, {v29.16b}, v11.16b
	VLD1.P 32(R3), [V12.B16, V13.B16]
	WORD $0x6f00e40e // movi v14.2d, #0
	WORD $0x6f00e40f // movi v15.2d, #0
	WORD $0x4e8c954e // sdot v14.4s, v10.16b, v12.16b
	WORD $0x4e8d956f // sdot v15.4s, v11.16b, v13.16b
	WORD $0x6fb201d9 // mla v25.4s, v14.4s, v18.s[1]
	WORD $0x6fb201f8 // mla v24.4s, v15.4s, v18.s[1]
	// Sub-block 2.
	WORD $0x4e3e1c6a // and v10.16b, v3.16b, v30.16b
	WORD $0x6f0c046b // ushr v11.16b, v3.16b, #4
	WORD $0x4e0a03aa // tbl v10.16b, {v29.16b}, v10.16b
	WORD $0x4e0b03ab // tbl v11.16b, {v29.16b}, v11.16b
	VLD1.P 32(R3), [V12.B16, V13.B16]
	WORD $0x6f00e40e // movi v14.2d, #0
	WORD $0x6f00e40f // movi v15.2d, #0
	WORD $0x4e8c954e // sdot v14.4s, v10.16b, v12.16b
	WORD $0x4e8d956f // sdot v15.4s, v11.16b, v13.16b
	WORD $0x6f9209d9 // mla v25.4s, v14.4s, v18.s[2]
	WORD $0x6f9209f8 // mla v24.4s, v15.4s, v18.s[2]
	// Sub-block 3.
	WORD $0x4e3e1c8a // and v10.16b, v4.16b, v30.16b
	WORD $0x6f0c048b // ushr v11.16b, v4.16b, #4
	WORD $0x4e0a03aa // tbl v10.16b, {v29.16b}, v10.16b
	WORD $0x4e0b03ab // tbl v11.16b, {v29.16b}, v11.16b
	VLD1.P 32(R3), [V12.B16, V13.B16]
	WORD $0x6f00e40e // movi v14.2d, #0
	WORD $0x6f00e40f // movi v15.2d, #0
	WORD $0x4e8c954e // sdot v14.4s, v10.16b, v12.16b
	WORD $0x4e8d956f // sdot v15.4s, v11.16b, v13.16b
	WORD $0x6fb209d9 // mla v25.4s, v14.4s, v18.s[3]
	WORD $0x6fb209f8 // mla v24.4s, v15.4s, v18.s[3]
	// Sub-block 4.
	WORD $0x4e3e1caa // and v10.16b, v5.16b, v30.16b
	WORD $0x6f0c04ab // ushr v11.16b, v5.16b, #4
	WORD $0x4e0a03aa // tbl v10.16b, {v29.16b}, v10.16b
	WORD $0x4e0b03ab // tbl v11.16b, {v29.16b}, v11.16b
	VLD1.P 32(R3), [V12.B16, V13.B16]
	WORD $0x6f00e40e // movi v14.2d, #0
	WORD $0x6f00e40f // movi v15.2d, #0
	WORD $0x4e8c954e // sdot v14.4s, v10.16b, v12.16b
	WORD $0x4e8d956f // sdot v15.4s, v11.16b, v13.16b
	WORD $0x6f9301d9 // mla v25.4s, v14.4s, v19.s[0]
	WORD $0x6f9301f8 // mla v24.4s, v15.4s, v19.s[0]
	// Sub-block 5.
	WORD $0x4e3e1cca // and v10.16b, v6.16b, v30.16b
	WORD $0x6f0c04cb // ushr v11.16b, v6.16b, #4
	WORD $0x4e0a03aa // tbl v10.16b, {v29.16b}, v10.16b
	WORD $0x4e0b03ab // tbl v11.16b, {v29.16b}, v11.16b
	VLD1.P 32(R3), [V12.B16, V13.B16]
	WORD $0x6f00e40e // movi v14.2d, #0
	WORD $0x6f00e40f // movi v15.2d, #0
	WORD $0x4e8c954e // sdot v14.4s, v10.16b, v12.16b
	WORD $0x4e8d956f // sdot v15.4s, v11.16b, v13.16b
	WORD $0x6fb301d9 // mla v25.4s, v14.4s, v19.s[1]
	WORD $0x6fb301f8 // mla v24.4s, v15.4s, v19.s[1]
	// Sub-block 6.
	WORD $0x4e3e1cea // and v10.16b, v7.16b, v30.16b
	WORD $0x6f0c04eb // ushr v11.16b, v7.16b, #4
	WORD $0x4e0a03aa // tbl v10.16b, {v29.16b}, v10.16b
	WORD $0x4e0b03ab // tbl v11.16b, {v29.16b}, v11.16b
	VLD1.P 32(R3), [V12.B16, V13.B16]
	WORD $0x6f00e40e // movi v14.2d, #0
	WORD $0x6f00e40f // movi v15.2d, #0
	WORD $0x4e8c954e // sdot v14.4s, v10.16b, v12.16b
	WORD $0x4e8d956f // sdot v15.4s, v11.16b, v13.16b
	WORD $0x6f9309d9 // mla v25.4s, v14.4s, v19.s[2]
	WORD $0x6f9309f8 // mla v24.4s, v15.4s, v19.s[2]
	// Sub-block 7.
	WORD $0x4e3e1d0a // and v10.16b, v8.16b, v30.16b
	WORD $0x6f0c050b // ushr v11.16b, v8.16b, #4
	WORD $0x4e0a03aa // tbl v10.16b, {v29.16b}, v10.16b
	WORD $0x4e0b03ab // tbl v11.16b, {v29.16b}, v11.16b
	VLD1.P 32(R3), [V12.B16, V13.B16]
	WORD $0x6f00e40e // movi v14.2d, #0
	WORD $0x6f00e40f // movi v15.2d, #0
	WORD $0x4e8c954e // sdot v14.4s, v10.16b, v12.16b
	WORD $0x4e8d956f // sdot v15.4s, v11.16b, v13.16b
	WORD $0x6fb309d9 // mla v25.4s, v14.4s, v19.s[3]
	WORD $0x6fb309f8 // mla v24.4s, v15.4s, v19.s[3]
	WORD $0x4e21db39 // scvtf v25.4s, v25.4s
	WORD $0x4e21db18 // scvtf v24.4s, v24.4s
	// acc_l = fma(f16(d)*dy, float32(lane_l), acc_l): lanes 0..3 in v0,
	// 4..7 in v9.
	MOVHU (R0), R4
	FMOVS R4, F27
	WORD $0x1ee2437b // fcvt s27, h27
	FMOVS (R1), F26
	FMULS F26, F27, F27
	WORD $0x4f9b1320 // fmla v0.4s, v25.4s, v27.s[0]
	WORD $0x4f9b1309 // fmla v9.4s, v24.4s, v27.s[0]
	ADD $136, R0
	ADD $292, R1
	SUBS $1, R2
	BNE dotIQ4_XSQ8_KSDOTloop
	// hsum8: (acc0+acc4 + acc2+acc6) + (acc1+acc5 + acc3+acc7).
	WORD $0x4e29d400 // fadd v0.4s, v0.4s, v9.4s
	WORD $0x6e004001 // ext v1.16b, v0.16b, v0.16b, #8
	WORD $0x4e21d400 // fadd v0.4s, v0.4s, v1.4s
	WORD $0x7e30d800 // faddp s0, v0.2s
	FMOVS F0, ret+24(FP)
	RET

// func dotIQ4_XSQ8_KASIMD(w, a *byte, nb int) float32
TEXT ·dotIQ4_XSQ8_KASIMD(SB), NOSPLIT, $0-28
	MOVD w+0(FP), R0
	MOVD a+8(FP), R1
	MOVD nb+16(FP), R2
	MOVD $iq4kvarm<>(SB), R5
	VLD1 (R5), [V29.B16]
	WORD $0x6f00e400 // movi v0.2d, #0
	WORD $0x6f00e409 // movi v9.2d, #0
	WORD $0x4f00e5fe // movi v30.16b, #15
	WORD $0x4f018411 // movi v17.8h, #32
	WORD $0x4f0085fc // movi v28.8h, #15
	WORD $0x4f00847f // movi v31.8h, #3
	MOVD $iq4sarm<>(SB), R5
	VLD1 (R5), [V20.B16, V21.B16, V22.B16, V23.B16]
dotIQ4_XSQ8_KASIMDloop:
	// ls-32 as int16 in v16, then as int32: sub-blocks 0..3 in v18,
	// 4..7 in v19. ls = nibble ib of scales_l | bits 2ib, 2ib+1 of
	// scales_h << 4, spread to word ib by TBL and shifted into place by
	// USHL's per-lane (right) shifts.
	VLD1 (R0), [V16.B8]
	WORD $0x4e140212 // tbl v18.16b, {v16.16b}, v20.16b
	WORD $0x4e150210 // tbl v16.16b, {v16.16b}, v21.16b
	WORD $0x6e764652 // ushl v18.8h, v18.8h, v22.8h
	WORD $0x6e774610 // ushl v16.8h, v16.8h, v23.8h
	WORD $0x4e3f1e52 // and v18.16b, v18.16b, v31.16b
	WORD $0x4e3c1e10 // and v16.16b, v16.16b, v28.16b
	WORD $0x4f145652 // shl v18.8h, v18.8h, #4
	WORD $0x4eb21e10 // orr v16.16b, v16.16b, v18.16b
	WORD $0x6e718610 // sub v16.8h, v16.8h, v17.8h
	WORD $0x0f10a612 // sxtl v18.4s, v16.4h
	WORD $0x4f10a613 // sxtl2 v19.4s, v16.8h
	WORD $0x6f00e419 // movi v25.2d, #0
	WORD $0x6f00e418 // movi v24.2d, #0
	ADD $8, R0, R4
	ADD $4, R1, R3
	VLD1.P 64(R4), [V1.B16, V2.B16, V3.B16, V4.B16]
	VLD1 (R4), [V5.B16, V6.B16, V7.B16, V8.B16]
	// Sub-block 0: levels by TBL (values 0..15 from the low nibbles, 16..31
	// from the high ones), their int32 lanes times ls-32 into v25 and v24.
	WORD $0x4e3e1c2a // and v10.16b, v1.16b, v30.16b
	WORD $0x6f0c042b // ushr v11.16b, v1.16b, #4
	WORD $0x4e0a03aa // tbl v10.16b, {v29.16b}, v10.16b
	WORD $0x4e0b03ab // tbl v11.16b, {v29.16b}, v11.16b
	VLD1.P 32(R3), [V12.B16, V13.B16]
	WORD $0x0e2cc14e // smull v14.8h, v10.8b, v12.8b
	WORD $0x4e2cc14f // smull2 v15.8h, v10.16b, v12.16b
	WORD $0x0e2dc17a // smull v26.8h, v11.8b, v13.8b
	WORD $0x4e2dc17b // smull2 v27.8h, v11.16b, v13.16b
	WORD $0x4e6fbdce // addp v14.8h, v14.8h, v15.8h
	WORD $0x4e7bbf4f // addp v15.8h, v26.8h, v27.8h
	WORD $0x4e6029ce // saddlp v14.4s, v14.8h
	WORD $0x4e6029ef // saddlp v15.4s, v15.8h
	WORD $0x6f9201d9 // mla v25.4s, v14.4s, v18.s[0]
	WORD $0x6f9201f8 // mla v24.4s, v15.4s, v18.s[0]
	// Sub-block 1.
	WORD $0x4e3e1c4a // and v10.16b, v2.16b, v30.16b
	WORD $0x6f0c044b // ushr v11.16b, v2.16b, #4
	WORD $0x4e0a03aa // tbl v10.16b, {v29.16b}, v10.16b
	WORD $0x4e0b03ab // tbl v11.16b, {v29.16b}, v11.16b
	VLD1.P 32(R3), [V12.B16, V13.B16]
	WORD $0x0e2cc14e // smull v14.8h, v10.8b, v12.8b
	WORD $0x4e2cc14f // smull2 v15.8h, v10.16b, v12.16b
	WORD $0x0e2dc17a // smull v26.8h, v11.8b, v13.8b
	WORD $0x4e2dc17b // smull2 v27.8h, v11.16b, v13.16b
	WORD $0x4e6fbdce // addp v14.8h, v14.8h, v15.8h
	WORD $0x4e7bbf4f // addp v15.8h, v26.8h, v27.8h
	WORD $0x4e6029ce // saddlp v14.4s, v14.8h
	WORD $0x4e6029ef // saddlp v15.4s, v15.8h
	WORD $0x6fb201d9 // mla v25.4s, v14.4s, v18.s[1]
	WORD $0x6fb201f8 // mla v24.4s, v15.4s, v18.s[1]
	// Sub-block 2.
	WORD $0x4e3e1c6a // and v10.16b, v3.16b, v30.16b
	WORD $0x6f0c046b // ushr v11.16b, v3.16b, #4
	WORD $0x4e0a03aa // tbl v10.16b, {v29.16b}, v10.16b
	WORD $0x4e0b03ab // tbl v11.16b, {v29.16b}, v11.16b
	VLD1.P 32(R3), [V12.B16, V13.B16]
	WORD $0x0e2cc14e // smull v14.8h, v10.8b, v12.8b
	WORD $0x4e2cc14f // smull2 v15.8h, v10.16b, v12.16b
	WORD $0x0e2dc17a // smull v26.8h, v11.8b, v13.8b
	WORD $0x4e2dc17b // smull2 v27.8h, v11.16b, v13.16b
	WORD $0x4e6fbdce // addp v14.8h, v14.8h, v15.8h
	WORD $0x4e7bbf4f // addp v15.8h, v26.8h, v27.8h
	WORD $0x4e6029ce // saddlp v14.4s, v14.8h
	WORD $0x4e6029ef // saddlp v15.4s, v15.8h
	WORD $0x6f9209d9 // mla v25.4s, v14.4s, v18.s[2]
	WORD $0x6f9209f8 // mla v24.4s, v15.4s, v18.s[2]
	// Sub-block 3.
	WORD $0x4e3e1c8a // and v10.16b, v4.16b, v30.16b
	WORD $0x6f0c048b // ushr v11.16b, v4.16b, #4
	WORD $0x4e0a03aa // tbl v10.16b, {v29.16b}, v10.16b
	WORD $0x4e0b03ab // tbl v11.16b, {v29.16b}, v11.16b
	VLD1.P 32(R3), [V12.B16, V13.B16]
	WORD $0x0e2cc14e // smull v14.8h, v10.8b, v12.8b
	WORD $0x4e2cc14f // smull2 v15.8h, v10.16b, v12.16b
	WORD $0x0e2dc17a // smull v26.8h, v11.8b, v13.8b
	WORD $0x4e2dc17b // smull2 v27.8h, v11.16b, v13.16b
	WORD $0x4e6fbdce // addp v14.8h, v14.8h, v15.8h
	WORD $0x4e7bbf4f // addp v15.8h, v26.8h, v27.8h
	WORD $0x4e6029ce // saddlp v14.4s, v14.8h
	WORD $0x4e6029ef // saddlp v15.4s, v15.8h
	WORD $0x6fb209d9 // mla v25.4s, v14.4s, v18.s[3]
	WORD $0x6fb209f8 // mla v24.4s, v15.4s, v18.s[3]
	// Sub-block 4.
	WORD $0x4e3e1caa // and v10.16b, v5.16b, v30.16b
	WORD $0x6f0c04ab // ushr v11.16b, v5.16b, #4
	WORD $0x4e0a03aa // tbl v10.16b, {v29.16b}, v10.16b
	WORD $0x4e0b03ab // tbl v11.16b, {v29.16b}, v11.16b
	VLD1.P 32(R3), [V12.B16, V13.B16]
	WORD $0x0e2cc14e // smull v14.8h, v10.8b, v12.8b
	WORD $0x4e2cc14f // smull2 v15.8h, v10.16b, v12.16b
	WORD $0x0e2dc17a // smull v26.8h, v11.8b, v13.8b
	WORD $0x4e2dc17b // smull2 v27.8h, v11.16b, v13.16b
	WORD $0x4e6fbdce // addp v14.8h, v14.8h, v15.8h
	WORD $0x4e7bbf4f // addp v15.8h, v26.8h, v27.8h
	WORD $0x4e6029ce // saddlp v14.4s, v14.8h
	WORD $0x4e6029ef // saddlp v15.4s, v15.8h
	WORD $0x6f9301d9 // mla v25.4s, v14.4s, v19.s[0]
	WORD $0x6f9301f8 // mla v24.4s, v15.4s, v19.s[0]
	// Sub-block 5.
	WORD $0x4e3e1cca // and v10.16b, v6.16b, v30.16b
	WORD $0x6f0c04cb // ushr v11.16b, v6.16b, #4
	WORD $0x4e0a03aa // tbl v10.16b, {v29.16b}, v10.16b
	WORD $0x4e0b03ab // tbl v11.16b, {v29.16b}, v11.16b
	VLD1.P 32(R3), [V12.B16, V13.B16]
	WORD $0x0e2cc14e // smull v14.8h, v10.8b, v12.8b
	WORD $0x4e2cc14f // smull2 v15.8h, v10.16b, v12.16b
	WORD $0x0e2dc17a // smull v26.8h, v11.8b, v13.8b
	WORD $0x4e2dc17b // smull2 v27.8h, v11.16b, v13.16b
	WORD $0x4e6fbdce // addp v14.8h, v14.8h, v15.8h
	WORD $0x4e7bbf4f // addp v15.8h, v26.8h, v27.8h
	WORD $0x4e6029ce // saddlp v14.4s, v14.8h
	WORD $0x4e6029ef // saddlp v15.4s, v15.8h
	WORD $0x6fb301d9 // mla v25.4s, v14.4s, v19.s[1]
	WORD $0x6fb301f8 // mla v24.4s, v15.4s, v19.s[1]
	// Sub-block 6.
	WORD $0x4e3e1cea // and v10.16b, v7.16b, v30.16b
	WORD $0x6f0c04eb // ushr v11.16b, v7.16b, #4
	WORD $0x4e0a03aa // tbl v10.16b, {v29.16b}, v10.16b
	WORD $0x4e0b03ab // tbl v11.16b, {v29.16b}, v11.16b
	VLD1.P 32(R3), [V12.B16, V13.B16]
	WORD $0x0e2cc14e // smull v14.8h, v10.8b, v12.8b
	WORD $0x4e2cc14f // smull2 v15.8h, v10.16b, v12.16b
	WORD $0x0e2dc17a // smull v26.8h, v11.8b, v13.8b
	WORD $0x4e2dc17b // smull2 v27.8h, v11.16b, v13.16b
	WORD $0x4e6fbdce // addp v14.8h, v14.8h, v15.8h
	WORD $0x4e7bbf4f // addp v15.8h, v26.8h, v27.8h
	WORD $0x4e6029ce // saddlp v14.4s, v14.8h
	WORD $0x4e6029ef // saddlp v15.4s, v15.8h
	WORD $0x6f9309d9 // mla v25.4s, v14.4s, v19.s[2]
	WORD $0x6f9309f8 // mla v24.4s, v15.4s, v19.s[2]
	// Sub-block 7.
	WORD $0x4e3e1d0a // and v10.16b, v8.16b, v30.16b
	WORD $0x6f0c050b // ushr v11.16b, v8.16b, #4
	WORD $0x4e0a03aa // tbl v10.16b, {v29.16b}, v10.16b
	WORD $0x4e0b03ab // tbl v11.16b, {v29.16b}, v11.16b
	VLD1.P 32(R3), [V12.B16, V13.B16]
	WORD $0x0e2cc14e // smull v14.8h, v10.8b, v12.8b
	WORD $0x4e2cc14f // smull2 v15.8h, v10.16b, v12.16b
	WORD $0x0e2dc17a // smull v26.8h, v11.8b, v13.8b
	WORD $0x4e2dc17b // smull2 v27.8h, v11.16b, v13.16b
	WORD $0x4e6fbdce // addp v14.8h, v14.8h, v15.8h
	WORD $0x4e7bbf4f // addp v15.8h, v26.8h, v27.8h
	WORD $0x4e6029ce // saddlp v14.4s, v14.8h
	WORD $0x4e6029ef // saddlp v15.4s, v15.8h
	WORD $0x6fb309d9 // mla v25.4s, v14.4s, v19.s[3]
	WORD $0x6fb309f8 // mla v24.4s, v15.4s, v19.s[3]
	WORD $0x4e21db39 // scvtf v25.4s, v25.4s
	WORD $0x4e21db18 // scvtf v24.4s, v24.4s
	// acc_l = fma(f16(d)*dy, float32(lane_l), acc_l): lanes 0..3 in v0,
	// 4..7 in v9.
	MOVHU (R0), R4
	FMOVS R4, F27
	WORD $0x1ee2437b // fcvt s27, h27
	FMOVS (R1), F26
	FMULS F26, F27, F27
	WORD $0x4f9b1320 // fmla v0.4s, v25.4s, v27.s[0]
	WORD $0x4f9b1309 // fmla v9.4s, v24.4s, v27.s[0]
	ADD $136, R0
	ADD $292, R1
	SUBS $1, R2
	BNE dotIQ4_XSQ8_KASIMDloop
	// hsum8: (acc0+acc4 + acc2+acc6) + (acc1+acc5 + acc3+acc7).
	WORD $0x4e29d400 // fadd v0.4s, v0.4s, v9.4s
	WORD $0x6e004001 // ext v1.16b, v0.16b, v0.16b, #8
	WORD $0x4e21d400 // fadd v0.4s, v0.4s, v1.4s
	WORD $0x7e30d800 // faddp s0, v0.2s
	FMOVS F0, ret+24(FP)
	RET
