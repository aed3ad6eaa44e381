//go:build amd64 && !noasm && gc

#include "textflag.h"

// AVX2+FMA+F16C dot products of Q4_1, Q5_0, Q5_1 and IQ4_NL weight blocks
// with Q8_1 or Q8_0 activation blocks, bit for bit their Go twins in
// legacy.go, whose float order is llama.cpp's x86 one: each block's
// integer products are summed exactly into eight int32 lanes of four
// values (VPMADDUBSW, VPMADDWD), then
//
//   - Q4_1, Q5_0, Q5_1: the lanes, converted exactly, go into one YMM of
//     eight float32 accumulators by one VFMADD231PS a block with the
//     block's d*dy (exact), and the accumulator is summed at the end in
//     hsum_float_8's order (HSUM8); Q4_1 and Q5_1 add m*s (exact) to a
//     scalar summs block after block, and summs to the sum last.
//   - IQ4_NL: the lanes are summed exactly (HSUMI, HSUM4) and go into one
//     scalar by one VFMADD231SS a block, in block order.
//
// Each takes (w, a *byte, nb int) with nb > 0 blocks.
//
// Registers across the loops: Y0 the accumulator (X0 for IQ4_NL); X1
// summs; Y15 int16 ones; Y14 bytes 0x0f; Y13 bytes 1<<(i%8); Y12 the qh
// byte picker; Y11 bytes 0x10; Y10 the IQ4_NL levels.

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

// HSUM4 leaves in X4 float32(the sums of the eight int32 of Y4, Y6, Y7,
// Y8), one block each, in that order; exact, as HSUMI.
#define HSUM4 \
	VPHADDD      Y6, Y4, Y4; \
	VPHADDD      Y8, Y7, Y7; \
	VPHADDD      Y7, Y4, Y4; \
	VEXTRACTI128 $1, Y4, X5; \
	VPADDD       X5, X4, X4; \
	VCVTDQ2PS    X4, X4

// HSUM8 leaves in X0's lane 0 the sum of Y0's eight float32 lanes in
// hsum_float_8's order: r_i = acc[i+4]+acc[i], then (r0+r2) + (r1+r3).
#define HSUM8 \
	VEXTRACTF128 $1, Y0, X2; \
	VADDPS       X0, X2, X0; \
	VPSHUFD      $0x4e, X0, X2; \
	VADDPS       X2, X0, X0; \
	VMOVSHDUP    X0, X2; \
	VADDSS       X2, X0, X0

// FMA_DM adds the float32 lanes of Y4 times d*dy to Y0 and m*s to X1: the
// f16 pairs (d, m) at 0(SI) and (dy, s) at 0(DI), as dotQ4_1Q8_1Go.
#define FMA_DM \
	VCVTDQ2PS    Y4, Y4; \
	VMOVD        0(SI), X6; \
	VCVTPH2PS    X6, X6; \
	VMOVD        0(DI), X7; \
	VCVTPH2PS    X7, X7; \
	VMULPS       X7, X6, X6; \
	VBROADCASTSS X6, Y7; \
	VFMADD231PS  Y4, Y7, Y0; \
	VMOVSHDUP    X6, X6; \
	VADDSS       X6, X1, X1

// FMA_D adds the int32 lanes of Y4 times d*dy to Y0: d at 0(SI), dy at
// 0(DI), as dotQ5_0Q8_0Go.
#define FMA_D \
	VCVTDQ2PS    Y4, Y4; \
	VPBROADCASTW 0(SI), X6; \
	VPBROADCASTW 0(DI), X7; \
	VCVTPH2PS    X6, Y6; \
	VCVTPH2PS    X7, Y7; \
	VMULPS       Y7, Y6, Y6; \
	VFMADD231PS  Y4, Y6, Y0

// FMA_S adds X4's lane 0 times d*dy to X0: d at 0(SI), dy at 0(DI).
#define FMA_S \
	VPBROADCASTW 0(SI), X6; \
	VPBROADCASTW 0(DI), X7; \
	VCVTPH2PS    X6, X6; \
	VCVTPH2PS    X7, X7; \
	VMULSS       X7, X6, X6; \
	VFMADD231SS  X4, X6, X0

