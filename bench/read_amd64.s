//go:build amd64 && !noasm && gc

#include "textflag.h"

// func readAVX2(base unsafe.Pointer, stride, n, streams int) uint64
// Reads streams regions of n bytes each (n a multiple of 128), stride bytes
// apart, advancing all of them 128 bytes per step, and folds the data with
// XOR so the loads cannot be elided.
TEXT ·readAVX2(SB), NOSPLIT, $0-40
	MOVQ base+0(FP), SI
	MOVQ stride+8(FP), DX
	MOVQ n+16(FP), CX
	MOVQ streams+24(FP), BX
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	XORQ AX, AX
	TESTQ CX, CX
	JZ done

step:
	MOVQ SI, DI
	ADDQ AX, DI
	MOVQ BX, R8

stream:
	VPXOR (DI), Y0, Y0
	VPXOR 32(DI), Y1, Y1
	VPXOR 64(DI), Y2, Y2
	VPXOR 96(DI), Y3, Y3
	ADDQ DX, DI
	DECQ R8
	JNZ stream
	ADDQ $128, AX
	CMPQ AX, CX
	JB step

done:
	VPXOR Y1, Y0, Y0
	VPXOR Y3, Y2, Y2
	VPXOR Y2, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPXOR X1, X0, X0
	VPSRLDQ $8, X0, X1
	VPXOR X1, X0, X0
	MOVQ X0, AX
	VZEROUPPER
	MOVQ AX, ret+32(FP)
	RET
