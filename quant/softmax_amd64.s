//go:build amd64 && !noasm && gc

#include "textflag.h"

// func softmaxArgsAVX512(sc, ex *float32, stride, nq, nv int, scale float32, maxs *float32, rose *uint64)
//
// SoftmaxArgs (softmax.go) on the first nv*16 slots of each of nq queries. The
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
TEXT ·softmaxArgsAVX512(SB), NOSPLIT, $0-64
	MOVQ sc+0(FP), SI
	MOVQ ex+8(FP), DI
	MOVQ stride+16(FP), BX
	SHLQ $2, BX
	MOVQ nq+24(FP), R11
	MOVQ nv+32(FP), R12
	SHLQ $4, R12
	VBROADCASTSS scale+40(FP), Z31
	MOVQ maxs+48(FP), R8
	MOVQ rose+56(FP), R9
	MOVL $0xff800000, AX
	VPBROADCASTD AX, Z30
	MOVL $15, AX
	VPBROADCASTD AX, Z29

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

// func softmaxMarksAVX512(ex, w, f, raised *float32, stride, nq, nv int, rose *uint64, any uint64)
//
// SoftmaxSteps (softmax.go) but for the sums, on the first nv*16 slots of
// each of nq queries: the weights, factors and raised marks sixteen slots
// at a time under the rose bits as masks; any is every query's rose bits
// ORed.
//
// Registers: SI query q's exponentials, DI its weights, DX its factors, BX
// the stride in bytes, R12 the slots of the whole vectors, CX the current
// slot, R10 query q's rose bits, R11 the queries left, R9 rose, R13 any, R8
// raised. Z28 ones.
TEXT ·softmaxMarksAVX512(SB), NOSPLIT, $0-72
	MOVQ ex+0(FP), SI
	MOVQ w+8(FP), DI
	MOVQ f+16(FP), DX
	MOVQ stride+32(FP), BX
	SHLQ $2, BX
	MOVQ nq+40(FP), R11
	MOVQ nv+48(FP), R12
	SHLQ $4, R12
	MOVQ rose+56(FP), R9
	MOVQ any+64(FP), R13
	MOVL $0x3f800000, AX
	VPBROADCASTD AX, Z28

marksQuery:
	MOVQ (R9), R10
	XORQ CX, CX
	MOVQ SI, R14
	MOVQ DI, R15
	MOVQ DX, R8

marksVector:
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
	JLT marksVector

	ADDQ $8, R9
	ADDQ BX, SI
	ADDQ BX, DI
	ADDQ BX, DX
	DECQ R11
	JNZ marksQuery

	// raised: ones where any query rose.
	MOVQ raised+24(FP), R8
	XORQ CX, CX

marksRaised:
	MOVQ R13, AX
	SHRQ CX, AX
	KMOVW AX, K1
	VMOVUPS Z28, K1, (R8)
	ADDQ $64, R8
	ADDQ $16, CX
	CMPQ CX, R12
	JLT marksRaised
	VZEROUPPER
	RET

// func softmaxSums4(e0, e1, e2, e3 *float32, n int, rose *[4]uint64, sums *[4]float32)
//
// SoftmaxSteps's sums (softmax.go) of four queries (exponentials at e0-e3)
// over slots [0, n): their chains side by side, slot by slot, in scalar
// VEX instructions with FMA; a slot where some maximum rose goes
// query by query.
//
// Registers: R8, R9, R14, R15 the four queries' exponentials, X0-X3 their
// sums, X15 one, R10, R11, DX, DI their rose bits and R13 the four ORed, R12
// n, CX the slot, SI sums.
TEXT ·softmaxSums4(SB), NOSPLIT, $0-56
	MOVQ e0+0(FP), R8
	MOVQ e1+8(FP), R9
	MOVQ e2+16(FP), R14
	MOVQ e3+24(FP), R15
	MOVQ n+32(FP), R12
	MOVQ rose+40(FP), AX
	MOVQ (AX), R10
	MOVQ 8(AX), R11
	MOVQ 16(AX), DX
	MOVQ 24(AX), DI
	MOVQ R10, R13
	ORQ R11, R13
	ORQ DX, R13
	ORQ DI, R13
	MOVQ sums+48(FP), SI
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
	VFMADD132SS (R8)(CX*4), X15, X0
next0:
	BTQ CX, R11
	JCS rose1
	VADDSS (R9)(CX*4), X1, X1
	JMP next1
rose1:
	VFMADD132SS (R9)(CX*4), X15, X1
next1:
	BTQ CX, DX
	JCS rose2
	VADDSS (R14)(CX*4), X2, X2
	JMP next2
