//go:build amd64 && !noasm && gc

#include "textflag.h"

// func madF16AVX2(acc *float32, v *uint16, n int, s float32)
// n is a positive multiple of 8.
TEXT ·madF16AVX2(SB), NOSPLIT, $0-28
	MOVQ acc+0(FP), DI
	MOVQ v+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS s+24(FP), Y0

mad:
	VCVTPH2PS (SI), Y1
	VMOVUPS (DI), Y2
	VFMADD231PS Y0, Y1, Y2
	VCVTPS2PH $0, Y2, X3
	VCVTPH2PS X3, Y2
	VMOVUPS Y2, (DI)
	ADDQ $32, DI
	ADDQ $16, SI
	SUBQ $8, CX
	JNZ mad
	VZEROUPPER
	RET

// func scaleF16AVX2(acc *float32, n int, s float32)
// n is a positive multiple of 8.
TEXT ·scaleF16AVX2(SB), NOSPLIT, $0-20
	MOVQ acc+0(FP), DI
	MOVQ n+8(FP), CX
	VBROADCASTSS s+16(FP), Y0

scale:
	VMULPS (DI), Y0, Y2
	VCVTPS2PH $0, Y2, X3
	VCVTPH2PS X3, Y2
	VMOVUPS Y2, (DI)
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ scale
	VZEROUPPER
	RET

// func toF16AVX2(dst *uint16, src *float32, n int)
// n is a positive multiple of 8.
TEXT ·toF16AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX

conv:
	VMOVUPS (SI), Y1
	VCVTPS2PH $0, Y1, (DI)
	ADDQ $32, SI
	ADDQ $16, DI
	SUBQ $8, CX
	JNZ conv
	VZEROUPPER
	RET

// The per-row steps of dotsF16AVX2 are dotF16AVX2's in dot_amd64.s,
// instruction for instruction (its HALF_DOT16 and HSUM4PD, repeated here
// because macros are local to a file), so each score is bit-identical to
// DotF16's.
#define HALF_DOT16 \
	VMULPS       0(DI), Y1, Y1; \
	VMULPS       32(DI), Y2, Y2; \
	VCVTPS2PD    X1, Y3; \
	VEXTRACTF128 $1, Y1, X1; \
	VCVTPS2PD    X1, Y4; \
	VADDPD       Y3, Y0, Y0; \
	VADDPD       Y4, Y5, Y5; \
	VCVTPS2PD    X2, Y3; \
	VEXTRACTF128 $1, Y2, X2; \
	VCVTPS2PD    X2, Y4; \
	VADDPD       Y3, Y6, Y6; \
	VADDPD       Y4, Y7, Y7

#define HSUM4PD \
	VADDPD       Y5, Y0, Y0; \
	VADDPD       Y7, Y6, Y6; \
	VADDPD       Y6, Y0, Y0; \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPD       X1, X0, X0; \
	VPERMILPD    $1, X0, X1; \
	VADDSD       X1, X0, X0

// func dotsF16AVX2(out *float32, q *float32, k *uint16, stride, n, count int)
// out[j] = float32(Σ f16(k[j·stride + i])·q[i]) for j < count, summed as
// dotF16_amd64 sums: the multiples of 16 in four float64 accumulators,
// then a last 8 one by one in order, as its Go tail does. n > 0 is a
// multiple of 8, stride is in bytes, count > 0.
TEXT ·dotsF16AVX2(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), R8
	MOVQ q+8(FP), R9
	MOVQ k+16(FP), R10
	MOVQ stride+24(FP), R11
	MOVQ n+32(FP), R12
	MOVQ count+40(FP), R13
	MOVQ R12, R14
	ANDQ $8, R14
	SHRQ $4, R12

dotsrow:
	MOVQ   R10, SI
	MOVQ   R9, DI
	MOVQ   R12, CX
	VXORPD Y0, Y0, Y0
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7
	TESTQ  CX, CX
	JZ     dotssum

dotsinner:
	VCVTPH2PS 0(SI), Y1
	VCVTPH2PS 16(SI), Y2
	HALF_DOT16
	ADDQ $32, SI
	ADDQ $64, DI
	DECQ CX
	JNZ  dotsinner

