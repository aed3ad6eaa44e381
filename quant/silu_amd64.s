//go:build amd64 && !noasm && gc

#include "textflag.h"

// The constants of expAVX2 (silu.go), eight copies each so that the
// instructions can take them as memory operands.
// 0: shift 1.5·2^23
DATA siluC<>+0(SB)/4, $0x4b400000
DATA siluC<>+4(SB)/4, $0x4b400000
DATA siluC<>+8(SB)/4, $0x4b400000
DATA siluC<>+12(SB)/4, $0x4b400000
DATA siluC<>+16(SB)/4, $0x4b400000
DATA siluC<>+20(SB)/4, $0x4b400000
DATA siluC<>+24(SB)/4, $0x4b400000
DATA siluC<>+28(SB)/4, $0x4b400000
// 32: log2 e
DATA siluC<>+32(SB)/4, $0x3fb8aa3b
DATA siluC<>+36(SB)/4, $0x3fb8aa3b
DATA siluC<>+40(SB)/4, $0x3fb8aa3b
DATA siluC<>+44(SB)/4, $0x3fb8aa3b
DATA siluC<>+48(SB)/4, $0x3fb8aa3b
DATA siluC<>+52(SB)/4, $0x3fb8aa3b
DATA siluC<>+56(SB)/4, $0x3fb8aa3b
DATA siluC<>+60(SB)/4, $0x3fb8aa3b
// 64: ln 2, high part
DATA siluC<>+64(SB)/4, $0x3f317200
DATA siluC<>+68(SB)/4, $0x3f317200
DATA siluC<>+72(SB)/4, $0x3f317200
DATA siluC<>+76(SB)/4, $0x3f317200
DATA siluC<>+80(SB)/4, $0x3f317200
DATA siluC<>+84(SB)/4, $0x3f317200
DATA siluC<>+88(SB)/4, $0x3f317200
DATA siluC<>+92(SB)/4, $0x3f317200
// 96: ln 2, low part
DATA siluC<>+96(SB)/4, $0x35bfbe8e
DATA siluC<>+100(SB)/4, $0x35bfbe8e
DATA siluC<>+104(SB)/4, $0x35bfbe8e
DATA siluC<>+108(SB)/4, $0x35bfbe8e
DATA siluC<>+112(SB)/4, $0x35bfbe8e
DATA siluC<>+116(SB)/4, $0x35bfbe8e
DATA siluC<>+120(SB)/4, $0x35bfbe8e
DATA siluC<>+124(SB)/4, $0x35bfbe8e
// 128: P0
DATA siluC<>+128(SB)/4, $0x3c072010
DATA siluC<>+132(SB)/4, $0x3c072010
DATA siluC<>+136(SB)/4, $0x3c072010
DATA siluC<>+140(SB)/4, $0x3c072010
DATA siluC<>+144(SB)/4, $0x3c072010
DATA siluC<>+148(SB)/4, $0x3c072010
DATA siluC<>+152(SB)/4, $0x3c072010
DATA siluC<>+156(SB)/4, $0x3c072010
// 160: P1
DATA siluC<>+160(SB)/4, $0x3d2b9f17
DATA siluC<>+164(SB)/4, $0x3d2b9f17
DATA siluC<>+168(SB)/4, $0x3d2b9f17
DATA siluC<>+172(SB)/4, $0x3d2b9f17
DATA siluC<>+176(SB)/4, $0x3d2b9f17
DATA siluC<>+180(SB)/4, $0x3d2b9f17
DATA siluC<>+184(SB)/4, $0x3d2b9f17
DATA siluC<>+188(SB)/4, $0x3d2b9f17
// 192: P2
DATA siluC<>+192(SB)/4, $0x3e2aaf33
DATA siluC<>+196(SB)/4, $0x3e2aaf33
DATA siluC<>+200(SB)/4, $0x3e2aaf33
DATA siluC<>+204(SB)/4, $0x3e2aaf33
DATA siluC<>+208(SB)/4, $0x3e2aaf33
DATA siluC<>+212(SB)/4, $0x3e2aaf33
DATA siluC<>+216(SB)/4, $0x3e2aaf33
DATA siluC<>+220(SB)/4, $0x3e2aaf33
// 224: P3
DATA siluC<>+224(SB)/4, $0x3efffedb
DATA siluC<>+228(SB)/4, $0x3efffedb
DATA siluC<>+232(SB)/4, $0x3efffedb
DATA siluC<>+236(SB)/4, $0x3efffedb
DATA siluC<>+240(SB)/4, $0x3efffedb
DATA siluC<>+244(SB)/4, $0x3efffedb
DATA siluC<>+248(SB)/4, $0x3efffedb
DATA siluC<>+252(SB)/4, $0x3efffedb
// 256: P4
DATA siluC<>+256(SB)/4, $0x3f7ffff6
DATA siluC<>+260(SB)/4, $0x3f7ffff6
DATA siluC<>+264(SB)/4, $0x3f7ffff6
DATA siluC<>+268(SB)/4, $0x3f7ffff6
DATA siluC<>+272(SB)/4, $0x3f7ffff6
DATA siluC<>+276(SB)/4, $0x3f7ffff6
DATA siluC<>+280(SB)/4, $0x3f7ffff6
DATA siluC<>+284(SB)/4, $0x3f7ffff6
// 288: 1.0
DATA siluC<>+288(SB)/4, $0x3f800000
DATA siluC<>+292(SB)/4, $0x3f800000
DATA siluC<>+296(SB)/4, $0x3f800000
DATA siluC<>+300(SB)/4, $0x3f800000
DATA siluC<>+304(SB)/4, $0x3f800000
DATA siluC<>+308(SB)/4, $0x3f800000
DATA siluC<>+312(SB)/4, $0x3f800000
DATA siluC<>+316(SB)/4, $0x3f800000
// 320: |x| mask
DATA siluC<>+320(SB)/4, $0x7fffffff
DATA siluC<>+324(SB)/4, $0x7fffffff
DATA siluC<>+328(SB)/4, $0x7fffffff
DATA siluC<>+332(SB)/4, $0x7fffffff
DATA siluC<>+336(SB)/4, $0x7fffffff
DATA siluC<>+340(SB)/4, $0x7fffffff
DATA siluC<>+344(SB)/4, $0x7fffffff
DATA siluC<>+348(SB)/4, $0x7fffffff
// 352: 126
DATA siluC<>+352(SB)/4, $0x42fc0000
DATA siluC<>+356(SB)/4, $0x42fc0000
DATA siluC<>+360(SB)/4, $0x42fc0000
DATA siluC<>+364(SB)/4, $0x42fc0000
DATA siluC<>+368(SB)/4, $0x42fc0000
DATA siluC<>+372(SB)/4, $0x42fc0000
DATA siluC<>+376(SB)/4, $0x42fc0000
DATA siluC<>+380(SB)/4, $0x42fc0000
// 384: 192
DATA siluC<>+384(SB)/4, $0x43400000
DATA siluC<>+388(SB)/4, $0x43400000
DATA siluC<>+392(SB)/4, $0x43400000
DATA siluC<>+396(SB)/4, $0x43400000
DATA siluC<>+400(SB)/4, $0x43400000
DATA siluC<>+404(SB)/4, $0x43400000
DATA siluC<>+408(SB)/4, $0x43400000
DATA siluC<>+412(SB)/4, $0x43400000
// 416: 0x82000000: s1, s2 shift for n ≤ 0
DATA siluC<>+416(SB)/4, $0x82000000
DATA siluC<>+420(SB)/4, $0x82000000
DATA siluC<>+424(SB)/4, $0x82000000
DATA siluC<>+428(SB)/4, $0x82000000
DATA siluC<>+432(SB)/4, $0x82000000
DATA siluC<>+436(SB)/4, $0x82000000
DATA siluC<>+440(SB)/4, $0x82000000
DATA siluC<>+444(SB)/4, $0x82000000
// 448: 0x7f000000: s1 = 2^127
DATA siluC<>+448(SB)/4, $0x7f000000
DATA siluC<>+452(SB)/4, $0x7f000000
DATA siluC<>+456(SB)/4, $0x7f000000
DATA siluC<>+460(SB)/4, $0x7f000000
DATA siluC<>+464(SB)/4, $0x7f000000
DATA siluC<>+468(SB)/4, $0x7f000000
DATA siluC<>+472(SB)/4, $0x7f000000
DATA siluC<>+476(SB)/4, $0x7f000000
GLOBL siluC<>(SB), RODATA|NOPTR, $480