rose2:
	VFMADD132SS (R14)(CX*4), X15, X2
next2:
	BTQ CX, DI
	JCS rose3
	VADDSS (R15)(CX*4), X3, X3
	JMP next3
rose3:
	VFMADD132SS (R15)(CX*4), X15, X3
next3:
	INCQ CX
	CMPQ CX, R12
	JLT stepsSum

stepsDone:
	VMOVSS X0, (SI)
	VMOVSS X1, 4(SI)
	VMOVSS X2, 8(SI)
	VMOVSS X3, 12(SI)
	RET

// Lane indexes for VPERMPS: each lane from the one 1, 2 or 4 below (lanes
// below that take lane 0, then replaced), all lanes from lane 7; and each
// lane's bit, to turn 8 rose bits into lane masks.
DATA softmaxIdx<>+0(SB)/4, $0
DATA softmaxIdx<>+4(SB)/4, $0
DATA softmaxIdx<>+8(SB)/4, $1
DATA softmaxIdx<>+12(SB)/4, $2
DATA softmaxIdx<>+16(SB)/4, $3
DATA softmaxIdx<>+20(SB)/4, $4
DATA softmaxIdx<>+24(SB)/4, $5
DATA softmaxIdx<>+28(SB)/4, $6
DATA softmaxIdx<>+32(SB)/4, $0
DATA softmaxIdx<>+36(SB)/4, $0
DATA softmaxIdx<>+40(SB)/4, $0
DATA softmaxIdx<>+44(SB)/4, $1
DATA softmaxIdx<>+48(SB)/4, $2
DATA softmaxIdx<>+52(SB)/4, $3
DATA softmaxIdx<>+56(SB)/4, $4
DATA softmaxIdx<>+60(SB)/4, $5
DATA softmaxIdx<>+64(SB)/4, $0
DATA softmaxIdx<>+68(SB)/4, $0
DATA softmaxIdx<>+72(SB)/4, $0
DATA softmaxIdx<>+76(SB)/4, $0
DATA softmaxIdx<>+80(SB)/4, $0
DATA softmaxIdx<>+84(SB)/4, $1
DATA softmaxIdx<>+88(SB)/4, $2
DATA softmaxIdx<>+92(SB)/4, $3
DATA softmaxIdx<>+96(SB)/4, $7
DATA softmaxIdx<>+100(SB)/4, $7
DATA softmaxIdx<>+104(SB)/4, $7
DATA softmaxIdx<>+108(SB)/4, $7
DATA softmaxIdx<>+112(SB)/4, $7
DATA softmaxIdx<>+116(SB)/4, $7
DATA softmaxIdx<>+120(SB)/4, $7
DATA softmaxIdx<>+124(SB)/4, $7
DATA softmaxIdx<>+128(SB)/4, $1
DATA softmaxIdx<>+132(SB)/4, $2
DATA softmaxIdx<>+136(SB)/4, $4
DATA softmaxIdx<>+140(SB)/4, $8
DATA softmaxIdx<>+144(SB)/4, $16
DATA softmaxIdx<>+148(SB)/4, $32
DATA softmaxIdx<>+152(SB)/4, $64
DATA softmaxIdx<>+156(SB)/4, $128
GLOBL softmaxIdx<>(SB), RODATA|NOPTR, $160

// func softmaxArgsAVX2(sc, ex *float32, stride, nq, nv int, scale float32, maxs *float32, rose *uint64)
//
// softmaxArgsAVX512 on eight slots a vector: the prefix maximum by three
// shifts (VPERMPS, then VBLENDPS puts -Inf in the lanes shifted in), the
// rose lanes as compare masks, their bits by VMOVMSKPS.
//
// Registers: as softmaxArgsAVX512, with Y15 scale, Y14 -Inf, Y13 Y12 Y11
// the shift indexes, Y10 the index 7s, Y5 the running maximum, Y6 and Y4
// masks.
TEXT ·softmaxArgsAVX2(SB), NOSPLIT, $0-64
	MOVQ sc+0(FP), SI
	MOVQ ex+8(FP), DI
	MOVQ stride+16(FP), BX
	SHLQ $2, BX
	MOVQ nq+24(FP), R11
	MOVQ nv+32(FP), R12
	SHLQ $3, R12
	VBROADCASTSS scale+40(FP), Y15
	MOVQ maxs+48(FP), R8
	MOVQ rose+56(FP), R9
	MOVL $0xff800000, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14
	VMOVDQU softmaxIdx<>+0(SB), Y13
	VMOVDQU softmaxIdx<>+32(SB), Y12
	VMOVDQU softmaxIdx<>+64(SB), Y11
	VMOVDQU softmaxIdx<>+96(SB), Y10

