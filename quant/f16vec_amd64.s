//go:build amd64 && !noasm && gc

#include "textflag.h"

// func madF16AVX2(acc *float32, v *uint16, n int, s float32)
// n is a positive multiple of 8.
TEXT ·madF16AVX2(SB), NOSPLIT, $0-28
	MOVQ acc+0(FP), DI
	MOVQ v+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS s+24(FP), Y0

mad:
	VCVTPH2PS (SI), Y1
	VMOVUPS (DI), Y2
	VFMADD231PS Y0, Y1, Y2
	VCVTPS2PH $0, Y2, X3
	VCVTPH2PS X3, Y2
	VMOVUPS Y2, (DI)
	ADDQ $32, DI
	ADDQ $16, SI
	SUBQ $8, CX
	JNZ mad
	VZEROUPPER
	RET

// func scaleF16AVX2(acc *float32, n int, s float32)
// n is a positive multiple of 8.
TEXT ·scaleF16AVX2(SB), NOSPLIT, $0-20
	MOVQ acc+0(FP), DI
	MOVQ n+8(FP), CX
	VBROADCASTSS s+16(FP), Y0

scale:
	VMULPS (DI), Y0, Y2
	VCVTPS2PH $0, Y2, X3
	VCVTPH2PS X3, Y2
	VMOVUPS Y2, (DI)
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ scale
	VZEROUPPER
	RET

// func toF16AVX2(dst *uint16, src *float32, n int)
// n is a positive multiple of 8.
TEXT ·toF16AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX

conv:
	VMOVUPS (SI), Y1
	VCVTPS2PH $0, Y1, (DI)
	ADDQ $32, SI
	ADDQ $16, DI
	SUBQ $8, CX
	JNZ conv
	VZEROUPPER
	RET