// func siluMulAVX2(h, u *float32, n int)
// n is a positive multiple of 8: h[i] = ggml_v_silu(h[i]) * u[i], each
// operation as siluMulGo and expAVX2 do it, in ggml's order (ggml_v_expf of
// the AVX2 build, its slower path only for groups with a lane of |n| > 126).
TEXT ·siluMulAVX2(SB), NOSPLIT, $0-24
	MOVQ h+0(FP), DI
	MOVQ u+8(FP), SI
	MOVQ n+16(FP), CX
	LEAQ siluC<>(SB), AX
	VXORPS Y15, Y15, Y15   // 0
	VMOVUPS 0(AX), Y14     // shift
	VMOVUPS 288(AX), Y13   // 1.0
	VMOVUPS 320(AX), Y12   // |x| mask

loop:
	VMOVUPS (DI), Y0               // g
	VSUBPS Y0, Y15, Y1             // x = 0 - g
	VMOVAPS Y14, Y2
	VFMADD231PS 32(AX), Y1, Y2     // z = fma(x, log2e, shift)
	VSUBPS Y14, Y2, Y3             // n = z - shift
	VFNMADD231PS 64(AX), Y3, Y1    // b = fnmadd(n, ln2hi, x)
	VFNMADD231PS 96(AX), Y3, Y1    // b = fnmadd(n, ln2lo, b)
	VPSLLD $23, Y2, Y4             // e = bits(z) << 23
	VPADDD Y13, Y4, Y5             // k = e + bits(1.0)
	VANDPS Y12, Y3, Y6             // |n|
	VCMPPS $0x1e, 352(AX), Y6, Y7  // c = |n| > 126 (GT_OQ)
	VMULPS Y1, Y1, Y8              // u = b*b
	VMOVUPS 160(AX), Y9
	VFMADD231PS 128(AX), Y1, Y9    // t1 = fma(P0, b, P1)
	VMOVUPS 224(AX), Y10
	VFMADD231PS 192(AX), Y1, Y10   // t2 = fma(P2, b, P3)
	VFMADD231PS Y9, Y8, Y10        // t2 = fma(t1, u, t2)
	VMULPS 256(AX), Y1, Y11        // P4*b
	VFMADD231PS Y10, Y8, Y11       // j = fma(t2, u, P4*b)
	VMOVMSKPS Y7, BX
	TESTL BX, BX
	JNZ slow
	VFMADD231PS Y11, Y5, Y5        // e^x = fma(j, k, k)

