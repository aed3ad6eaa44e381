//go:build amd64 && !noasm && gc

#include "textflag.h"

// func softmaxArgs4AVX512(sc, ex *float32, stride, nv int, scale float32, maxs *[4]float32, rose *[4]uint64)
//
// SoftmaxArgs4 (softmax.go) on the first nv*16 slots of each query. The
// running maximum before each slot comes from a prefix maximum across the
// vector's 16 lanes (four shifts, each VALIGND then VMAXPS) joined with the
// maximum carried from the slots before. VMAXPS a, b keeps b unless a > b,
// which is the loop's "if x > m" for a later a and an earlier b, ties and
// zeros of either sign included, once NaN scores (which never raise the
// maximum) count as -Inf.
//
// Registers: SI query q's scores, DI its arguments, BX the stride in bytes,
// R12 the slots of the whole vectors, CX the current slot (also the rose
// shift), R10 query q's rose bits, R11 the queries left, R8 maxs, R9 rose.
// Z31 scale, Z30 -Inf, Z29 lane indexes 15, Z5 the running maximum
// (broadcast), Z0 x, Z1 its prefix maximum, Z2 a shifted copy, Z3 the
// maxima before each slot, Z4 the arguments.
TEXT ·softmaxArgs4AVX512(SB), NOSPLIT, $0-56
	MOVQ sc+0(FP), SI
	MOVQ ex+8(FP), DI
	MOVQ stride+16(FP), BX
	SHLQ $2, BX
	MOVQ nv+24(FP), R12
	SHLQ $4, R12
	VBROADCASTSS scale+32(FP), Z31
	MOVQ maxs+40(FP), R8
	MOVQ rose+48(FP), R9
	MOVL $0xff800000, AX
	VPBROADCASTD AX, Z30
	MOVL $15, AX
	VPBROADCASTD AX, Z29
	MOVQ $4, R11

argsQuery:
	VBROADCASTSS (R8), Z5
	XORQ R10, R10
	XORQ CX, CX
	MOVQ SI, R13
	MOVQ DI, R14

argsVector:
	VMULPS (R13), Z31, Z0
	VMOVUPS Z0, (R13)
	VCMPPS $3, Z0, Z0, K2
	VMOVAPS Z0, Z1
	VMOVAPS Z30, K2, Z1
	VALIGND $15, Z30, Z1, Z2
	VMAXPS Z2, Z1, Z1
	VALIGND $14, Z30, Z1, Z2
	VMAXPS Z2, Z1, Z1
	VALIGND $12, Z30, Z1, Z2
	VMAXPS Z2, Z1, Z1
	VALIGND $8, Z30, Z1, Z2
	VMAXPS Z2, Z1, Z1
	VMAXPS Z5, Z1, Z1
	VALIGND $15, Z5, Z1, Z3
	VCMPPS $0x1e, Z3, Z0, K3
	VSUBPS Z3, Z0, Z4
	VSUBPS Z0, Z3, K3, Z4
	VMOVUPS Z4, (R14)
	VPERMPS Z1, Z29, Z5
	KMOVW K3, AX
	SHLQ CX, AX
	ORQ AX, R10
	ADDQ $64, R13
	ADDQ $64, R14
	ADDQ $16, CX
	CMPQ CX, R12
	JLT argsVector

	VMOVSS X5, (R8)
	MOVQ R10, (R9)
	ADDQ $4, R8
	ADDQ $8, R9
	ADDQ BX, SI
	ADDQ BX, DI
	DECQ R11
	JNZ argsQuery
	VZEROUPPER
	RET

// func softmaxSteps4AVX512(ex, w, f, raised *float32, stride, nv int, rose *[4]uint64, sums *[4]float32)
//
// SoftmaxSteps4 (softmax.go) on the first nv*16 slots of each query: the
// weights, factors and raised marks sixteen slots at a time under the rose
// bits as masks, then the four sums' chains side by side, slot by slot,
// with the slots where some maximum rose taken apart.
//
// Registers, first part: SI query q's exponentials, DI its weights, DX its
// factors, BX the stride in bytes, R12 the slots of the whole vectors, CX
// the current slot, R10 query q's rose bits, R11 the queries left, R9
// rose, R13 every query's rose bits ORed, R8 raised. Z28 ones. Second
// part: R8, R9, R14, R15 the four queries' exponentials, X0-X3 their sums,
// X15 one, R10-R13 the rose bits (R13 the OR), CX the slot.
TEXT ·softmaxSteps4AVX512(SB), NOSPLIT, $0-64
	MOVQ ex+0(FP), SI
	MOVQ w+8(FP), DI
	MOVQ f+16(FP), DX
	MOVQ stride+32(FP), BX
	SHLQ $2, BX
	MOVQ nv+40(FP), R12
	SHLQ $4, R12
	MOVQ rose+48(FP), R9
	MOVL $0x3f800000, AX
	VPBROADCASTD AX, Z28
	MOVQ (R9), R13
	ORQ 8(R9), R13
	ORQ 16(R9), R13
	ORQ 24(R9), R13
	MOVQ $4, R11

