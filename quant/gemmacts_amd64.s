//go:build amd64 && !noasm && gc

#include "textflag.h"

// func gemmActsPutAVX2(src *byte, nb int, dst *byte, ds int, side *uint32, ss int, off int)
// Per block: the quants copied; Σq from VPSADBW of the quants biased by
// 128 (unsigned, so the sums of eight fit a byte lane's word); the scale by
// VCVTPH2PS, except for Inf and NaN, whose bits are moved up by integer
// operations as F16ToF32 does (VCVTPH2PS would quiet a signalling NaN).
TEXT ·gemmActsPutAVX2(SB), NOSPLIT, $0-56
	MOVQ src+0(FP), SI
	MOVQ nb+8(FP), CX
	MOVQ dst+16(FP), DI
	MOVQ ds+24(FP), DX
	MOVQ side+32(FP), R8
	MOVQ ss+40(FP), R9
	MOVQ off+48(FP), R10
	MOVL $0x80808080, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	VPXOR Y14, Y14, Y14

loop:
	VMOVDQU 2(SI), Y0
	VMOVDQU Y0, (DI)
	VPXOR   Y15, Y0, Y1
	VPSADBW Y14, Y1, Y1
	VEXTRACTI128 $1, Y1, X2
	VPADDQ  X2, X1, X1
	VPSHUFD $0x4e, X1, X2
	VPADDQ  X2, X1, X1
	VMOVD   X1, AX
	SUBL    $4096, AX // Σ(q+128) - 32·128
	IMULL   R10, AX
	NEGL    AX
	MOVL    AX, 4(R8)

	MOVWLZX 0(SI), AX
	MOVL    AX, BX
	ANDL    $0x7c00, BX
	CMPL    BX, $0x7c00
	JEQ     special
	VMOVD   AX, X3
	VCVTPH2PS X3, X3
	VMOVD   X3, 0(R8)
	JMP     next

special:
	MOVL AX, BX
	ANDL $0x8000, BX
	SHLL $16, BX
	ANDL $0x3ff, AX
	SHLL $13, AX
	ORL  BX, AX
	ORL  $0x7f800000, AX
	MOVL AX, 0(R8)

next:
	ADDQ $34, SI
	ADDQ DX, DI
	ADDQ R9, R8
	DECQ CX
	JNZ  loop
	VZEROUPPER
	RET

// func q4kBsumPairsAVX(a *byte, arb, n, nb int, bp *int16)
// For each activation row i (of n, arb bytes apart) and super-block b (of
// nb, q8_KBytes = 292 apart), the 8 sums of adjacent pairs of the block's
// 16 int16 bsums (at byte 260) into bp[(b*n+i)*8:], one VPHADDW a block.
TEXT ·q4kBsumPairsAVX(SB), NOSPLIT, $0-40
	MOVQ a+0(FP), SI
	MOVQ arb+8(FP), DX
	MOVQ n+16(FP), CX
	MOVQ nb+24(FP), BX
	MOVQ bp+32(FP), DI
	MOVQ CX, R8
	SHLQ $4, R8 // n*16: bp's bytes per super-block
	TESTQ CX, CX
	JZ bsumDone
	TESTQ BX, BX
	JZ bsumDone

bsumRow:
	MOVQ SI, R9 // the row's super-block
	MOVQ DI, R10 // its first output
	MOVQ BX, R11

bsumBlock:
	VMOVDQU 260(R9), X0
	VMOVDQU 276(R9), X1
	VPHADDW X1, X0, X0
	VMOVDQU X0, (R10)
	ADDQ $292, R9
	ADDQ R8, R10
	DECQ R11
	JNZ bsumBlock
	ADDQ DX, SI
	ADDQ $16, DI
	DECQ CX
	JNZ bsumRow

bsumDone:
	RET
