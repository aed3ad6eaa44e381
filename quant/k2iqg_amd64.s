//go:build amd64 && !noasm && gc

#include "textflag.h"

// Batched AVX2 row kernels for Q2_K and IQ4_XS (gemmK through gemmK35's
// tiling): one weight row's super-block is unpacked once into registers
// and applied to every one of c activation rows, four at a time and the
// rest one by one. Each output keeps its own eight float32 lanes, added
// with one fused multiply-add a lane a super-block as the twins
// (dotQ2_KQ8_KGo, dotIQ4_XSQ8_KGo) do: the outputs are the twins' bits
// whatever the batch.

// IQ4G_SC broadcasts word k of the block's scales (at 256(SP)) to a whole
// register and keeps it at 32k(SP) for the activation loop.
#define IQ4G_SC(k) \
	VPBROADCASTW (256+2*k)(SP), Y10; \
	VMOVDQU      Y10, (32*k)(SP)

// IQ4G_SUB adds (ls_k-32) * Σ kvalue*q8 over sub-block k (levels in v,
// activations at 4+32k(BX), scale words at 32k(SP)) to Y12. The sign goes
// onto the levels (never -128) and |q8| ≤ 128 is unsigned, so VPMADDUBSW's
// pairs stay within ±32512.
#define IQ4G_SUB(k, v) \
	VMOVDQU    (4+32*k)(BX), Y13; \
	VPSIGNB    Y13, v, Y14; \
	VPABSB     Y13, Y13; \
	VPMADDUBSW Y14, Y13, Y14; \
	VPMADDWD   (32*k)(SP), Y14, Y14; \
	VPADDD     Y14, Y12, Y12

// IQ4G4_SUB (with IQ4G4_ONE) is IQ4G_SUB for four activation rows at once (at BX, BX+R8,
// BX+2*R8 and BX+AX, AX = 3*R8) into Y12..Y15, using Y8 and Y9.
#define IQ4G4_ONE(act, v, k, acc) \
	VMOVDQU    act, Y8; \
	VPSIGNB    Y8, v, Y9; \
	VPABSB     Y8, Y8; \
	VPMADDUBSW Y9, Y8, Y9; \
	VPMADDWD   (32*k)(SP), Y9, Y9; \
	VPADDD     Y9, acc, acc

#define IQ4G4_SUB(k, v) \
	IQ4G4_ONE((4+32*k)(BX), v, k, Y12); \
	IQ4G4_ONE((4+32*k)(BX)(R8*1), v, k, Y13); \
	IQ4G4_ONE((4+32*k)(BX)(R8*2), v, k, Y14); \
	IQ4G4_ONE((4+32*k)(BX)(AX*1), v, k, Y15)

// Q2G4_ONE adds to acc the int32 lane sums of planes p0 and p1 against
// the activations at act and act+32 (as Q2G_PAIR), using Y10 and Y11.
#define Q2G4_ONE(act, act2, p0, p1, acc) \
	VPMADDUBSW act, p0, Y10; \
	VPMADDUBSW act2, p1, Y11; \
	VPADDW     Y11, Y10, Y10; \
	VPMADDWD   Y9, Y10, Y10; \
	VPADDD     Y10, acc, acc

// Q2G4_PAIR is Q2G_PAIR for four activation rows (at BX, BX+R8, BX+2*R8
// and BX+AX, AX = 3*R8) into Y12..Y15.
#define Q2G4_PAIR(off, p0, p1) \
	Q2G4_ONE(off(BX), (off+32)(BX), p0, p1, Y12); \
	Q2G4_ONE(off(BX)(R8*1), (off+32)(BX)(R8*1), p0, p1, Y13); \
	Q2G4_ONE(off(BX)(R8*2), (off+32)(BX)(R8*2), p0, p1, Y14); \
	Q2G4_ONE(off(BX)(AX*1), (off+32)(BX)(AX*1), p0, p1, Y15)

// q2gsc<>+32m picks, as int16 from 16 scale bytes in both lanes, scale 2m
// into the low lane and scale 2m+1 into the high lane (0x80 zeroes).
DATA q2gsc<>+0x00(SB)/8, $0x8000800080008000
DATA q2gsc<>+0x08(SB)/8, $0x8000800080008000
DATA q2gsc<>+0x10(SB)/8, $0x8001800180018001
DATA q2gsc<>+0x18(SB)/8, $0x8001800180018001
DATA q2gsc<>+0x20(SB)/8, $0x8002800280028002
DATA q2gsc<>+0x28(SB)/8, $0x8002800280028002
DATA q2gsc<>+0x30(SB)/8, $0x8003800380038003
DATA q2gsc<>+0x38(SB)/8, $0x8003800380038003
DATA q2gsc<>+0x40(SB)/8, $0x8004800480048004
DATA q2gsc<>+0x48(SB)/8, $0x8004800480048004
DATA q2gsc<>+0x50(SB)/8, $0x8005800580058005
DATA q2gsc<>+0x58(SB)/8, $0x8005800580058005
DATA q2gsc<>+0x60(SB)/8, $0x8006800680068006
DATA q2gsc<>+0x68(SB)/8, $0x8006800680068006
DATA q2gsc<>+0x70(SB)/8, $0x8007800780078007
DATA q2gsc<>+0x78(SB)/8, $0x8007800780078007
DATA q2gsc<>+0x80(SB)/8, $0x8008800880088008
DATA q2gsc<>+0x88(SB)/8, $0x8008800880088008
DATA q2gsc<>+0x90(SB)/8, $0x8009800980098009
DATA q2gsc<>+0x98(SB)/8, $0x8009800980098009
DATA q2gsc<>+0xa0(SB)/8, $0x800a800a800a800a
DATA q2gsc<>+0xa8(SB)/8, $0x800a800a800a800a
DATA q2gsc<>+0xb0(SB)/8, $0x800b800b800b800b
DATA q2gsc<>+0xb8(SB)/8, $0x800b800b800b800b
DATA q2gsc<>+0xc0(SB)/8, $0x800c800c800c800c
DATA q2gsc<>+0xc8(SB)/8, $0x800c800c800c800c
DATA q2gsc<>+0xd0(SB)/8, $0x800d800d800d800d
DATA q2gsc<>+0xd8(SB)/8, $0x800d800d800d800d
DATA q2gsc<>+0xe0(SB)/8, $0x800e800e800e800e
DATA q2gsc<>+0xe8(SB)/8, $0x800e800e800e800e
DATA q2gsc<>+0xf0(SB)/8, $0x800f800f800f800f
DATA q2gsc<>+0xf8(SB)/8, $0x800f800f800f800f
GLOBL q2gsc<>(SB), RODATA|NOPTR, $256
DATA q2gmask<>+0x00(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA q2gmask<>+0x08(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA q2gmask<>+0x10(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA q2gmask<>+0x18(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA q2gmask<>+0x20(SB)/8, $0x0303030303030303
DATA q2gmask<>+0x28(SB)/8, $0x0303030303030303
DATA q2gmask<>+0x30(SB)/8, $0x0303030303030303
DATA q2gmask<>+0x38(SB)/8, $0x0303030303030303
GLOBL q2gmask<>(SB), RODATA|NOPTR, $64
DATA q2gones<>+0x00(SB)/8, $0x0001000100010001
DATA q2gones<>+0x08(SB)/8, $0x0001000100010001
DATA q2gones<>+0x10(SB)/8, $0x0001000100010001
DATA q2gones<>+0x18(SB)/8, $0x0001000100010001
GLOBL q2gones<>(SB), RODATA|NOPTR, $32

// Q2G_PLANE leaves in dst the 32 quants of bits shift..shift+1 of the qs
// bytes in Y11, each times its sub-block's scale (pair m of q2gsc<>; the
// scale nibbles in Y10): q*scale ≤ 45 stays in its byte, so one VPMULLW
// on words multiplies both bytes of each word (same sub-block).
#define Q2G_PLANE(shift, m, dst) \
	VPSRLW   $shift, Y11, Y12; \
	VPAND    Y15, Y12, Y12; \
	VPSHUFB  q2gsc<>+m(SB), Y10, dst; \
	VPMULLW  dst, Y12, dst

// Q2G_PAIR adds to Y10 the int32 lane sums of planes p and p+1 (values
// 32p.., activations at 4+32p(BX)): each VPMADDUBSW pair is within
// ±2*45*128, two of them within ±23040, so the int16 sum is exact, and
// VPMADDWD against ones leaves int32 lane l the sum over bytes 4l..4l+3 of
// both planes: ggml's sumi lanes (lanes 0..3 a plane's first sub-block).
#define Q2G_PAIR(off, p0, p1) \
	VPMADDUBSW off(BX), p0, Y11; \
	VPMADDUBSW (off+32)(BX), p1, Y12; \
	VPADDW     Y12, Y11, Y11; \
	VPMADDWD   Y9, Y11, Y11; \
	VPADDD     Y11, Y10, Y10

// Q2G_FMA adds one activation row's super-block to its eight float32
// lanes at (R14), the twin's steps: prod (the mins against the row's
// bsums at 260(BX)) times dmin, then sumi (int32 lanes in s) times d, each
// a fused multiply-add lane by lane. Y10 and Y11 are free.
// -(dy*dmin)*p + acc rounds as the twin's fma(-dy*dmin, p, acc).
#define Q2G_FMA(s) \
	VPMADDWD     260(BX), Y8, Y11; \
	VCVTDQ2PS    Y11, Y11; \
	VBROADCASTSS 0(BX), Y10; \
	VMULPS       544(SP), Y10, Y10; \
	VFNMADD213PS (R14), Y10, Y11; \
	VBROADCASTSS 0(BX), Y10; \
	VMULPS       512(SP), Y10, Y10; \
	VCVTDQ2PS    s, s; \
	VFMADD231PS  Y10, s, Y11; \
	VMOVUPS      Y11, (R14)

// func q2kRowAVX2(w, a *byte, arb, nb int, y *float32, ys, c int)
//
// c ≤ 16 (gemmK2IQ checks): each activation row keeps the twin's eight
// float32 lanes at 32i(SP) across the super-blocks, reduced in
// hsum_float_8's order into y at the end, so a row's bits do not depend
// on which rows share its batch. 512(SP) holds f16 d and 544(SP) f16 dmin
// of the current super-block, each in all eight lanes.
TEXT ·q2kRowAVX2(SB), NOSPLIT, $576-56
	MOVQ w+0(FP), SI
	MOVQ a+8(FP), DI
	MOVQ arb+16(FP), R8
	MOVQ nb+24(FP), CX
	MOVQ y+32(FP), DX
	MOVQ ys+40(FP), R9
	SHLQ $2, R9
	MOVQ c+48(FP), R10

	VXORPS Y0, Y0, Y0
	MOVQ   SP, R14
	MOVQ   R10, R11
q2gclear:
	VMOVUPS Y0, (R14)
	ADDQ    $32, R14
	DECQ    R11
	JNZ     q2gclear

	// AX = 3*arb for the groups of four activation rows.
	LEAQ    (R8)(R8*2), AX
	VMOVDQU q2gones<>(SB), Y9

q2gblock:
	// Mins (high nibbles) as int16 in Y8; f16 d and dmin broadcast to
	// 512(SP) and 544(SP).
	VMOVDQU      q2gmask<>(SB), Y14
	VMOVDQU      q2gmask<>+32(SB), Y15
	VMOVDQU      0(SI), X12
	VPSRLW       $4, X12, X12
	VPAND        X14, X12, X12
	VPMOVZXBW    X12, Y8
	VMOVD        80(SI), X13
	VCVTPH2PS    X13, X13
	VBROADCASTSS X13, Y12
	VMOVUPS      Y12, 512(SP)
	VMOVSHDUP    X13, X13
	VBROADCASTSS X13, Y12
	VMOVUPS      Y12, 544(SP)

	// Planes q*scale in Y0..Y7: plane m = 4h+j is values 128h+32j.., bits
	// 2j of qs bytes 32h..32h+31, sub-blocks 2m and 2m+1.
	VBROADCASTI128 0(SI), Y10
	VPAND          Y14, Y10, Y10
	VMOVDQU        16(SI), Y11
	Q2G_PLANE(0, 0x00, Y0)
	Q2G_PLANE(2, 0x20, Y1)
	Q2G_PLANE(4, 0x40, Y2)
	Q2G_PLANE(6, 0x60, Y3)
	VMOVDQU        48(SI), Y11
	Q2G_PLANE(0, 0x80, Y4)
	Q2G_PLANE(2, 0xa0, Y5)
	Q2G_PLANE(4, 0xc0, Y6)
	Q2G_PLANE(6, 0xe0, Y7)

	MOVQ DI, BX
	MOVQ SP, R14
	MOVQ R10, R11
	CMPQ R11, $4
	JLT  q2gtail

q2g4:
	// Four activation rows: sumi lanes in Y12..Y15, then each row's
	// float steps.
	VPXOR Y12, Y12, Y12
	VPXOR Y13, Y13, Y13
	VPXOR Y14, Y14, Y14
	VPXOR Y15, Y15, Y15
	Q2G4_PAIR(4, Y0, Y1)
	Q2G4_PAIR(68, Y2, Y3)
	Q2G4_PAIR(132, Y4, Y5)
	Q2G4_PAIR(196, Y6, Y7)
	Q2G_FMA(Y12)
	ADDQ R8, BX
	ADDQ $32, R14
	Q2G_FMA(Y13)
	ADDQ R8, BX
	ADDQ $32, R14
	Q2G_FMA(Y14)
	ADDQ R8, BX
	ADDQ $32, R14
	Q2G_FMA(Y15)
	ADDQ R8, BX
	ADDQ $32, R14

	SUBQ $4, R11
	CMPQ R11, $4
	JGE  q2g4

q2gtail:
	TESTQ R11, R11
	JZ    q2gnext

q2gact:
	VPMADDUBSW 4(BX), Y0, Y10
	VPMADDUBSW 36(BX), Y1, Y11
	VPADDW     Y11, Y10, Y10
	VPMADDWD   Y9, Y10, Y10
	Q2G_PAIR(68, Y2, Y3)
	Q2G_PAIR(132, Y4, Y5)
	Q2G_PAIR(196, Y6, Y7)
	VMOVDQA    Y10, Y12
	Q2G_FMA(Y12)

	ADDQ R8, BX
	ADDQ $32, R14
	DECQ R11
	JNZ  q2gact

q2gnext:
	ADDQ $84, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  q2gblock

	// y_i = hsum_float_8 of row i's lanes: r_k = acc[4+k] + acc[k], then
	// (r0+r2) + (r1+r3).
	MOVQ SP, R14
q2gsum:
	VMOVUPS      (R14), X0
	VMOVUPS      16(R14), X1
	VADDPS       X0, X1, X0
	VMOVHLPS     X0, X0, X1
	VADDPS       X1, X0, X0
	VMOVSHDUP    X0, X1
	VADDSS       X1, X0, X0
	VMOVSS       X0, (DX)
	ADDQ         $32, R14
	ADDQ         R9, DX
	DECQ         R10
	JNZ          q2gsum
	VZEROUPPER
	RET

// iq4gkv<> is kvaluesIQ4NL.
DATA iq4gkv<>+0x00(SB)/8, $0xf6eaddcfbfad9881
DATA iq4gkv<>+0x08(SB)/8, $0x7159453526190d01
GLOBL iq4gkv<>(SB), RODATA|NOPTR, $16

// iq4gssh<> and iq4gsmul<> are k2iq_amd64.s's iq4ssh<> and iq4smul<>:
// bytes 0..7 of the block spread into words and shifted by multiplying so
// that one right shift leaves field ib in word ib (scales_h bits 2ib..2ib+1
// to the top two bits, scales_l nibble ib to the top four).
DATA iq4gssh<>+0x00(SB)/8, $0x0302030203020302
DATA iq4gssh<>+0x08(SB)/8, $0x0302030203020302
DATA iq4gssh<>+0x10(SB)/8, $0x0504050405040504
DATA iq4gssh<>+0x18(SB)/8, $0x0706070607060706
GLOBL iq4gssh<>(SB), RODATA|NOPTR, $32
DATA iq4gsmul<>+0x00(SB)/8, $0x0100040010004000
DATA iq4gsmul<>+0x08(SB)/8, $0x0001000400100040
DATA iq4gsmul<>+0x10(SB)/8, $0x0001001001001000
DATA iq4gsmul<>+0x18(SB)/8, $0x0001001001001000
GLOBL iq4gsmul<>(SB), RODATA|NOPTR, $32
DATA iq4g32<>+0x00(SB)/8, $0x0020002000200020
DATA iq4g32<>+0x08(SB)/8, $0x0020002000200020
GLOBL iq4g32<>(SB), RODATA|NOPTR, $16
DATA iq4gmask<>+0x00(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA iq4gmask<>+0x08(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA iq4gmask<>+0x10(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA iq4gmask<>+0x18(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL iq4gmask<>(SB), RODATA|NOPTR, $32

// IQ4G_LEV leaves in va and vb the levels of sub-blocks 2p and 2p+1 (qs
// bytes 32p.. at off(SI)), values 0..15 (low nibbles) in the low lane and
// 16..31 (high nibbles) in the high lane, as the activations lie.
#define IQ4G_LEV(off, va, vb) \
	VMOVDQU    off(SI), Y9; \
	VPAND      Y15, Y9, Y10; \
	VPSRLW     $4, Y9, Y9; \
	VPAND      Y15, Y9, Y9; \
	VPSHUFB    Y10, Y8, Y10; \
	VPSHUFB    Y9, Y8, Y9; \
	VPERM2I128 $0x20, Y9, Y10, va; \
	VPERM2I128 $0x31, Y9, Y10, vb

// IQ4G_FMA adds one activation row's eight int32 lanes (in lanes, as
// float32 after) times f16(d)*dy (dy at dyp, d in X11) to its eight
// float32 accumulators at accp, one fused rounding a lane; uses Y8, Y9.
#define IQ4G_FMA(dyp, lanes, accp) \
	VMULSS       dyp, X11, X8; \
	VBROADCASTSS X8, Y8; \
	VCVTDQ2PS    lanes, lanes; \
	VMOVUPS      accp, Y9; \
	VFMADD231PS  Y8, lanes, Y9; \
	VMOVUPS      Y9, accp

// iq4xsRowAVX2 keeps ggml's AVX2 order for IQ4_XS (dotIQ4_XSQ8_KGo):
// each activation row's eight int32 lanes (lane l: values 4l..4l+3 of
// every sub-block times its scale) are scaled into its own eight float32
// accumulators, acc[8i..8i+7] for row i, by one FMA a super-block; the
// caller sums each row's eight once (hsum8). A row's accumulators see the
// same steps alone or in a group of four, so its bits do not depend on
// the batch.
//
// func iq4xsRowAVX2(w, a *byte, arb, nb int, acc *float32, c int)
TEXT ·iq4xsRowAVX2(SB), NOSPLIT, $272-48
	MOVQ w+0(FP), SI
	MOVQ a+8(FP), DI
	MOVQ arb+16(FP), R8
	MOVQ nb+24(FP), CX
	MOVQ acc+32(FP), DX
	MOVQ c+40(FP), R10

	MOVQ   DX, R13
	MOVQ   R10, R11
	VXORPS Y12, Y12, Y12
iq4gclear:
	VMOVUPS Y12, (R13)
	ADDQ    $32, R13
	DECQ    R11
	JNZ     iq4gclear

	// AX = 3*arb for the groups of four activation rows.
	LEAQ (R8)(R8*2), AX

iq4gblock:
	VMOVDQU        iq4gmask<>(SB), Y15
	VBROADCASTI128 iq4gkv<>(SB), Y8
	// The 8 sub-block scales ls-32 as int16 at 256(SP), each broadcast
	// to a register's 16 words at 32k(SP).
	VMOVQ     0(SI), X9
	VPSHUFB   iq4gssh<>(SB), X9, X10
	VPSHUFB   iq4gssh<>+16(SB), X9, X9
	VPMULLW   iq4gsmul<>(SB), X10, X10
	VPMULLW   iq4gsmul<>+16(SB), X9, X9
	VPSRLW    $14, X10, X10
	VPSRLW    $12, X9, X9
	VPSLLW    $4, X10, X10
	VPOR      X10, X9, X9
	VPSUBW    iq4g32<>(SB), X9, X9
	VMOVDQU   X9, 256(SP)
	IQ4G_SC(0)
	IQ4G_SC(1)
	IQ4G_SC(2)
	IQ4G_SC(3)
	IQ4G_SC(4)
	IQ4G_SC(5)
	IQ4G_SC(6)
	IQ4G_SC(7)

	// Levels of sub-block k in Yk, values 0..31 in order; f16 d as
	// float32 in X11.
	IQ4G_LEV(8, Y0, Y1)
	IQ4G_LEV(40, Y2, Y3)
	IQ4G_LEV(72, Y4, Y5)
	IQ4G_LEV(104, Y6, Y7)
	MOVWLZX   0(SI), R14
	VMOVD     R14, X11
	VCVTPH2PS X11, X11

	MOVQ DI, BX
	MOVQ DX, R13
	MOVQ R10, R11
	CMPQ R11, $4
	JLT  iq4gtail

iq4g4:
	// Four activation rows: their lanes in Y12..Y15, then each row's
	// acc_l = fma(f16(d)*dy, float32(lane_l), acc_l).
	VPXOR Y12, Y12, Y12
	VPXOR Y13, Y13, Y13
	VPXOR Y14, Y14, Y14
	VPXOR Y15, Y15, Y15
	IQ4G4_SUB(0, Y0)
	IQ4G4_SUB(1, Y1)
	IQ4G4_SUB(2, Y2)
	IQ4G4_SUB(3, Y3)
	IQ4G4_SUB(4, Y4)
	IQ4G4_SUB(5, Y5)
	IQ4G4_SUB(6, Y6)
	IQ4G4_SUB(7, Y7)
	IQ4G_FMA(0(BX), Y12, 0(R13))
	IQ4G_FMA((BX)(R8*1), Y13, 32(R13))
	IQ4G_FMA((BX)(R8*2), Y14, 64(R13))
	IQ4G_FMA((BX)(AX*1), Y15, 96(R13))

	LEAQ (BX)(R8*4), BX
	ADDQ $128, R13
	SUBQ $4, R11
	CMPQ R11, $4
	JGE  iq4g4

iq4gtail:
	TESTQ R11, R11
	JZ    iq4gnext

iq4gact:
	VPXOR Y12, Y12, Y12
	IQ4G_SUB(0, Y0)
	IQ4G_SUB(1, Y1)
	IQ4G_SUB(2, Y2)
	IQ4G_SUB(3, Y3)
	IQ4G_SUB(4, Y4)
	IQ4G_SUB(5, Y5)
	IQ4G_SUB(6, Y6)
	IQ4G_SUB(7, Y7)
	IQ4G_FMA(0(BX), Y12, 0(R13))

	ADDQ R8, BX
	ADDQ $32, R13
	DECQ R11
	JNZ  iq4gact

iq4gnext:
	ADDQ $136, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  iq4gblock
	VZEROUPPER
	RET
