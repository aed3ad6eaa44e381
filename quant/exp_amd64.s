//go:build amd64 && !noasm && gc

#include "textflag.h"

// Exp32s' kernels: glibc's expf (libm.Expf, internal/libm/expf.go) lane by
// lane, the same float64 steps and the same fused multiply-adds:
//
//	ki = bits(fma(InvLn2N, x, shift))    k = round(x·32/ln2) in the low bits
//	r  = fma(InvLn2N, x, -(ki - shift))  the remainder, x·32/ln2 never rounded
//	s  = tab[k & 31] + k<<47             2^(k/32) (integer add on the bits)
//	y  = fma(fma(C0, r, C1), r·r, fma(C2, r, 1)) · s, rounded to float32
//
// then glibc's special cases blended in: x > 88.72 gives +Inf, x <
// -103.28 the least subnormal, x < -103.97 zero, NaN x+x.

// expTab is glibc's __exp2f_data.tab (libm's expTab): the bits of
// 2^(i/32) less i<<47.
DATA expTab<>+0(SB)/8, $0x3ff0000000000000
DATA expTab<>+8(SB)/8, $0x3fefd9b0d3158574
DATA expTab<>+16(SB)/8, $0x3fefb5586cf9890f
DATA expTab<>+24(SB)/8, $0x3fef9301d0125b51
DATA expTab<>+32(SB)/8, $0x3fef72b83c7d517b
DATA expTab<>+40(SB)/8, $0x3fef54873168b9aa
DATA expTab<>+48(SB)/8, $0x3fef387a6e756238
DATA expTab<>+56(SB)/8, $0x3fef1e9df51fdee1
DATA expTab<>+64(SB)/8, $0x3fef06fe0a31b715
DATA expTab<>+72(SB)/8, $0x3feef1a7373aa9cb
DATA expTab<>+80(SB)/8, $0x3feedea64c123422
DATA expTab<>+88(SB)/8, $0x3feece086061892d
DATA expTab<>+96(SB)/8, $0x3feebfdad5362a27
DATA expTab<>+104(SB)/8, $0x3feeb42b569d4f82
DATA expTab<>+112(SB)/8, $0x3feeab07dd485429
DATA expTab<>+120(SB)/8, $0x3feea47eb03a5585
DATA expTab<>+128(SB)/8, $0x3feea09e667f3bcd
DATA expTab<>+136(SB)/8, $0x3fee9f75e8ec5f74
DATA expTab<>+144(SB)/8, $0x3feea11473eb0187
DATA expTab<>+152(SB)/8, $0x3feea589994cce13
DATA expTab<>+160(SB)/8, $0x3feeace5422aa0db
DATA expTab<>+168(SB)/8, $0x3feeb737b0cdc5e5
DATA expTab<>+176(SB)/8, $0x3feec49182a3f090
DATA expTab<>+184(SB)/8, $0x3feed503b23e255d
DATA expTab<>+192(SB)/8, $0x3feee89f995ad3ad
DATA expTab<>+200(SB)/8, $0x3feeff76f2fb5e47
DATA expTab<>+208(SB)/8, $0x3fef199bdd85529c
DATA expTab<>+216(SB)/8, $0x3fef3720dcef9069
DATA expTab<>+224(SB)/8, $0x3fef5818dcfba487
DATA expTab<>+232(SB)/8, $0x3fef7c97337b9b5f
DATA expTab<>+240(SB)/8, $0x3fefa4afa2a490da
DATA expTab<>+248(SB)/8, $0x3fefd0765b6e4540
GLOBL expTab<>(SB), RODATA|NOPTR, $256