stepsQuery:
	MOVQ (R9), R10
	XORQ CX, CX
	MOVQ SI, R14
	MOVQ DI, R15
	MOVQ DX, R8

stepsVector:
	MOVQ R10, AX
	SHRQ CX, AX
	KMOVW AX, K1
	VMOVUPS (R14), Z0
	VMOVAPS Z0, Z1
	VMOVAPS Z28, K1, Z1
	VMOVAPS Z28, Z2
	VMOVAPS Z0, K1, Z2
	VMOVUPS Z1, (R15)
	VMOVUPS Z2, (R8)
	ADDQ $64, R14
	ADDQ $64, R15
	ADDQ $64, R8
	ADDQ $16, CX
	CMPQ CX, R12
	JLT stepsVector

	ADDQ $8, R9
	ADDQ BX, SI
	ADDQ BX, DI
	ADDQ BX, DX
	DECQ R11
	JNZ stepsQuery

	// raised: ones where any query rose.
	MOVQ raised+24(FP), R8
	XORQ CX, CX

stepsRaised:
	MOVQ R13, AX
	SHRQ CX, AX
	KMOVW AX, K1
	VMOVUPS Z28, K1, (R8)
	ADDQ $64, R8
	ADDQ $16, CX
	CMPQ CX, R12
	JLT stepsRaised

	// The sums, in slot order.
	MOVQ ex+0(FP), R8
	LEAQ (R8)(BX*1), R9
	LEAQ (R9)(BX*1), R14
	LEAQ (R14)(BX*1), R15
	MOVQ rose+48(FP), AX
	MOVQ (AX), R10
	MOVQ 8(AX), R11
	MOVQ 16(AX), DX
	MOVQ 24(AX), DI
	MOVQ sums+56(FP), SI
	VMOVSS (SI), X0
	VMOVSS 4(SI), X1
	VMOVSS 8(SI), X2
	VMOVSS 12(SI), X3
	MOVL $0x3f800000, AX
	VMOVD AX, X15
	XORQ CX, CX

stepsSum:
	BTQ CX, R13
	JCS stepsRose
	VADDSS (R8)(CX*4), X0, X0
	VADDSS (R9)(CX*4), X1, X1
	VADDSS (R14)(CX*4), X2, X2
	VADDSS (R15)(CX*4), X3, X3
	INCQ CX
	CMPQ CX, R12
	JLT stepsSum
	JMP stepsDone

stepsRose:
	BTQ CX, R10
	JCS rose0
	VADDSS (R8)(CX*4), X0, X0
	JMP next0
rose0:
	VMULSS (R8)(CX*4), X0, X0
	VADDSS X15, X0, X0
next0:
	BTQ CX, R11
	JCS rose1
	VADDSS (R9)(CX*4), X1, X1
	JMP next1
rose1:
	VMULSS (R9)(CX*4), X1, X1
	VADDSS X15, X1, X1
next1:
	BTQ CX, DX
	JCS rose2
	VADDSS (R14)(CX*4), X2, X2
	JMP next2
rose2:
	VMULSS (R14)(CX*4), X2, X2
	VADDSS X15, X2, X2
next2:
	BTQ CX, DI
	JCS rose3
	VADDSS (R15)(CX*4), X3, X3
	JMP next3
rose3:
	VMULSS (R15)(CX*4), X3, X3
	VADDSS X15, X3, X3
next3:
	INCQ CX
	CMPQ CX, R12
	JLT stepsSum

stepsDone:
	VMOVSS X0, (SI)
	VMOVSS X1, 4(SI)
	VMOVSS X2, 8(SI)
	VMOVSS X3, 12(SI)
	VZEROUPPER
	RET
