//go:build amd64 && !noasm && gc

#include "textflag.h"

// The float64 constants of Exp32 (exp.go), each in four lanes (a memory
// operand of a VEX instruction reads all four), 32 bytes apart: log2 e,
// 256.5, 256, ln 2, the Taylor coefficients 1/8! .. 1/2!, 1, and as an int64
// 767 (= 1023 - 256, the exponent bias less the offset that made t positive).
DATA expConst<>+0(SB)/8, $0x3ff71547652b82fe // log2e
DATA expConst<>+8(SB)/8, $0x3ff71547652b82fe
DATA expConst<>+16(SB)/8, $0x3ff71547652b82fe
DATA expConst<>+24(SB)/8, $0x3ff71547652b82fe
DATA expConst<>+32(SB)/8, $0x4070080000000000 // c2565
DATA expConst<>+40(SB)/8, $0x4070080000000000
DATA expConst<>+48(SB)/8, $0x4070080000000000
DATA expConst<>+56(SB)/8, $0x4070080000000000
DATA expConst<>+64(SB)/8, $0x4070000000000000 // c256
DATA expConst<>+72(SB)/8, $0x4070000000000000
DATA expConst<>+80(SB)/8, $0x4070000000000000
DATA expConst<>+88(SB)/8, $0x4070000000000000
DATA expConst<>+96(SB)/8, $0x3fe62e42fefa39ef // ln2
DATA expConst<>+104(SB)/8, $0x3fe62e42fefa39ef
DATA expConst<>+112(SB)/8, $0x3fe62e42fefa39ef
DATA expConst<>+120(SB)/8, $0x3fe62e42fefa39ef
DATA expConst<>+128(SB)/8, $0x3efa01a01a01a01a // c8
DATA expConst<>+136(SB)/8, $0x3efa01a01a01a01a
DATA expConst<>+144(SB)/8, $0x3efa01a01a01a01a
DATA expConst<>+152(SB)/8, $0x3efa01a01a01a01a
DATA expConst<>+160(SB)/8, $0x3f2a01a01a01a01a // c7
DATA expConst<>+168(SB)/8, $0x3f2a01a01a01a01a
DATA expConst<>+176(SB)/8, $0x3f2a01a01a01a01a
DATA expConst<>+184(SB)/8, $0x3f2a01a01a01a01a
DATA expConst<>+192(SB)/8, $0x3f56c16c16c16c17 // c6
DATA expConst<>+200(SB)/8, $0x3f56c16c16c16c17
DATA expConst<>+208(SB)/8, $0x3f56c16c16c16c17
DATA expConst<>+216(SB)/8, $0x3f56c16c16c16c17
DATA expConst<>+224(SB)/8, $0x3f81111111111111 // c5
DATA expConst<>+232(SB)/8, $0x3f81111111111111
DATA expConst<>+240(SB)/8, $0x3f81111111111111
DATA expConst<>+248(SB)/8, $0x3f81111111111111
DATA expConst<>+256(SB)/8, $0x3fa5555555555555 // c4
DATA expConst<>+264(SB)/8, $0x3fa5555555555555
DATA expConst<>+272(SB)/8, $0x3fa5555555555555
DATA expConst<>+280(SB)/8, $0x3fa5555555555555
DATA expConst<>+288(SB)/8, $0x3fc5555555555555 // c3
DATA expConst<>+296(SB)/8, $0x3fc5555555555555
DATA expConst<>+304(SB)/8, $0x3fc5555555555555
DATA expConst<>+312(SB)/8, $0x3fc5555555555555
DATA expConst<>+320(SB)/8, $0x3fe0000000000000 // c2
DATA expConst<>+328(SB)/8, $0x3fe0000000000000
DATA expConst<>+336(SB)/8, $0x3fe0000000000000
DATA expConst<>+344(SB)/8, $0x3fe0000000000000
DATA expConst<>+352(SB)/8, $0x3ff0000000000000 // one
DATA expConst<>+360(SB)/8, $0x3ff0000000000000
DATA expConst<>+368(SB)/8, $0x3ff0000000000000
DATA expConst<>+376(SB)/8, $0x3ff0000000000000
DATA expConst<>+384(SB)/8, $767 // bias
DATA expConst<>+392(SB)/8, $767
DATA expConst<>+400(SB)/8, $767
DATA expConst<>+408(SB)/8, $767
GLOBL expConst<>(SB), RODATA|NOPTR, $416