dotssum:
	HSUM4PD
	TESTQ R14, R14
	JZ    dotsstore
	VCVTPH2PS    0(SI), Y1
	VMULPS       0(DI), Y1, Y1
	VCVTPS2PD    X1, Y3
	VEXTRACTF128 $1, Y1, X1
	VCVTPS2PD    X1, Y4
	VADDSD       X3, X0, X0
	VPERMILPD    $1, X3, X2
	VADDSD       X2, X0, X0
	VEXTRACTF128 $1, Y3, X3
	VADDSD       X3, X0, X0
	VPERMILPD    $1, X3, X2
	VADDSD       X2, X0, X0
	VADDSD       X4, X0, X0
	VPERMILPD    $1, X4, X2
	VADDSD       X2, X0, X0
	VEXTRACTF128 $1, Y4, X4
	VADDSD       X4, X0, X0
	VPERMILPD    $1, X4, X2
	VADDSD       X2, X0, X0

dotsstore:
	VCVTSD2SS X0, X0, X0
	VMOVSS    X0, (R8)
	ADDQ $4, R8
	ADDQ R11, R10
	DECQ R13
	JNZ  dotsrow
	VZEROUPPER
	RET

// MADSTEP does one madF16AVX2 step on accumulator register A for the eight
// halves at off(R10), with the weight broadcast in Y0.
#define MADSTEP(off, T, A) \
	VCVTPH2PS   off(R10), T; \
	VFMADD231PS Y0, T, A; \
	VCVTPS2PH   $0, A, X1; \
	VCVTPH2PS   X1, A

// func madsF16AVX2(acc *float32, v *uint16, stride int, w *float32, count, n int)
// For j < count in order: acc[i] = f16(f16(v[j·stride + i])·w[j] + acc[i]),
// each step madF16AVX2's. The accumulators stay in registers over all count
// steps, 64 columns at a time (then 8); each column's sequence of roundings
// is the same as one MadF16 call per step. n > 0 is a multiple of 8, stride
// in bytes, count > 0.
TEXT ·madsF16AVX2(SB), NOSPLIT, $0-48
	MOVQ acc+0(FP), DI
	MOVQ v+8(FP), SI
	MOVQ stride+16(FP), R11
	MOVQ w+24(FP), R9
	MOVQ count+32(FP), R13
	MOVQ n+40(FP), R12

mads64:
	CMPQ R12, $64
	JLT  mads8
	VMOVUPS 0(DI), Y8
	VMOVUPS 32(DI), Y9
	VMOVUPS 64(DI), Y10
	VMOVUPS 96(DI), Y11
	VMOVUPS 128(DI), Y12
	VMOVUPS 160(DI), Y13
	VMOVUPS 192(DI), Y14
	VMOVUPS 224(DI), Y15
	MOVQ SI, R10
	MOVQ R9, BX
	MOVQ R13, CX

mads64step:
	VBROADCASTSS (BX), Y0
	MADSTEP(0, Y2, Y8)
	MADSTEP(16, Y3, Y9)
	MADSTEP(32, Y4, Y10)
	MADSTEP(48, Y5, Y11)
	MADSTEP(64, Y6, Y12)
	MADSTEP(80, Y7, Y13)
	MADSTEP(96, Y2, Y14)
	MADSTEP(112, Y3, Y15)
	ADDQ $4, BX
	ADDQ R11, R10
	DECQ CX
	JNZ  mads64step
	VMOVUPS Y8, 0(DI)
	VMOVUPS Y9, 32(DI)
	VMOVUPS Y10, 64(DI)
	VMOVUPS Y11, 96(DI)
	VMOVUPS Y12, 128(DI)
	VMOVUPS Y13, 160(DI)
	VMOVUPS Y14, 192(DI)
	VMOVUPS Y15, 224(DI)
	ADDQ $256, DI
	ADDQ $128, SI
	SUBQ $64, R12
	JMP  mads64

mads8:
	TESTQ R12, R12
	JZ    madsdone
	VMOVUPS (DI), Y8
	MOVQ SI, R10
	MOVQ R9, BX
	MOVQ R13, CX

mads8step:
	VBROADCASTSS (BX), Y0
	MADSTEP(0, Y2, Y8)
	ADDQ $4, BX
	ADDQ R11, R10
	DECQ CX
	JNZ  mads8step
	VMOVUPS Y8, (DI)
	ADDQ $32, DI
	ADDQ $16, SI
	SUBQ $8, R12
	JMP  mads8

madsdone:
	VZEROUPPER
	RET