// FMA4_S adds X4's lanes 0..3 (four blocks of wb and ab bytes) times each
// block's d*dy to X0, in that order.
#define FMA4_S(wb, ab) \
	MOVWLZX     0(SI), AX; \
	VMOVD       AX, X6; \
	VPINSRW     $1, wb(SI), X6, X6; \
	VPINSRW     $2, 2*wb(SI), X6, X6; \
	VPINSRW     $3, 3*wb(SI), X6, X6; \
	MOVWLZX     0(DI), AX; \
	VMOVD       AX, X7; \
	VPINSRW     $1, ab(DI), X7, X7; \
	VPINSRW     $2, 2*ab(DI), X7, X7; \
	VPINSRW     $3, 3*ab(DI), X7, X7; \
	VCVTPH2PS   X6, X6; \
	VCVTPH2PS   X7, X7; \
	VMULPS      X7, X6, X6; \
	VFMADD231SS X4, X6, X0; \
	VMOVSHDUP   X4, X5; \
	VMOVSHDUP   X6, X7; \
	VFMADD231SS X5, X7, X0; \
	VPSHUFD     $0xaa, X4, X5; \
	VPSHUFD     $0xaa, X6, X7; \
	VFMADD231SS X5, X7, X0; \
	VPSHUFD     $0xff, X4, X5; \
	VPSHUFD     $0xff, X6, X7; \
	VFMADD231SS X5, X7, X0

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

// The batched kernels (gemmLegacy, legacy_amd64.go): one weight row of nb
// blocks against four activation rows (at DI, DI+R8, DI+2*R8, DI+AX, AX =
// 3*R8), each block decoded once into Y2 and applied to the four. Each
// output keeps its own accumulators (Y0, Y1, Y4, Y6 for Q4_1, Q5_0,
// Q5_1, with lane 2i+1 of the summs Y10 for Q4_1 and Q5_1; lane i of X0
// for IQ4_NL) and sees the row dot's operations with the row dot's
// operands, in its order: the outputs are the row dots' bits. Lane-wise
// ops on four outputs at once round each lane as the row dot's scalar op.
// The rows' d*dy of a block are computed together and kept on the stack,
// one VBROADCASTSS a row.
//
// Each takes (w, a *byte, arb, nb int, y *float32, ys int), nb > 0, and
// stores output i at y + 4*i*ys.

// LEG4_ARGS (after LEG_CONSTS, which uses AX) loads the arguments: SI w,
// DI a, R8 arb, AX 3*arb, CX nb, DX y, R9 4*ys, R10 12*ys.
#define LEG4_ARGS \
	MOVQ w+0(FP), SI; \
	MOVQ a+8(FP), DI; \
	MOVQ arb+16(FP), R8; \
	LEAQ (R8)(R8*2), AX; \
	MOVQ nb+24(FP), CX; \
	MOVQ y+32(FP), DX; \
	MOVQ ys+40(FP), R9; \
	SHLQ $2, R9; \
	LEAQ (R9)(R9*2), R10

// G4_SC1 (Q4_1, Q5_1) computes, for the four rows at once, d*dy_i and
// m*s_i into lanes 2i and 2i+1 of Y3 as FMA_DM's VMULPS (the f16 pairs
// (d, m) at 0(SI) and (dy_i, s_i) at 0(row i)), adds them to the summs Y10
// (lane 2i+1 is row i's; the even lanes, sums of d*dy, go unread) and
// keeps Y3 at 0(SP): row i's d*dy at 8i(SP).
#define G4_SC1 \
	VPBROADCASTD 0(SI), X9; \
	VCVTPH2PS    X9, Y9; \
	VMOVD        0(DI), X3; \
	VPINSRD      $1, 0(DI)(R8*1), X3, X3; \
	VPINSRD      $2, 0(DI)(R8*2), X3, X3; \
	VPINSRD      $3, 0(DI)(AX*1), X3, X3; \
	VCVTPH2PS    X3, Y3; \
	VMULPS       Y3, Y9, Y3; \
	VADDPS       Y3, Y10, Y10; \
	VMOVUPS      Y3, 0(SP)

// G4_SC0 (Q5_0) keeps the four rows' d*dy_i (d at 0(SI), dy_i at
// 0(row i)), as FMA_D's VMULPS, at 4i(SP).
#define G4_SC0 \
	VPBROADCASTW 0(SI), X9; \
	VCVTPH2PS    X9, X9; \
	MOVWLZX      0(DI), BX; \
	VMOVD        BX, X3; \
	VPINSRW      $1, 0(DI)(R8*1), X3, X3; \
	VPINSRW      $2, 0(DI)(R8*2), X3, X3; \
	VPINSRW      $3, 0(DI)(AX*1), X3, X3; \
	VCVTPH2PS    X3, X3; \
	VMULPS       X3, X9, X3; \
	VMOVUPS      X3, 0(SP)

// G4_FMA adds the int32 lanes of Y7 times the row's d*dy (at sc) to acc,
// as FMA_DM and FMA_D.
#define G4_FMA(sc, acc) \
	VCVTDQ2PS    Y7, Y7; \
	VBROADCASTSS sc, Y8; \
	VFMADD231PS  Y7, Y8, acc

// G4_ROW1 (Q4_1, Q5_1) adds one row's block (activations at q) to acc.
#define G4_ROW1(q, sc, acc) \
	VPMADDUBSW q, Y2, Y7; \
	VPMADDWD   Y15, Y7, Y7; \
	G4_FMA(sc, acc)

// G4_ROW0 (Q5_0) adds one row's block (activations at q) to acc.
#define G4_ROW0(q, sc, acc) \
	VMOVDQU    q, Y10; \
	VPMADDUBSW Y10, Y2, Y7; \
	VPMADDUBSW Y10, Y11, Y5; \
	VPSUBW     Y5, Y7, Y7; \
	VPMADDWD   Y15, Y7, Y7; \
	G4_FMA(sc, acc)

// G4_ROWS adds the decoded block in Y2 to the four rows' accumulators
// with row macro ROW, the activations at qoff of each row block and row
// i's d*dy at ss*i(SP).
#define G4_ROWS(ROW, qoff, ss) \
	ROW(qoff(DI), 0(SP), Y0); \
	ROW(qoff(DI)(R8*1), ss(SP), Y1); \
	ROW(qoff(DI)(R8*2), (2*ss)(SP), Y4); \
	ROW(qoff(DI)(AX*1), (3*ss)(SP), Y6)

// HSUM8R is HSUM8 on acc (y and x its YMM and XMM names), tmp scratch.
#define HSUM8R(yacc, xacc, tmp) \
	VEXTRACTF128 $1, yacc, tmp; \
	VADDPS       xacc, tmp, xacc; \
	VPSHUFD      $0x4e, xacc, tmp; \
	VADDPS       tmp, xacc, xacc; \
	VMOVSHDUP    xacc, tmp; \
	VADDSS       tmp, xacc, xacc

// G4_STORE4 stores the lanes of x at y + 4*i*ys.
#define G4_STORE4(x) \
	VMOVSS    x, (DX); \
	VMOVSHDUP x, X5; \
	VMOVSS    X5, (DX)(R9*1); \
	VPSHUFD   $0xaa, x, X5; \
	VMOVSS    X5, (DX)(R9*2); \
	VPSHUFD   $0xff, x, X5; \
	VMOVSS    X5, (DX)(R10*1)

// G4_END sums the four accumulators, adds row i's summs (lane 2i+1 of
// Y10) to output i (Q4_1, Q5_1) and stores them.
#define G4_END \
	HSUM8R(Y0, X0, X5); \
	HSUM8R(Y1, X1, X5); \
	HSUM8R(Y4, X4, X5); \
	HSUM8R(Y6, X6, X5); \
	VEXTRACTF128 $1, Y10, X3; \
	VMOVSHDUP    X10, X5; \
	VADDSS       X5, X0, X0; \
	VPSHUFD      $0xff, X10, X5; \
	VADDSS       X5, X1, X1; \
	VMOVSHDUP    X3, X5; \
	VADDSS       X5, X4, X4; \
	VPSHUFD      $0xff, X3, X5; \
	VADDSS       X5, X6, X6; \
	VMOVSS       X0, (DX); \
	VMOVSS       X1, (DX)(R9*1); \
	VMOVSS       X4, (DX)(R9*2); \
	VMOVSS       X6, (DX)(R10*1)

#define G4_ZERO \
	VXORPS Y0, Y0, Y0; \
	VXORPS Y1, Y1, Y1; \
	VXORPS Y4, Y4, Y4; \
	VXORPS Y6, Y6, Y6; \
	VXORPS Y10, Y10, Y10

// G4_IQ4ROW leaves in out one row's int32 pair sums (activations at q)
// against the levels in Y2, as INT_IQ4_NL.
#define G4_IQ4ROW(q, out) \
	VMOVDQU    q, Y3; \
	VPSIGNB    Y3, Y3, Y5; \
	VPSIGNB    Y3, Y2, Y9; \
	VPMADDUBSW Y9, Y5, out; \
	VPMADDWD   Y15, out, out

// func dotQ4_1Q8_1AVX2(w, a *byte, nb int) float32
TEXT ·dotQ4_1Q8_1AVX2(SB), NOSPLIT, $0-28
	MOVQ   w+0(FP), SI
	MOVQ   a+8(FP), DI
	MOVQ   nb+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS X1, X1, X1
	LEG_CONSTS

q41loop:
	INT_Q4_1(0, 0, Y4)
	FMA_DM
	ADDQ $20, SI
	ADDQ $36, DI
	DECQ CX
	JNZ  q41loop

	HSUM8
	VADDSS X1, X0, X0
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// func dotQ5_1Q8_1AVX2(w, a *byte, nb int) float32
TEXT ·dotQ5_1Q8_1AVX2(SB), NOSPLIT, $0-28
	MOVQ   w+0(FP), SI
	MOVQ   a+8(FP), DI
	MOVQ   nb+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS X1, X1, X1
	LEG_CONSTS

q51loop:
	INT_Q5_1(0, 0, Y4)
	FMA_DM
	ADDQ $24, SI
	ADDQ $36, DI
	DECQ CX
	JNZ  q51loop

	HSUM8
	VADDSS X1, X0, X0
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// func dotQ5_0Q8_0AVX2(w, a *byte, nb int) float32
TEXT ·dotQ5_0Q8_0AVX2(SB), NOSPLIT, $0-28
	MOVQ   w+0(FP), SI
	MOVQ   a+8(FP), DI
	MOVQ   nb+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS X1, X1, X1
	LEG_CONSTS

q50loop:
	INT_Q5_0(0, 0, Y4)
	FMA_D
	ADDQ $22, SI
	ADDQ $34, DI
	DECQ CX
	JNZ  q50loop

	HSUM8
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
	FMA4_S(18, 34)
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
	FMA_S
	ADDQ $18, SI
	ADDQ $34, DI
	DECQ CX
	JNZ  iq4one

iq4done:
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// func q41Row4AVX2(w, a *byte, arb, nb int, y *float32, ys int)
TEXT ·q41Row4AVX2(SB), NOSPLIT, $32-48
	LEG_CONSTS
	LEG4_ARGS
	G4_ZERO

q41g:
	NIBBLES(4)
	G4_SC1
	G4_ROWS(G4_ROW1, 4, 8)
	ADDQ $20, SI
	ADDQ $36, DI
	DECQ CX
	JNZ  q41g

	G4_END
	VZEROUPPER
	RET

// func q51Row4AVX2(w, a *byte, arb, nb int, y *float32, ys int)
TEXT ·q51Row4AVX2(SB), NOSPLIT, $32-48
	LEG_CONSTS
	LEG4_ARGS
	G4_ZERO

q51g:
	NIBBLES(8)
	FIFTH(4)
	G4_SC1
	G4_ROWS(G4_ROW1, 4, 8)
	ADDQ $24, SI
	ADDQ $36, DI
	DECQ CX
	JNZ  q51g

	G4_END
	VZEROUPPER
	RET

// func q50Row4AVX2(w, a *byte, arb, nb int, y *float32, ys int)
TEXT ·q50Row4AVX2(SB), NOSPLIT, $32-48
	LEG_CONSTS
	LEG4_ARGS
	G4_ZERO

q50g:
	NIBBLES(6)
	FIFTH(2)
	G4_SC0
	G4_ROWS(G4_ROW0, 2, 4)
	ADDQ $22, SI
	ADDQ $34, DI
	DECQ CX
	JNZ  q50g

	// No summs: the sums as the row dot's, without G4_END's adds.
	HSUM8R(Y0, X0, X5)
	HSUM8R(Y1, X1, X5)
	HSUM8R(Y4, X4, X5)
	HSUM8R(Y6, X6, X5)
	VMOVSS X0, (DX)
	VMOVSS X1, (DX)(R9*1)
	VMOVSS X4, (DX)(R9*2)
	VMOVSS X6, (DX)(R10*1)
	VZEROUPPER
	RET

// func iq4nlRow4AVX2(w, a *byte, arb, nb int, y *float32, ys int)
TEXT ·iq4nlRow4AVX2(SB), NOSPLIT, $0-48
	LEG_CONSTS
	LEG4_ARGS
	VXORPS X0, X0, X0
	VMOVDQU legIQ4NL<>(SB), Y10

iq4g:
	NIBBLES(2)
	VPSHUFB Y2, Y10, Y2
	G4_IQ4ROW(2(DI), Y4)
	G4_IQ4ROW(2(DI)(R8*1), Y6)
	G4_IQ4ROW(2(DI)(R8*2), Y7)
	G4_IQ4ROW(2(DI)(AX*1), Y8)
	HSUM4
	// d*dy for the four rows, then one fused add each, as FMA_S.
	VPBROADCASTW 0(SI), X9
	VCVTPH2PS    X9, X9
	MOVWLZX      0(DI), BX
	VMOVD        BX, X3
	VPINSRW      $1, 0(DI)(R8*1), X3, X3
	VPINSRW      $2, 0(DI)(R8*2), X3, X3
	VPINSRW      $3, 0(DI)(AX*1), X3, X3
	VCVTPH2PS    X3, X3
	VMULPS       X3, X9, X3
	VFMADD231PS  X4, X3, X0
	ADDQ $18, SI
	ADDQ $34, DI
	DECQ CX
	JNZ  iq4g

	G4_STORE4(X0)
	VZEROUPPER
	RET
