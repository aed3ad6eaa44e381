//go:build amd64 && !noasm && gc

#include "textflag.h"

// The constants of expf32 in silu.go, as float32 bits.
DATA siluConst<>+0(SB)/4, $0xc2ae0000  // expClampLo -87
DATA siluConst<>+4(SB)/4, $0x42b20000  // expClampHi 89
DATA siluConst<>+8(SB)/4, $0x3fb8aa3b  // expLog2e
DATA siluConst<>+12(SB)/4, $0x3f318000 // expC1
DATA siluConst<>+16(SB)/4, $0xb95e8083 // expC2
DATA siluConst<>+20(SB)/4, $0x39506967 // expP0
DATA siluConst<>+24(SB)/4, $0x3ab743ce // expP1
DATA siluConst<>+28(SB)/4, $0x3c088908 // expP2
DATA siluConst<>+32(SB)/4, $0x3d2aa9c1 // expP3
DATA siluConst<>+36(SB)/4, $0x3e2aaaaa // expP4
DATA siluConst<>+40(SB)/4, $0x3f000000 // expP5
DATA siluConst<>+44(SB)/4, $0x3f800000 // 1
DATA siluConst<>+48(SB)/4, $0x80000000 // sign bit
DATA siluConst<>+52(SB)/4, $127        // exponent bias
GLOBL siluConst<>(SB), RODATA|NOPTR, $56

// func siluMulAVX2(h, u *float32, n int)
// n is a positive multiple of 8: h[i] = h[i] / (1 + expf32(-h[i])) * u[i],
// each operation as siluMulGo does it.
TEXT ·siluMulAVX2(SB), NOSPLIT, $0-24
	MOVQ h+0(FP), DI
	MOVQ u+8(FP), SI
	MOVQ n+16(FP), CX
	LEAQ siluConst<>(SB), AX
	VBROADCASTSS 0(AX), Y8   // clamp lo
	VBROADCASTSS 4(AX), Y9   // clamp hi
	VBROADCASTSS 8(AX), Y10  // log2e
	VBROADCASTSS 12(AX), Y11 // c1
	VBROADCASTSS 16(AX), Y12 // c2
	VBROADCASTSS 44(AX), Y13 // 1
	VBROADCASTSS 48(AX), Y14 // sign
	VPBROADCASTD 52(AX), Y15 // 127

loop:
	VMOVUPS (DI), Y0          // g
	VXORPS Y14, Y0, Y1        // x = -g
	VMAXPS Y8, Y1, Y1         // x = max(x, lo)
	VMINPS Y9, Y1, Y1         // x = min(x, hi)
	VMULPS Y10, Y1, Y2        // t = x * log2e
	VROUNDPS $0, Y2, Y2       // n = round to even
	VFNMADD231PS Y11, Y2, Y1  // r = x - n*c1
	VFNMADD231PS Y12, Y2, Y1  // r = r - n*c2
	VBROADCASTSS 20(AX), Y3   // p = P0
	VBROADCASTSS 24(AX), Y4
	VFMADD213PS Y4, Y1, Y3    // p = p*r + P1
	VBROADCASTSS 28(AX), Y4
	VFMADD213PS Y4, Y1, Y3    // p = p*r + P2
	VBROADCASTSS 32(AX), Y4
	VFMADD213PS Y4, Y1, Y3    // p = p*r + P3
	VBROADCASTSS 36(AX), Y4
	VFMADD213PS Y4, Y1, Y3    // p = p*r + P4
	VBROADCASTSS 40(AX), Y4
	VFMADD213PS Y4, Y1, Y3    // p = p*r + P5
	VMULPS Y1, Y1, Y4         // r2 = r*r
	VFMADD213PS Y1, Y4, Y3    // y = p*r2 + r
	VADDPS Y13, Y3, Y3        // y = y + 1
	VCVTPS2DQ Y2, Y5          // int(n) (n is whole)
	VPADDD Y15, Y5, Y5
	VPSLLD $23, Y5, Y5        // 2^n
	VMULPS Y5, Y3, Y3         // e = y * 2^n
	VADDPS Y13, Y3, Y3        // d = 1 + e
	VDIVPS Y3, Y0, Y0         // g / d
	VMULPS (SI), Y0, Y0       // * u
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	SUBQ $8, CX
	JNZ loop
	VZEROUPPER
	RET
