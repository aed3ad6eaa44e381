//go:build amd64 && !noasm && gc

#include "textflag.h"

// q8perm<> undoes the lane interleaving of vpackssdw/vpacksswb.
DATA q8perm<>+0x00(SB)/4, $0
DATA q8perm<>+0x04(SB)/4, $4
DATA q8perm<>+0x08(SB)/4, $1
DATA q8perm<>+0x0c(SB)/4, $5
DATA q8perm<>+0x10(SB)/4, $2
DATA q8perm<>+0x14(SB)/4, $6
DATA q8perm<>+0x18(SB)/4, $3
DATA q8perm<>+0x1c(SB)/4, $7
GLOBL q8perm<>(SB), RODATA|NOPTR, $32

// func quantizeQ8_0AVX2(x *float32, dst *byte, nb int) int
// Encodes nb > 0 blocks of 32 floats at x as Q8_0 at dst, as
// quantizeQ8_0Acts does, and returns how many it encoded: it stops before a
// block whose largest magnitude is not finite or for which 127/amax
// overflows, leaving that block to the Go code (whose conversions of Inf and
// NaN to integers it does not reproduce).
TEXT ·quantizeQ8_0AVX2(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ dst+8(FP), DI
	MOVQ nb+16(FP), CX
	MOVQ CX, R8
	MOVL $0x7fffffff, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	MOVL $0x42fe0000, AX // 127.0
	VMOVD AX, X10
	VMOVDQU q8perm<>(SB), Y11

loop:
	VMOVUPS 0(SI), Y1
	VMOVUPS 32(SI), Y2
	VMOVUPS 64(SI), Y3
	VMOVUPS 96(SI), Y4

	// amax: the largest |x| bits, compared as integers (they order as the
	// non-negative floats do, with Inf and NaN above every finite value).
	VANDPS       Y15, Y1, Y5
	VANDPS       Y15, Y2, Y6
	VANDPS       Y15, Y3, Y7
	VANDPS       Y15, Y4, Y8
	VPMAXSD      Y6, Y5, Y5
	VPMAXSD      Y8, Y7, Y7
	VPMAXSD      Y7, Y5, Y5
	VEXTRACTI128 $1, Y5, X6
	VPMAXSD      X6, X5, X5
	VPSHUFD      $0x4e, X5, X6
	VPMAXSD      X6, X5, X5
	VPSHUFD      $0xb1, X5, X6
	VPMAXSD      X6, X5, X5
	VMOVD        X5, AX
	CMPL         AX, $0x7f800000
	JAE          stop

	TESTL   AX, AX
	JEQ     zero
	VDIVSS  X10, X5, X6 // d = amax/127
	VDIVSS  X5, X10, X7 // id = 127/amax
	VMOVD   X7, AX
	CMPL    AX, $0x7f800000
	JAE     stop
	VCVTPS2PH $0, X6, X6 // round to nearest even, as F32ToF16
	VMOVD   X6, AX
	MOVW    AX, 0(DI)

	VBROADCASTSS X7, Y7
	VMULPS       Y7, Y1, Y1
	VMULPS       Y7, Y2, Y2
	VMULPS       Y7, Y3, Y3
	VMULPS       Y7, Y4, Y4
	VROUNDPS   $0, Y1, Y1 // half to even
	VROUNDPS   $0, Y2, Y2
	VROUNDPS   $0, Y3, Y3
	VROUNDPS   $0, Y4, Y4
	VCVTTPS2DQ Y1, Y1
	VCVTTPS2DQ Y2, Y2
	VCVTTPS2DQ Y3, Y3
	VCVTTPS2DQ Y4, Y4
	VPACKSSDW  Y2, Y1, Y1
	VPACKSSDW  Y4, Y3, Y3
	VPACKSSWB  Y3, Y1, Y1
	VPERMD     Y1, Y11, Y1
	VMOVDQU    Y1, 2(DI)
	JMP        next

zero:
	// amax = 0: d = 0 and q = 0.
	VPXOR   Y1, Y1, Y1
	MOVW    $0, 0(DI)
	VMOVDQU Y1, 2(DI)

next:
	ADDQ $128, SI
	ADDQ $34, DI
	DECQ CX
	JNZ  loop

stop:
	SUBQ CX, R8
	MOVQ R8, ret+24(FP)
	VZEROUPPER
	RET
