//go:build amd64 && !noasm && gc

#include "textflag.h"

// AVX2+F16C dot products of Q4_1, Q5_0, Q5_1 and IQ4_NL weight blocks with
// Q8_1 or Q8_0 activation blocks, bit for bit their Go twins in legacy.go:
// each block's integer sum is exact in SIMD and reduced to one int32, and
// the block's float32 scaling is then done in scalar lanes with the twin's
// operations in the twin's order, each rounded alone (no FMA), and added to
// the one running sum. Each takes (w, a *byte, nb int) with nb > 0 blocks.
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

// legIQ4NL<>: iq4nlValues in both 128-bit lanes, for VPSHUFB.
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

// func dotQ4_1Q8_1AVX2(w, a *byte, nb int) float32
TEXT ·dotQ4_1Q8_1AVX2(SB), NOSPLIT, $0-28
	MOVQ   w+0(FP), SI
	MOVQ   a+8(FP), DI
	MOVQ   nb+16(FP), CX
	VXORPS X0, X0, X0
	LEG_CONSTS

q41loop:
	NIBBLES(4)
	// Nibbles (unsigned) by int8: pair sums within ±2*15*128, no
	// saturation.
	VPMADDUBSW 4(DI), Y2, Y4
	VPMADDWD   Y15, Y4, Y4
	HSUMI
	SCALE_DM
	ADDQ $20, SI
	ADDQ $36, DI
	DECQ CX
	JNZ  q41loop
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

q51loop:
	NIBBLES(8)
	FIFTH(4)
	// 5-bit values (unsigned) by int8: within ±2*31*128.
	VPMADDUBSW 4(DI), Y2, Y4
	VPMADDWD   Y15, Y4, Y4
	HSUMI
	SCALE_DM
	ADDQ $24, SI
	ADDQ $36, DI
	DECQ CX
	JNZ  q51loop
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

q50loop:
	NIBBLES(6)
	FIFTH(2)
	// Σ(q-16)*y as Σq*y - 16*Σy in int16 pairs: q unsigned keeps every
	// activation byte valid, and each pair's difference is within
	// ±2*16*128.
	VMOVDQU    2(DI), Y3
	VPMADDUBSW Y3, Y2, Y4
	VPMADDUBSW Y3, Y11, Y5
	VPSUBW     Y5, Y4, Y4
	VPMADDWD   Y15, Y4, Y4
	HSUMI
	SCALE_D
	ADDQ $22, SI
	ADDQ $34, DI
	DECQ CX
	JNZ  q50loop
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// func dotIQ4_NLQ8_0AVX2(w, a *byte, nb int) float32
TEXT ·dotIQ4_NLQ8_0AVX2(SB), NOSPLIT, $0-28
	MOVQ    w+0(FP), SI
	MOVQ    a+8(FP), DI
	MOVQ    nb+16(FP), CX
	VXORPS  X0, X0, X0
	LEG_CONSTS
	VMOVDQU legIQ4NL<>(SB), Y10

iq4loop:
	NIBBLES(2)
	VPSHUFB Y2, Y10, Y2 // the levels, int8 in -127..113
	// |y| (unsigned; -128 is 128) by level*sign(y): the levels are
	// never -128, so every activation byte is valid, and pair sums are
	// within ±2*128*127.
	VMOVDQU    2(DI), Y3
	VPSIGNB    Y3, Y3, Y4
	VPSIGNB    Y3, Y2, Y5
	VPMADDUBSW Y5, Y4, Y4
	VPMADDWD   Y15, Y4, Y4
	HSUMI
	SCALE_D
	ADDQ $18, SI
	ADDQ $34, DI
	DECQ CX
	JNZ  iq4loop
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET
