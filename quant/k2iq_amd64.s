//go:build amd64 && !noasm && gc

#include "textflag.h"

// AVX2 dot products of Q2_K and IQ4_XS weights with Q8_K activations; Go
// twins dotQ2_KQ8_KGo and dotIQ4_XSQ8_KGo in k2iq.go. Each super-block's
// integer sums are exact, in eight int32 lanes (which wrap as the twins'
// int32 does), then added into eight float32 lanes with one fused
// multiply-add each and summed in hsum_float_8's order at the end: ggml's
// AVX2 order for both types. The results are the twins' bits.

// q2ksc<>+32m picks, as int16 from 16 scale bytes in both lanes, scale 2m
// into the low lane and scale 2m+1 into the high lane (0x80 zeroes).
DATA q2ksc<>+0x00(SB)/8, $0x8000800080008000
DATA q2ksc<>+0x08(SB)/8, $0x8000800080008000
DATA q2ksc<>+0x10(SB)/8, $0x8001800180018001
DATA q2ksc<>+0x18(SB)/8, $0x8001800180018001
DATA q2ksc<>+0x20(SB)/8, $0x8002800280028002
DATA q2ksc<>+0x28(SB)/8, $0x8002800280028002
DATA q2ksc<>+0x30(SB)/8, $0x8003800380038003
DATA q2ksc<>+0x38(SB)/8, $0x8003800380038003
DATA q2ksc<>+0x40(SB)/8, $0x8004800480048004
DATA q2ksc<>+0x48(SB)/8, $0x8004800480048004
DATA q2ksc<>+0x50(SB)/8, $0x8005800580058005
DATA q2ksc<>+0x58(SB)/8, $0x8005800580058005
DATA q2ksc<>+0x60(SB)/8, $0x8006800680068006
DATA q2ksc<>+0x68(SB)/8, $0x8006800680068006
DATA q2ksc<>+0x70(SB)/8, $0x8007800780078007
DATA q2ksc<>+0x78(SB)/8, $0x8007800780078007
DATA q2ksc<>+0x80(SB)/8, $0x8008800880088008
DATA q2ksc<>+0x88(SB)/8, $0x8008800880088008
DATA q2ksc<>+0x90(SB)/8, $0x8009800980098009
DATA q2ksc<>+0x98(SB)/8, $0x8009800980098009
DATA q2ksc<>+0xa0(SB)/8, $0x800a800a800a800a
DATA q2ksc<>+0xa8(SB)/8, $0x800a800a800a800a
DATA q2ksc<>+0xb0(SB)/8, $0x800b800b800b800b
DATA q2ksc<>+0xb8(SB)/8, $0x800b800b800b800b
DATA q2ksc<>+0xc0(SB)/8, $0x800c800c800c800c
DATA q2ksc<>+0xc8(SB)/8, $0x800c800c800c800c
DATA q2ksc<>+0xd0(SB)/8, $0x800d800d800d800d
DATA q2ksc<>+0xd8(SB)/8, $0x800d800d800d800d
DATA q2ksc<>+0xe0(SB)/8, $0x800e800e800e800e
DATA q2ksc<>+0xe8(SB)/8, $0x800e800e800e800e
DATA q2ksc<>+0xf0(SB)/8, $0x800f800f800f800f
DATA q2ksc<>+0xf8(SB)/8, $0x800f800f800f800f
GLOBL q2ksc<>(SB), RODATA|NOPTR, $256

// Q2K_STEP adds to Y8 Σ scale*Σ q2*q8 over sub-blocks 2m and 2m+1 (32
// values): q2 is bits shift..shift+1 of the 32 bytes in Y3, the
// activations at off(DI). Y2 holds the 16 scales (low nibbles) in both
// lanes, Y15 bytes 0x03. q2 ≤ 3 is unsigned, so VPMADDUBSW's pairs stay
// within ±768 for any activation byte.
#define Q2K_STEP(shift, off, m) \
	VPSRLW     $shift, Y3, Y4; \
	VPAND      Y15, Y4, Y4; \
	VPMADDUBSW off(DI), Y4, Y4; \
	VPSHUFB    q2ksc<>+m(SB), Y2, Y5; \
	VPMADDWD   Y5, Y4, Y4; \
	VPADDD     Y4, Y8, Y8

// Q2K_HALF is Q2K_STEP for the four 2-bit planes of half h: qs bytes
// 16+32h..16+32h+31, activations 4+128h.., scale pairs 4h..4h+3.
#define Q2K_HALF(qs, act, m) \
	VMOVDQU qs(SI), Y3; \
	Q2K_STEP(0, act, m); \
	Q2K_STEP(2, act+32, m+32); \
	Q2K_STEP(4, act+64, m+64); \
	Q2K_STEP(6, act+96, m+96)

// func dotQ2_KQ8_KAVX2(w, a *byte, nb int) float32
//
// Y0 is the twin's eight float32 lanes acc. Per super-block, VPMADDWD of
// the 16 mins against the 16 bsums leaves prod_l in int32 lane l, and
// each Q2K_STEP's VPMADDWD leaves lane l the scaled sum of bytes 4l..4l+3
// of its 32 values (scale 2m in the low lane, 2m+1 in the high): Y8's
// lanes are the twin's sumi_l, both exact. Then the twin's two fused
// multiply-adds, lane by lane, and hsum_float_8's adds at the end.
TEXT ·dotQ2_KQ8_KAVX2(SB), NOSPLIT, $0-28
	MOVQ   w+0(FP), SI
	MOVQ   a+8(FP), DI
	MOVQ   nb+16(FP), CX
	VXORPS Y0, Y0, Y0
	MOVL   $0x03030303, AX
	VMOVD  AX, X15
	VPBROADCASTD X15, Y15
	MOVL   $0x0f0f0f0f, AX
	VMOVD  AX, X14
	VPBROADCASTD X14, Y14

q2kloop:
	// [f16 d, f16 dmin] times dy: d in every lane of Y6, dy*f16(dmin) in
	// every lane of Y7 (its negation, the twin's dmin, goes into the
	// VFNMADD: -(dy*dmin)*p + acc rounds as fma(-dy*dmin, p, acc)).
	VMOVD        80(SI), X5
	VCVTPH2PS    X5, X5
	VBROADCASTSS 0(DI), X6
	VMULPS       X6, X5, X5
	VBROADCASTSS X5, Y6
	VMOVSHDUP    X5, X7
	VBROADCASTSS X7, Y7

	// Mins: prod_l = min 2l * bsum 2l + min 2l+1 * bsum 2l+1 in lane l
	// of Y9; acc += dmin * prod.
	VMOVDQU   0(SI), X1
	VPSRLW    $4, X1, X2
	VPAND     X14, X2, X2
	VPMOVZXBW X2, Y9
	VPMADDWD  260(DI), Y9, Y9
	VCVTDQ2PS Y9, Y9
	VFNMADD231PS Y7, Y9, Y0

	// sumi in Y8's lanes; acc += d * sumi.
	VBROADCASTI128 0(SI), Y2
	VPAND     Y14, Y2, Y2
	VPXOR     Y8, Y8, Y8
	Q2K_HALF(16, 4, 0)
	Q2K_HALF(48, 132, 128)
	VCVTDQ2PS    Y8, Y8
	VFMADD231PS  Y6, Y8, Y0

	ADDQ $84, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  q2kloop

	// hsum_float_8: r_i = acc[4+i] + acc[i], then (r0+r2) + (r1+r3).
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X0, X1, X0
	VMOVHLPS     X0, X0, X1
	VADDPS       X1, X0, X0
	VMOVSHDUP    X0, X1
	VADDSS       X1, X0, X0
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// iq4kv<> is kvaluesIQ4NL.
DATA iq4kv<>+0x00(SB)/8, $0xf6eaddcfbfad9881
DATA iq4kv<>+0x08(SB)/8, $0x7159453526190d01
GLOBL iq4kv<>(SB), RODATA|NOPTR, $16

// The IQ4_XS dot keeps ggml's AVX2 order (dotIQ4_XSQ8_KGo): int32 lane l
// of Y8 sums values 4l..4l+3 of every sub-block times its scale, so each
// sub-block's 32 levels lie in value order (low nibbles in the low lane,
// high nibbles in the high lane) against its 32 activations; the lanes
// are scaled into the eight float32 accumulators of Y0 by one FMA each
// super-block and summed once at the end, as hsum8.

// IQ4_SUB adds (ls-32) * Σ kvalue*q8 over sub-block k, its levels in kv
// (clobbered), to Y8's eight lanes: activations at 4+32k(DI), the scale
// word k at 2k(SP). The sign goes onto the levels, never -128, and
// |q8| ≤ 128 is unsigned: VPMADDUBSW pairs stay within ±32512 for any
// activation byte.
#define IQ4_SUB(kv, k) \
	VMOVDQU      (4+32*k)(DI), Y6; \
	VPSIGNB      Y6, kv, kv; \
	VPSIGNB      Y6, Y6, Y6; \
	VPMADDUBSW   kv, Y6, kv; \
	VPBROADCASTW (2*k)(SP), Y5; \
	VPMADDWD     Y5, kv, kv; \
	VPADDD       kv, Y8, Y8

// IQ4_PAIR adds sub-blocks 2p and 2p+1 (qs bytes at qs(SI), which hold
// sub-block 2p in the low lane and 2p+1 in the high lane) to Y8: the
// nibbles become levels (Y9, Y15 bytes 0x0f), then the lanes are
// regrouped to one sub-block a register, values 0..31 in order.
#define IQ4_PAIR(qs, p) \
	VMOVDQU    qs(SI), Y2; \
	VPAND      Y15, Y2, Y3; \
	VPSRLW     $4, Y2, Y2; \
	VPAND      Y15, Y2, Y2; \
	VPSHUFB    Y3, Y9, Y3; \
	VPSHUFB    Y2, Y9, Y2; \
	VPERM2I128 $0x20, Y2, Y3, Y4; \
	VPERM2I128 $0x31, Y2, Y3, Y3; \
	IQ4_SUB(Y4, (2*p)); \
	IQ4_SUB(Y3, (2*p+1))

// iq4ssh<> spreads the block's bytes 0..7 (loaded whole) into words:
// +0 scales_h in every word, +16 scales_l's first half in words 0..3 and
// its second half in words 4..7. iq4smul<> shifts by multiplying, so
// that one right shift leaves field ib in word ib: +0 scales_h's bits
// 2ib..2ib+1 to the top two bits, +16 scales_l's nibble ib to the top four.
DATA iq4ssh<>+0x00(SB)/8, $0x0302030203020302
DATA iq4ssh<>+0x08(SB)/8, $0x0302030203020302
DATA iq4ssh<>+0x10(SB)/8, $0x0504050405040504
DATA iq4ssh<>+0x18(SB)/8, $0x0706070607060706
GLOBL iq4ssh<>(SB), RODATA|NOPTR, $32
DATA iq4smul<>+0x00(SB)/8, $0x0100040010004000
DATA iq4smul<>+0x08(SB)/8, $0x0001000400100040
DATA iq4smul<>+0x10(SB)/8, $0x0001001001001000
DATA iq4smul<>+0x18(SB)/8, $0x0001001001001000
GLOBL iq4smul<>(SB), RODATA|NOPTR, $32

// func dotIQ4_XSQ8_KAVX2(w, a *byte, nb int) float32
TEXT ·dotIQ4_XSQ8_KAVX2(SB), NOSPLIT, $16-28
	MOVQ   w+0(FP), SI
	MOVQ   a+8(FP), DI
	MOVQ   nb+16(FP), CX
	VXORPS Y0, Y0, Y0
	MOVL   $0x0f0f0f0f, AX
	VMOVD  AX, X15
	VPBROADCASTD X15, Y15
	VBROADCASTI128 iq4kv<>(SB), Y9
	MOVL   $0x00200020, AX
	VMOVD  AX, X12
	VPBROADCASTD X12, X12
	VMOVDQU iq4ssh<>(SB), X10
	VMOVDQU iq4ssh<>+16(SB), X11
	VMOVDQU iq4smul<>(SB), X13
	VMOVDQU iq4smul<>+16(SB), X14

iq4loop:
	// The 8 sub-block scales ls-32 as int16 at 0(SP):
	// ls = nibble ib of scales_l | bits 2ib, 2ib+1 of scales_h << 4.
	VMOVQ     0(SI), X1
	VPSHUFB   X10, X1, X2
	VPSHUFB   X11, X1, X1
	VPMULLW   X13, X2, X2
	VPMULLW   X14, X1, X1
	VPSRLW    $14, X2, X2
	VPSRLW    $12, X1, X1
	VPSLLW    $4, X2, X2
	VPOR      X2, X1, X1
	VPSUBW    X12, X1, X1
	VMOVDQU   X1, 0(SP)

	VPXOR Y8, Y8, Y8
	IQ4_PAIR(8, 0)
	IQ4_PAIR(40, 1)
	IQ4_PAIR(72, 2)
	IQ4_PAIR(104, 3)
	VCVTDQ2PS Y8, Y8

	// acc_l = fma(f16(d)*dy, float32(lane_l), acc_l).
	MOVWLZX      0(SI), AX
	VMOVD        AX, X5
	VCVTPH2PS    X5, X5
	VMULSS       0(DI), X5, X5
	VBROADCASTSS X5, Y5
	VFMADD231PS  Y5, Y8, Y0

	ADDQ $136, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  iq4loop

	// hsum8: (acc0+acc4 + acc2+acc6) + (acc1+acc5 + acc3+acc7).
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VMOVHLPS     X0, X0, X1
	VADDPS       X1, X0, X0
	VMOVSHDUP    X0, X1
	VADDSS       X1, X0, X0
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET
