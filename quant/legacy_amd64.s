//go:build amd64 && !noasm && gc

#include "textflag.h"

// AVX2+F16C dot products of Q4_1, Q5_0, Q5_1 and IQ4_NL weight blocks with
// Q8_1 or Q8_0 activation blocks, bit for bit their Go twins in legacy.go:
// each block's integer sum is exact in SIMD and reduced to one int32, and
// the block's float32 scaling is then done with the twin's operations in
// the twin's order, each rounded alone (no FMA), and added to the one
// running sum block after block. Four blocks at a time share the
// horizontal sums (VPHADDD) and do their scaling in the four lanes of an
// XMM register (a lane's VMULPS or VADDPS rounds as the scalar op does)
// before the four ordered adds; the last nb%4 blocks go one at a time.
// Each takes (w, a *byte, nb int) with nb > 0 blocks.
//
// Registers across the loops: X0 the sum; Y15 int16 ones; Y14 bytes 0x0f;
// Y13 bytes 1<<(i%8); Y12 the qh byte picker; Y11 bytes 0x10; Y10 the
// IQ4_NL levels.

// legQhPick<>: byte i of a YMM picks byte i/8 of a broadcast qh dword.
DATA legQhPick<>+0x00(SB)/8, $0x0000000000000000
DATA legQhPick<>+0x08(SB)/8, $0x0101010101010101
DATA legQhPick<>+0x10(SB)/8, $0x0202020202020202
DATA legQhPick<>+0x18(SB)/8, $0x0303030303030303
GLOBL legQhPick<>(SB), RODATA|NOPTR, $32

// legBits<>: byte i is bit i%8.
DATA legBits<>+0x00(SB)/8, $0x8040201008040201
DATA legBits<>+0x08(SB)/8, $0x8040201008040201
DATA legBits<>+0x10(SB)/8, $0x8040201008040201
DATA legBits<>+0x18(SB)/8, $0x8040201008040201
GLOBL legBits<>(SB), RODATA|NOPTR, $32

// legIQ4NL<>: kvaluesIQ4NL in both 128-bit lanes, for VPSHUFB.
DATA legIQ4NL<>+0x00(SB)/8, $0xf6eaddcfbfad9881
DATA legIQ4NL<>+0x08(SB)/8, $0x7159453526190d01
DATA legIQ4NL<>+0x10(SB)/8, $0xf6eaddcfbfad9881
DATA legIQ4NL<>+0x18(SB)/8, $0x7159453526190d01
GLOBL legIQ4NL<>(SB), RODATA|NOPTR, $32

// LEG_CONSTS loads Y11..Y15.
#define LEG_CONSTS \
	MOVL         $0x00010001, AX; \
	VMOVD        AX, X15; \
	VPBROADCASTD X15, Y15; \
	MOVL         $0x0f0f0f0f, AX; \
	VMOVD        AX, X14; \
	VPBROADCASTD X14, Y14; \
	VMOVDQU      legBits<>(SB), Y13; \
	VMOVDQU      legQhPick<>(SB), Y12; \
	MOVL         $0x10101010, AX; \
	VMOVD        AX, X11; \
	VPBROADCASTD X11, Y11

// NIBBLES leaves in the bytes of Y2 the 32 nibbles of the 16 bytes at
// off(SI): low nibbles (values 0..15) in bytes 0..15, high ones after.
#define NIBBLES(off) \
	VMOVDQU     off(SI), X2; \
	VPSRLW      $4, X2, X3; \
	VINSERTI128 $1, X3, Y2, Y2; \
	VPAND       Y14, Y2, Y2

// FIFTH ORs bit i of the qh dword at off(SI) into byte i of Y2 as 0x10.
#define FIFTH(off) \
	VPBROADCASTD off(SI), Y5; \
	VPSHUFB      Y12, Y5, Y5; \
	VPAND        Y13, Y5, Y5; \
	VPCMPEQB     Y13, Y5, Y5; \
	VPAND        Y11, Y5, Y5; \
	VPOR         Y5, Y2, Y2

// HSUMI leaves float32(the sum of Y4's eight int32) in X4's lane 0; the
// sum is exact (at most 32*127*128 in magnitude) and so is its conversion.
#define HSUMI \
	VEXTRACTI128 $1, Y4, X5; \
	VPADDD       X5, X4, X4; \
	VPSHUFD      $0x4e, X4, X5; \
	VPADDD       X5, X4, X4; \
	VPSHUFD      $0xb1, X4, X5; \
	VPADDD       X5, X4, X4; \
	VCVTDQ2PS    X4, X4

// SCALE_DM adds (d*dy)*sumi + m*s to X0 with X4 = float32(sumi): the f16
// pairs (d, m) at 0(SI) and (dy, s) at 0(DI), as dotQ4_1Q8_1Go.
#define SCALE_DM \
	VMOVD     0(SI), X6; \
	VCVTPH2PS X6, X6; \
	VMOVD     0(DI), X7; \
	VCVTPH2PS X7, X7; \
	VMULPS    X7, X6, X6; \
	VMULSS    X6, X4, X4; \
	VMOVSHDUP X6, X6; \
	VADDSS    X6, X4, X4; \
	VADDSS    X4, X0, X0