done:
	VADDPS Y13, Y5, Y5             // d = 1 + e^x
	VDIVPS Y5, Y0, Y0              // g / d
	VMULPS (SI), Y0, Y0            // * u
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	SUBQ $8, CX
	JNZ loop
	VZEROUPPER
	RET

// Some lane has |n| > 126: 2^n = s1*s2, or s1*s1 where |n| > 192.
slow:
	VCMPPS $0x12, Y15, Y3, Y8      // n <= 0 (LE_OQ)
	VANDPS 416(AX), Y8, Y8         // g = 0x82000000 where n <= 0
	VPADDD 448(AX), Y8, Y9         // s1 = g + 0x7f000000
	VPSUBD Y8, Y4, Y10             // s2 = e - g
	VCMPPS $0x1e, 384(AX), Y6, Y6  // |n| > 192
	VFMADD231PS Y11, Y10, Y10      // fma(s2, j, s2)
	VMULPS Y9, Y10, Y10            // * s1
	VFMADD231PS Y11, Y5, Y5        // fma(k, j, k)
	VBLENDVPS Y7, Y10, Y5, Y5      // |n| > 126 ? s1*s2 form
	VMULPS Y9, Y9, Y9              // s1*s1
	VBLENDVPS Y6, Y9, Y5, Y5       // |n| > 192 ? s1*s1
	JMP done