args2Query:
	VBROADCASTSS (R8), Y5
	XORQ R10, R10
	XORQ CX, CX
	MOVQ SI, R13
	MOVQ DI, R14

args2Vector:
	VMULPS (R13), Y15, Y0
	VMOVUPS Y0, (R13)
	VCMPPS $3, Y0, Y0, Y6
	VBLENDVPS Y6, Y14, Y0, Y1
	VPERMPS Y1, Y13, Y2
	VBLENDPS $0x01, Y14, Y2, Y2
	VMAXPS Y2, Y1, Y1
	VPERMPS Y1, Y12, Y2
	VBLENDPS $0x03, Y14, Y2, Y2
	VMAXPS Y2, Y1, Y1
	VPERMPS Y1, Y11, Y2
	VBLENDPS $0x0f, Y14, Y2, Y2
	VMAXPS Y2, Y1, Y1
	VMAXPS Y5, Y1, Y1
	VPERMPS Y1, Y13, Y3
	VBLENDPS $0x01, Y5, Y3, Y3
	VCMPPS $0x1e, Y3, Y0, Y4
	VSUBPS Y3, Y0, Y7
	VSUBPS Y0, Y3, Y8
	VBLENDVPS Y4, Y8, Y7, Y7
	VMOVUPS Y7, (R14)
	VPERMPS Y1, Y10, Y5
	VMOVMSKPS Y4, AX
	SHLQ CX, AX
	ORQ AX, R10
	ADDQ $32, R13
	ADDQ $32, R14
	ADDQ $8, CX
	CMPQ CX, R12
	JLT args2Vector

	VMOVSS X5, (R8)
	MOVQ R10, (R9)
	ADDQ $4, R8
	ADDQ $8, R9
	ADDQ BX, SI
	ADDQ BX, DI
	DECQ R11
	JNZ args2Query
	VZEROUPPER
	RET

// func softmaxMarksAVX2(ex, w, f, raised *float32, stride, nq, nv int, rose *uint64, any uint64)
//
// softmaxMarksAVX512 on eight slots a vector, each vector's rose bits
// turned into lane masks (broadcast, AND with each lane's bit, compare).
//
// Registers: as softmaxMarksAVX512, with Y15 ones, Y14 the lanes' bits,
// Y3 the mask.
TEXT ·softmaxMarksAVX2(SB), NOSPLIT, $0-72
	MOVQ ex+0(FP), SI
	MOVQ w+8(FP), DI
	MOVQ f+16(FP), DX
	MOVQ stride+32(FP), BX
	SHLQ $2, BX
	MOVQ nq+40(FP), R11
	MOVQ nv+48(FP), R12
	SHLQ $3, R12
	MOVQ rose+56(FP), R9
	MOVQ any+64(FP), R13
	MOVL $0x3f800000, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	VMOVDQU softmaxIdx<>+128(SB), Y14

marks2Query:
	MOVQ (R9), R10
	XORQ CX, CX
	MOVQ SI, R14
	MOVQ DI, R15
	MOVQ DX, R8

marks2Vector:
	MOVQ R10, AX
	SHRQ CX, AX
	VMOVD AX, X3
	VPBROADCASTD X3, Y3
	VPAND Y14, Y3, Y3
	VPCMPEQD Y14, Y3, Y3
	VMOVUPS (R14), Y0
	VBLENDVPS Y3, Y15, Y0, Y1
	VBLENDVPS Y3, Y0, Y15, Y2
	VMOVUPS Y1, (R15)
	VMOVUPS Y2, (R8)
	ADDQ $32, R14
	ADDQ $32, R15
	ADDQ $32, R8
	ADDQ $8, CX
	CMPQ CX, R12
	JLT marks2Vector

	ADDQ $8, R9
	ADDQ BX, SI
	ADDQ BX, DI
	ADDQ BX, DX
	DECQ R11
	JNZ marks2Query

	MOVQ raised+24(FP), R8
	XORQ CX, CX

marks2Raised:
	MOVQ R13, AX
	SHRQ CX, AX
	VMOVD AX, X3
	VPBROADCASTD X3, Y3
	VPAND Y14, Y3, Y3
	VPCMPEQD Y14, Y3, Y3
	VMASKMOVPS Y15, Y3, (R8)
	ADDQ $32, R8
	ADDQ $8, CX
	CMPQ CX, R12
	JLT marks2Raised
	VZEROUPPER
	RET