// SCALE_D adds (d*dy)*sumi to X0 with X4 = float32(sumi): d at 0(SI), dy
// at 0(DI), as dotQ5_0Q8_0Go.
#define SCALE_D \
	VPBROADCASTW 0(SI), X6; \
	VPBROADCASTW 0(DI), X7; \
	VCVTPH2PS    X6, X6; \
	VCVTPH2PS    X7, X7; \
	VMULSS       X7, X6, X6; \
	VMULSS       X6, X4, X4; \
	VADDSS       X4, X0, X0

// HSUM4 leaves in X4 float32(the sums of the eight int32 of Y4, Y6, Y7,
// Y8), one block each, in that order; exact, as HSUMI.
#define HSUM4 \
	VPHADDD      Y6, Y4, Y4; \
	VPHADDD      Y8, Y7, Y7; \
	VPHADDD      Y7, Y4, Y4; \
	VEXTRACTI128 $1, Y4, X5; \
	VPADDD       X5, X4, X4; \
	VCVTDQ2PS    X4, X4

// ADD4 adds X4's lanes 0, 1, 2, 3 to X0, in that order.
#define ADD4 \
	VADDSS    X4, X0, X0; \
	VMOVSHDUP X4, X5; \
	VADDSS    X5, X0, X0; \
	VPSHUFD   $0xaa, X4, X5; \
	VADDSS    X5, X0, X0; \
	VPSHUFD   $0xff, X4, X5; \
	VADDSS    X5, X0, X0

// SCALE4_DM is SCALE_DM for four blocks of wb and ab bytes, X4 holding
// their float32 sums: lane b gets (d*dy)*sumi + m*s, then ADD4.
#define SCALE4_DM(wb, ab) \
	VMOVD     0(SI), X6; \
	VPINSRD   $1, wb(SI), X6, X6; \
	VPINSRD   $2, 2*wb(SI), X6, X6; \
	VPINSRD   $3, 3*wb(SI), X6, X6; \
	VCVTPH2PS X6, Y6; \
	VMOVD     0(DI), X7; \
	VPINSRD   $1, ab(DI), X7, X7; \
	VPINSRD   $2, 2*ab(DI), X7, X7; \
	VPINSRD   $3, 3*ab(DI), X7, X7; \
	VCVTPH2PS X7, Y7; \
	VMULPS    Y7, Y6, Y6; \
	VEXTRACTF128 $1, Y6, X7; \
	VSHUFPS   $0x88, X7, X6, X8; \
	VSHUFPS   $0xdd, X7, X6, X9; \
	VMULPS    X8, X4, X4; \
	VADDPS    X9, X4, X4; \
	ADD4

// SCALE4_D is SCALE_D for four blocks of wb and ab bytes: lane b gets
// (d*dy)*sumi, then ADD4.
#define SCALE4_D(wb, ab) \
	MOVWLZX   0(SI), AX; \
	VMOVD     AX, X6; \
	VPINSRW   $1, wb(SI), X6, X6; \
	VPINSRW   $2, 2*wb(SI), X6, X6; \
	VPINSRW   $3, 3*wb(SI), X6, X6; \
	MOVWLZX   0(DI), AX; \
	VMOVD     AX, X7; \
	VPINSRW   $1, ab(DI), X7, X7; \
	VPINSRW   $2, 2*ab(DI), X7, X7; \
	VPINSRW   $3, 3*ab(DI), X7, X7; \
	VCVTPH2PS X6, X6; \
	VCVTPH2PS X7, X7; \
	VMULPS    X7, X6, X6; \
	VMULPS    X6, X4, X4; \
	ADD4

// The blocks' integer sums, each into out as eight int32 (Y2, Y3, Y5 are
// scratch): the weight block at w(SI), the activation block at a(DI).
// Every activation byte is valid, -128 included, and no int16 pair sum
// saturates:
//
//   - Q4_1, Q5_1: the values (unsigned, at most 31) by int8, pairs within
//     ±2*31*128.
//   - Q5_0: Σ(q-16)*y as Σq*y - 16*Σy, q unsigned, each pair's difference
//     within ±2*16*128.
//   - IQ4_NL: |y| (unsigned; -128 is 128) by level*sign(y); the levels
//     are never -128, and pairs are within ±2*128*127.

#define INT_Q4_1(w, a, out) \
	NIBBLES(w+4); \
	VPMADDUBSW a+4(DI), Y2, out; \
	VPMADDWD   Y15, out, out

#define INT_Q5_1(w, a, out) \
	NIBBLES(w+8); \
	FIFTH(w+4); \
	VPMADDUBSW a+4(DI), Y2, out; \
	VPMADDWD   Y15, out, out

#define INT_Q5_0(w, a, out) \
	NIBBLES(w+6); \
	FIFTH(w+2); \
	VMOVDQU    a+2(DI), Y3; \
	VPMADDUBSW Y3, Y2, out; \
	VPMADDUBSW Y3, Y11, Y5; \
	VPSUBW     Y5, out, out; \
	VPMADDWD   Y15, out, out