// The float32 bounds of Exp32: -104, 89 and +Inf.
DATA expBound<>+0(SB)/4, $0xc2d00000
DATA expBound<>+4(SB)/4, $0x42b20000
DATA expBound<>+8(SB)/4, $0x7f800000
GLOBL expBound<>(SB), RODATA|NOPTR, $12

// EXP4 computes Exp32 of the four float32 at off(DI) into OUT (an XMM
// register), as four float64 lanes, step for step: t = x·log2e + 256.5;
// n = float64(int32(t)) − 256; r = x − n·ln2; q = r·(1/8! + …) by Horner
// from 1/8! to 1; p = 1 + q; 2^n as the bits (n + 1023) << 52; p·2^n
// rounded to float32. X holds x as float64, Y2-Y5 and X3 are temporaries;
// Y8-Y12 and AX hold the constants (see the prologue).
#define EXP4(off, X, OUT) \
	VCVTPS2PD off(DI), X; \
	VMULPD Y8, X, Y2; \
	VADDPD Y9, Y2, Y2; \
	VCVTTPD2DQY Y2, X3; \
	VCVTDQ2PD X3, Y4; \
	VSUBPD Y10, Y4, Y4; \
	VMULPD Y11, Y4, Y5; \
	VSUBPD Y5, X, Y5; \
	VMULPD 128(AX), Y5, Y2; \
	VADDPD 160(AX), Y2, Y2; \
	VMULPD Y2, Y5, Y2; \
	VADDPD 192(AX), Y2, Y2; \
	VMULPD Y2, Y5, Y2; \
	VADDPD 224(AX), Y2, Y2; \
	VMULPD Y2, Y5, Y2; \
	VADDPD 256(AX), Y2, Y2; \
	VMULPD Y2, Y5, Y2; \
	VADDPD 288(AX), Y2, Y2; \
	VMULPD Y2, Y5, Y2; \
	VADDPD 320(AX), Y2, Y2; \
	VMULPD Y2, Y5, Y2; \
	VADDPD 352(AX), Y2, Y2; \
	VMULPD Y2, Y5, Y2; \
	VADDPD 352(AX), Y2, Y2; \
	VPMOVSXDQ X3, Y4; \
	VPADDQ Y12, Y4, Y4; \
	VPSLLQ $52, Y4, Y4; \
	VMULPD Y4, Y2, Y2; \
	VCVTPD2PSY Y2, OUT;

// func exp32sAVX2(x *float32, n int)
// n is a positive multiple of 8: x[i] = Exp32(x[i]), each operation as
// Exp32 does it, four lanes of float64 at a time.
TEXT ·exp32sAVX2(SB), NOSPLIT, $0-16
	MOVQ x+0(FP), DI
	MOVQ n+8(FP), CX
	LEAQ expConst<>(SB), AX
	VBROADCASTSD 0(AX), Y8   // log2e
	VBROADCASTSD 32(AX), Y9   // 256.5
	VBROADCASTSD 64(AX), Y10  // 256
	VBROADCASTSD 96(AX), Y11  // ln2
	VPBROADCASTQ 384(AX), Y12  // 767
	LEAQ expBound<>(SB), BX
	VBROADCASTSS 0(BX), Y13   // -104
	VBROADCASTSS 4(BX), Y14   // 89
	VBROADCASTSS 8(BX), Y15   // +Inf

loop:
	EXP4(0, Y0, X6)
	EXP4(16, Y1, X7)
	VINSERTF128 $1, X7, Y6, Y6  // the 8 results
	VMOVUPS (DI), Y0
	VCMPPS $0x1e, Y14, Y0, Y1     // x > 89
	VBLENDVPS Y1, Y15, Y6, Y6     // +Inf there
	VCMPPS $0x1e, Y13, Y0, Y1     // x > -104 (false for NaN)
	VANDPS Y1, Y6, Y6             // 0 elsewhere
	VCMPPS $3, Y0, Y0, Y1         // x is NaN
	VBLENDVPS Y1, Y0, Y6, Y6      // x there
	VMOVUPS Y6, (DI)
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ loop
	VZEROUPPER
	RET

// func exp32sAVX512(x *float32, n int)
// n is a positive multiple of 32: x[i] = Exp32(x[i]), each operation as
// Exp32 (and exp32sAVX2) does it, eight lanes of float64 a ZMM register and
// four registers' chains side by side (the Horner steps are one dependent
// chain per lane: one at a time leaves the cores waiting on latency).
TEXT ·exp32sAVX512(SB), NOSPLIT, $0-16
	MOVQ x+0(FP), DI
	MOVQ n+8(FP), CX
	LEAQ expConst<>(SB), AX
	VBROADCASTSD 0(AX), Z24   // log2e
	VBROADCASTSD 32(AX), Z25  // 256.5
	VBROADCASTSD 64(AX), Z26  // 256
	VBROADCASTSD 96(AX), Z27  // ln2
	VPBROADCASTQ 384(AX), Z28 // 767
	LEAQ expBound<>(SB), BX
	VBROADCASTSS 0(BX), Z29   // -104
	VBROADCASTSS 4(BX), Z30   // 89
	VBROADCASTSS 8(BX), Z31   // +Inf

exp512loop:
	VCVTPS2PD 0(DI), Z0
	VCVTPS2PD 32(DI), Z1
	VCVTPS2PD 64(DI), Z2
	VCVTPS2PD 96(DI), Z3
	VMULPD Z24, Z0, Z4
	VMULPD Z24, Z1, Z5
	VMULPD Z24, Z2, Z6
	VMULPD Z24, Z3, Z7
	VADDPD Z25, Z4, Z4
	VADDPD Z25, Z5, Z5
	VADDPD Z25, Z6, Z6
	VADDPD Z25, Z7, Z7
	VCVTTPD2DQ Z4, Y8
	VCVTTPD2DQ Z5, Y9
	VCVTTPD2DQ Z6, Y10
	VCVTTPD2DQ Z7, Y11
	VCVTDQ2PD Y8, Z12
	VCVTDQ2PD Y9, Z13
	VCVTDQ2PD Y10, Z14
	VCVTDQ2PD Y11, Z15
	VSUBPD Z26, Z12, Z12
	VSUBPD Z26, Z13, Z13
	VSUBPD Z26, Z14, Z14
	VSUBPD Z26, Z15, Z15
	VMULPD Z27, Z12, Z12
	VMULPD Z27, Z13, Z13
	VMULPD Z27, Z14, Z14
	VMULPD Z27, Z15, Z15
	VSUBPD Z12, Z0, Z16
	VSUBPD Z13, Z1, Z17
	VSUBPD Z14, Z2, Z18
	VSUBPD Z15, Z3, Z19
	VMULPD.BCST 128(AX), Z16, Z4
	VMULPD.BCST 128(AX), Z17, Z5
	VMULPD.BCST 128(AX), Z18, Z6
	VMULPD.BCST 128(AX), Z19, Z7
	VADDPD.BCST 160(AX), Z4, Z4
	VADDPD.BCST 160(AX), Z5, Z5
	VADDPD.BCST 160(AX), Z6, Z6
	VADDPD.BCST 160(AX), Z7, Z7
	VMULPD Z4, Z16, Z4
	VMULPD Z5, Z17, Z5
	VMULPD Z6, Z18, Z6
	VMULPD Z7, Z19, Z7
	VADDPD.BCST 192(AX), Z4, Z4
	VADDPD.BCST 192(AX), Z5, Z5
	VADDPD.BCST 192(AX), Z6, Z6
	VADDPD.BCST 192(AX), Z7, Z7
	VMULPD Z4, Z16, Z4
	VMULPD Z5, Z17, Z5
	VMULPD Z6, Z18, Z6
	VMULPD Z7, Z19, Z7
	VADDPD.BCST 224(AX), Z4, Z4
	VADDPD.BCST 224(AX), Z5, Z5
	VADDPD.BCST 224(AX), Z6, Z6
	VADDPD.BCST 224(AX), Z7, Z7
	VMULPD Z4, Z16, Z4
	VMULPD Z5, Z17, Z5
	VMULPD Z6, Z18, Z6
	VMULPD Z7, Z19, Z7
	VADDPD.BCST 256(AX), Z4, Z4
	VADDPD.BCST 256(AX), Z5, Z5
	VADDPD.BCST 256(AX), Z6, Z6
	VADDPD.BCST 256(AX), Z7, Z7
	VMULPD Z4, Z16, Z4
	VMULPD Z5, Z17, Z5
	VMULPD Z6, Z18, Z6
	VMULPD Z7, Z19, Z7
	VADDPD.BCST 288(AX), Z4, Z4
	VADDPD.BCST 288(AX), Z5, Z5
	VADDPD.BCST 288(AX), Z6, Z6
	VADDPD.BCST 288(AX), Z7, Z7
	VMULPD Z4, Z16, Z4
	VMULPD Z5, Z17, Z5
	VMULPD Z6, Z18, Z6
	VMULPD Z7, Z19, Z7
	VADDPD.BCST 320(AX), Z4, Z4
	VADDPD.BCST 320(AX), Z5, Z5
	VADDPD.BCST 320(AX), Z6, Z6
	VADDPD.BCST 320(AX), Z7, Z7
	VMULPD Z4, Z16, Z4
	VMULPD Z5, Z17, Z5
	VMULPD Z6, Z18, Z6
	VMULPD Z7, Z19, Z7
	VADDPD.BCST 352(AX), Z4, Z4
	VADDPD.BCST 352(AX), Z5, Z5
	VADDPD.BCST 352(AX), Z6, Z6
	VADDPD.BCST 352(AX), Z7, Z7
	VMULPD Z4, Z16, Z4
	VMULPD Z5, Z17, Z5
	VMULPD Z6, Z18, Z6
	VMULPD Z7, Z19, Z7
	VADDPD.BCST 352(AX), Z4, Z4
	VADDPD.BCST 352(AX), Z5, Z5
	VADDPD.BCST 352(AX), Z6, Z6
	VADDPD.BCST 352(AX), Z7, Z7
	VPMOVSXDQ Y8, Z12
	VPMOVSXDQ Y9, Z13
	VPMOVSXDQ Y10, Z14
	VPMOVSXDQ Y11, Z15
	VPADDQ Z28, Z12, Z12
	VPADDQ Z28, Z13, Z13
	VPADDQ Z28, Z14, Z14
	VPADDQ Z28, Z15, Z15
	VPSLLQ $52, Z12, Z12
	VPSLLQ $52, Z13, Z13
	VPSLLQ $52, Z14, Z14
	VPSLLQ $52, Z15, Z15
	VMULPD Z12, Z4, Z4
	VMULPD Z13, Z5, Z5
	VMULPD Z14, Z6, Z6
	VMULPD Z15, Z7, Z7
	VCVTPD2PS Z4, Y4
	VCVTPD2PS Z5, Y5
	VCVTPD2PS Z6, Y6
	VCVTPD2PS Z7, Y7
	VINSERTF64X4 $1, Y5, Z4, Z4
	VINSERTF64X4 $1, Y7, Z6, Z6
	VMOVUPS 0(DI), Z0
	VCMPPS $0x1e, Z30, Z0, K1 // x > 89
	VMOVAPS Z31, K1, Z4 // +Inf there
	VCMPPS $0x1e, Z29, Z0, K2 // x > -104 (false for NaN)
	VMOVAPS.Z Z4, K2, Z4 // 0 elsewhere
	VCMPPS $3, Z0, Z0, K3 // x is NaN
	VMOVAPS Z0, K3, Z4 // x there
	VMOVUPS Z4, 0(DI)
	VMOVUPS 64(DI), Z0
	VCMPPS $0x1e, Z30, Z0, K1 // x > 89
	VMOVAPS Z31, K1, Z6 // +Inf there
	VCMPPS $0x1e, Z29, Z0, K2 // x > -104 (false for NaN)
	VMOVAPS.Z Z6, K2, Z6 // 0 elsewhere
	VCMPPS $3, Z0, Z0, K3 // x is NaN
	VMOVAPS Z0, K3, Z6 // x there
	VMOVUPS Z6, 64(DI)
	ADDQ $128, DI
	SUBQ $32, CX
	JNZ exp512loop
	VZEROUPPER
	RET