// The float64 constants (int64 for the masks), each in four lanes so that
// a VEX memory operand reads them whole, 32 bytes apart: InvLn2N = 32/ln2,
// shift = 1.5·2^52, the cubic's C0, C1, C2 (glibc's poly_scaled), 1, and
// the index mask 31 and bit 16 (the AVX-512 kernel's table half).
DATA expConst<>+0(SB)/8, $0x40471547652b82fe // InvLn2N
DATA expConst<>+8(SB)/8, $0x40471547652b82fe
DATA expConst<>+16(SB)/8, $0x40471547652b82fe
DATA expConst<>+24(SB)/8, $0x40471547652b82fe
DATA expConst<>+32(SB)/8, $0x4338000000000000 // shift
DATA expConst<>+40(SB)/8, $0x4338000000000000
DATA expConst<>+48(SB)/8, $0x4338000000000000
DATA expConst<>+56(SB)/8, $0x4338000000000000
DATA expConst<>+64(SB)/8, $0x3ebc6af84b912394 // C0
DATA expConst<>+72(SB)/8, $0x3ebc6af84b912394
DATA expConst<>+80(SB)/8, $0x3ebc6af84b912394
DATA expConst<>+88(SB)/8, $0x3ebc6af84b912394
DATA expConst<>+96(SB)/8, $0x3f2ebfce50fac4f3 // C1
DATA expConst<>+104(SB)/8, $0x3f2ebfce50fac4f3
DATA expConst<>+112(SB)/8, $0x3f2ebfce50fac4f3
DATA expConst<>+120(SB)/8, $0x3f2ebfce50fac4f3
DATA expConst<>+128(SB)/8, $0x3f962e42ff0c52d6 // C2
DATA expConst<>+136(SB)/8, $0x3f962e42ff0c52d6
DATA expConst<>+144(SB)/8, $0x3f962e42ff0c52d6
DATA expConst<>+152(SB)/8, $0x3f962e42ff0c52d6
DATA expConst<>+160(SB)/8, $0x3ff0000000000000 // one
DATA expConst<>+168(SB)/8, $0x3ff0000000000000
DATA expConst<>+176(SB)/8, $0x3ff0000000000000
DATA expConst<>+184(SB)/8, $0x3ff0000000000000
DATA expConst<>+192(SB)/8, $31 // 31 (int64)
DATA expConst<>+200(SB)/8, $31
DATA expConst<>+208(SB)/8, $31
DATA expConst<>+216(SB)/8, $31
DATA expConst<>+224(SB)/8, $16 // 16 (int64)
DATA expConst<>+232(SB)/8, $16
DATA expConst<>+240(SB)/8, $16
DATA expConst<>+248(SB)/8, $16
GLOBL expConst<>(SB), RODATA|NOPTR, $256

// glibc's float32 bounds and their results, eight lanes each, 32 bytes
// apart.
DATA expBound<>+0(SB)/4, $0x42b17217 // x > 0x1.62e42ep6: +Inf
DATA expBound<>+4(SB)/4, $0x42b17217
DATA expBound<>+8(SB)/4, $0x42b17217
DATA expBound<>+12(SB)/4, $0x42b17217
DATA expBound<>+16(SB)/4, $0x42b17217
DATA expBound<>+20(SB)/4, $0x42b17217
DATA expBound<>+24(SB)/4, $0x42b17217
DATA expBound<>+28(SB)/4, $0x42b17217
DATA expBound<>+32(SB)/4, $0xc2ce8ecf // x < -0x1.9d1d9ep6: least subnormal
DATA expBound<>+36(SB)/4, $0xc2ce8ecf
DATA expBound<>+40(SB)/4, $0xc2ce8ecf
DATA expBound<>+44(SB)/4, $0xc2ce8ecf
DATA expBound<>+48(SB)/4, $0xc2ce8ecf
DATA expBound<>+52(SB)/4, $0xc2ce8ecf
DATA expBound<>+56(SB)/4, $0xc2ce8ecf
DATA expBound<>+60(SB)/4, $0xc2ce8ecf
DATA expBound<>+64(SB)/4, $0xc2cff1b4 // x < -0x1.9fe368p6: 0
DATA expBound<>+68(SB)/4, $0xc2cff1b4
DATA expBound<>+72(SB)/4, $0xc2cff1b4
DATA expBound<>+76(SB)/4, $0xc2cff1b4
DATA expBound<>+80(SB)/4, $0xc2cff1b4
DATA expBound<>+84(SB)/4, $0xc2cff1b4
DATA expBound<>+88(SB)/4, $0xc2cff1b4
DATA expBound<>+92(SB)/4, $0xc2cff1b4
DATA expBound<>+96(SB)/4, $0x7f800000 // +Inf
DATA expBound<>+100(SB)/4, $0x7f800000
DATA expBound<>+104(SB)/4, $0x7f800000
DATA expBound<>+108(SB)/4, $0x7f800000
DATA expBound<>+112(SB)/4, $0x7f800000
DATA expBound<>+116(SB)/4, $0x7f800000
DATA expBound<>+120(SB)/4, $0x7f800000
DATA expBound<>+124(SB)/4, $0x7f800000
DATA expBound<>+128(SB)/4, $0x00000001 // 0x1p-149
DATA expBound<>+132(SB)/4, $0x00000001
DATA expBound<>+136(SB)/4, $0x00000001
DATA expBound<>+140(SB)/4, $0x00000001
DATA expBound<>+144(SB)/4, $0x00000001
DATA expBound<>+148(SB)/4, $0x00000001
DATA expBound<>+152(SB)/4, $0x00000001
DATA expBound<>+156(SB)/4, $0x00000001
GLOBL expBound<>(SB), RODATA|NOPTR, $160

// EXPF4 computes glibc's expf of the four float32 at off(DI) into OUT (an
// XMM register) in four float64 lanes. Y8-Y14 hold InvLn2N, shift, C0, C1,
// C2, 1 and 31 (see the prologue), BX the table; Y0-Y7 are temporaries.
#define EXPF4(off, OUT) \
	VCVTPS2PD off(DI), Y0; \
	VMOVAPD Y9, Y1; \
	VFMADD231PD Y0, Y8, Y1; \
	VSUBPD Y9, Y1, Y2; \
	VFMSUB231PD Y0, Y8, Y2; \
	VPAND Y14, Y1, Y3; \
	VPCMPEQQ Y4, Y4, Y4; \
	VPGATHERQQ Y4, (BX)(Y3*8), Y5; \
	VPSLLQ $47, Y1, Y1; \
	VPADDQ Y1, Y5, Y5; \
	VMOVAPD Y11, Y6; \
	VFMADD231PD Y2, Y10, Y6; \
	VMULPD Y2, Y2, Y7; \
	VFMADD213PD Y13, Y12, Y2; \
	VFMADD231PD Y7, Y6, Y2; \
	VMULPD Y5, Y2, Y2; \
	VCVTPD2PSY Y2, OUT

// EXPSPECIAL8 blends glibc's special cases into the eight results in RES
// (a YMM register) for the eight inputs at 0(DI), in glibc's order of
// precedence: +Inf above the overflow bound, the least subnormal below
// -103.28, 0 below -103.97 (also for -Inf), x+x for NaN. SI holds
// expBound; Y0-Y2 are temporaries.
#define EXPSPECIAL8(RES) \
	VMOVUPS (DI), Y0; \
	VCMPPS $0x1e, 0(SI), Y0, Y1; \
	VBLENDVPS Y1, 96(SI), RES, RES; \
	VCMPPS $0x11, 32(SI), Y0, Y1; \
	VBLENDVPS Y1, 128(SI), RES, RES; \
	VCMPPS $0x11, 64(SI), Y0, Y1; \
	VANDNPS RES, Y1, RES; \
	VCMPPS $3, Y0, Y0, Y1; \
	VADDPS Y0, Y0, Y2; \
	VBLENDVPS Y1, Y2, RES, RES

// func exp32sAVX2(x *float32, n int)
// n is a positive multiple of 8: x[i] = Exp32(x[i]).
TEXT ·exp32sAVX2(SB), NOSPLIT, $0-16
	MOVQ x+0(FP), DI
	MOVQ n+8(FP), CX
	LEAQ expConst<>(SB), AX
	LEAQ expTab<>(SB), BX
	LEAQ expBound<>(SB), SI
	VMOVUPD 0(AX), Y8    // InvLn2N
	VMOVUPD 32(AX), Y9   // shift
	VMOVUPD 64(AX), Y10  // C0
	VMOVUPD 96(AX), Y11  // C1
	VMOVUPD 128(AX), Y12 // C2
	VMOVUPD 160(AX), Y13 // 1
	VMOVDQU 192(AX), Y14 // 31

loop:
	EXPF4(0, X15)
	EXPF4(16, X6)
	VINSERTF128 $1, X6, Y15, Y15 // the 8 results
	EXPSPECIAL8(Y15)
	VMOVUPS Y15, (DI)
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ loop
	VZEROUPPER
	RET

// EXPF8 is EXPF4 for eight float32 at off(DI) in a ZMM register's eight
// float64 lanes, with the table in registers: Z20-Z23 hold its four
// quarters, VPERMI2PD picks from each half by k's low four bits, and bit
// 4 of k chooses the half. X, K, R, T are its four registers (the result,
// eight float32, ends in R's low half); Z24-Z30 hold InvLn2N, shift, C0,
// C1, C2, 1 and 16.
#define EXPF8(off, X, K, R, T, YR, M) \
	VCVTPS2PD off(DI), X; \
	VMOVAPD Z25, K; \
	VFMADD231PD X, Z24, K; \
	VSUBPD Z25, K, R; \
	VFMSUB231PD X, Z24, R; \
	VMOVDQA64 K, X; \
	VPERMI2PD Z21, Z20, X; \
	VMOVDQA64 K, T; \
	VPERMI2PD Z23, Z22, T; \
	VPTESTMQ Z30, K, M; \
	VBLENDMPD T, X, M, X; \
	VPSLLQ $47, K, K; \
	VPADDQ K, X, X; \
	VMOVAPD Z27, K; \
	VFMADD231PD R, Z26, K; \
	VMULPD R, R, T; \
	VFMADD213PD Z29, Z28, R; \
	VFMADD231PD T, K, R; \
	VMULPD X, R, R; \
	VCVTPD2PS R, YR

// EXPSPECIAL16 is EXPSPECIAL8 for sixteen inputs at off(DI) and their
// results in RES (a ZMM register), with the bounds in Z16-Z19 and Z31.
#define EXPSPECIAL16(off, RES) \
	VMOVUPS off(DI), Z0; \
	VCMPPS $0x1e, Z16, Z0, K1; \
	VMOVAPS Z19, K1, RES; \
	VCMPPS $0x11, Z17, Z0, K2; \
	VMOVAPS Z31, K2, RES; \
	VCMPPS $0x05, Z18, Z0, K3; \
	VMOVAPS.Z RES, K3, RES; \
	VCMPPS $3, Z0, Z0, K4; \
	VADDPS Z0, Z0, K4, RES

// func exp32sAVX512(x *float32, n int)
// n is a positive multiple of 32: x[i] = Exp32(x[i]), as exp32sAVX2 does
// it, four chains of eight float64 lanes side by side (each is one long
// dependent chain: one at a time leaves the cores waiting on latency).
TEXT ·exp32sAVX512(SB), NOSPLIT, $0-16
	MOVQ x+0(FP), DI
	MOVQ n+8(FP), CX
	LEAQ expConst<>(SB), AX
	LEAQ expTab<>(SB), BX
	LEAQ expBound<>(SB), SI
	VMOVUPD 0(BX), Z20
	VMOVUPD 64(BX), Z21
	VMOVUPD 128(BX), Z22
	VMOVUPD 192(BX), Z23
	VBROADCASTSD 0(AX), Z24   // InvLn2N
	VBROADCASTSD 32(AX), Z25  // shift
	VBROADCASTSD 64(AX), Z26  // C0
	VBROADCASTSD 96(AX), Z27  // C1
	VBROADCASTSD 128(AX), Z28 // C2
	VBROADCASTSD 160(AX), Z29 // 1
	VPBROADCASTQ 224(AX), Z30 // 16
	VBROADCASTSS 0(SI), Z16   // overflow bound
	VBROADCASTSS 32(SI), Z17  // least-subnormal bound
	VBROADCASTSS 64(SI), Z18  // underflow bound
	VBROADCASTSS 96(SI), Z19  // +Inf
	VBROADCASTSS 128(SI), Z31 // least subnormal

exp512loop:
	EXPF8(0, Z0, Z4, Z8, Z12, Y8, K1)
	EXPF8(32, Z1, Z5, Z9, Z13, Y9, K2)
	EXPF8(64, Z2, Z6, Z10, Z14, Y10, K3)
	EXPF8(96, Z3, Z7, Z11, Z15, Y11, K4)
	VINSERTF64X4 $1, Y9, Z8, Z8
	VINSERTF64X4 $1, Y11, Z10, Z10
	EXPSPECIAL16(0, Z8)
	EXPSPECIAL16(64, Z10)
	VMOVUPS Z8, 0(DI)
	VMOVUPS Z10, 64(DI)
	ADDQ $128, DI
	SUBQ $32, CX
	JNZ exp512loop
	VZEROUPPER
	RET