#define INT_IQ4_NL(w, a, out) \
	NIBBLES(w+2); \
	VPSHUFB    Y2, Y10, Y2; \
	VMOVDQU    a+2(DI), Y3; \
	VPSIGNB    Y3, Y3, Y5; \
	VPSIGNB    Y3, Y2, Y2; \
	VPMADDUBSW Y2, Y5, out; \
	VPMADDWD   Y15, out, out

// func dotQ4_1Q8_1AVX2(w, a *byte, nb int) float32
TEXT ·dotQ4_1Q8_1AVX2(SB), NOSPLIT, $0-28
	MOVQ   w+0(FP), SI
	MOVQ   a+8(FP), DI
	MOVQ   nb+16(FP), CX
	VXORPS X0, X0, X0
	LEG_CONSTS
	CMPQ CX, $4
	JLT  q41one

q41four:
	INT_Q4_1(0, 0, Y4)
	INT_Q4_1(20, 36, Y6)
	INT_Q4_1(40, 72, Y7)
	INT_Q4_1(60, 108, Y8)
	HSUM4
	SCALE4_DM(20, 36)
	ADDQ $80, SI
	ADDQ $144, DI
	SUBQ $4, CX
	CMPQ CX, $4
	JGE  q41four
	TESTQ CX, CX
	JZ    q41done

q41one:
	INT_Q4_1(0, 0, Y4)
	HSUMI
	SCALE_DM
	ADDQ $20, SI
	ADDQ $36, DI
	DECQ CX
	JNZ  q41one

q41done:
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// func dotQ5_1Q8_1AVX2(w, a *byte, nb int) float32
TEXT ·dotQ5_1Q8_1AVX2(SB), NOSPLIT, $0-28
	MOVQ   w+0(FP), SI
	MOVQ   a+8(FP), DI
	MOVQ   nb+16(FP), CX
	VXORPS X0, X0, X0
	LEG_CONSTS
	CMPQ CX, $4
	JLT  q51one

q51four:
	INT_Q5_1(0, 0, Y4)
	INT_Q5_1(24, 36, Y6)
	INT_Q5_1(48, 72, Y7)
	INT_Q5_1(72, 108, Y8)
	HSUM4
	SCALE4_DM(24, 36)
	ADDQ $96, SI
	ADDQ $144, DI
	SUBQ $4, CX
	CMPQ CX, $4
	JGE  q51four
	TESTQ CX, CX
	JZ    q51done

q51one:
	INT_Q5_1(0, 0, Y4)
	HSUMI
	SCALE_DM
	ADDQ $24, SI
	ADDQ $36, DI
	DECQ CX
	JNZ  q51one

q51done:
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// func dotQ5_0Q8_0AVX2(w, a *byte, nb int) float32
TEXT ·dotQ5_0Q8_0AVX2(SB), NOSPLIT, $0-28
	MOVQ   w+0(FP), SI
	MOVQ   a+8(FP), DI
	MOVQ   nb+16(FP), CX
	VXORPS X0, X0, X0
	LEG_CONSTS
	CMPQ CX, $4
	JLT  q50one

q50four:
	INT_Q5_0(0, 0, Y4)
	INT_Q5_0(22, 34, Y6)
	INT_Q5_0(44, 68, Y7)
	INT_Q5_0(66, 102, Y8)
	HSUM4
	SCALE4_D(22, 34)
	ADDQ $88, SI
	ADDQ $136, DI
	SUBQ $4, CX
	CMPQ CX, $4
	JGE  q50four
	TESTQ CX, CX
	JZ    q50done

q50one:
	INT_Q5_0(0, 0, Y4)
	HSUMI
	SCALE_D
	ADDQ $22, SI
	ADDQ $34, DI
	DECQ CX
	JNZ  q50one

q50done:
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// func dotIQ4_NLQ8_0AVX2(w, a *byte, nb int) float32
TEXT ·dotIQ4_NLQ8_0AVX2(SB), NOSPLIT, $0-28
	MOVQ   w+0(FP), SI
	MOVQ   a+8(FP), DI
	MOVQ   nb+16(FP), CX
	VXORPS X0, X0, X0
	LEG_CONSTS
	VMOVDQU legIQ4NL<>(SB), Y10
	CMPQ CX, $4
	JLT  iq4one

iq4four:
	INT_IQ4_NL(0, 0, Y4)
	INT_IQ4_NL(18, 34, Y6)
	INT_IQ4_NL(36, 68, Y7)
	INT_IQ4_NL(54, 102, Y8)
	HSUM4
	SCALE4_D(18, 34)
	ADDQ $72, SI
	ADDQ $136, DI
	SUBQ $4, CX
	CMPQ CX, $4
	JGE  iq4four
	TESTQ CX, CX
	JZ    iq4done

iq4one:
	INT_IQ4_NL(0, 0, Y4)
	HSUMI
	SCALE_D
	ADDQ $18, SI
	ADDQ $34, DI
	DECQ CX
	JNZ  iq4one

iq4done:
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET
