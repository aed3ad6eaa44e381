//go:build amd64 && !noasm && gc

#include "textflag.h"

// The Q8_K activation quantizer of the K-quant products (quantizeQ8_K in
// quantize.go), byte for byte.

// gkq8perm<> undoes the lane interleaving of vpackssdw/vpacksswb.
DATA gkq8perm<>+0x00(SB)/4, $0
DATA gkq8perm<>+0x04(SB)/4, $4
DATA gkq8perm<>+0x08(SB)/4, $1
DATA gkq8perm<>+0x0c(SB)/4, $5
DATA gkq8perm<>+0x10(SB)/4, $2
DATA gkq8perm<>+0x14(SB)/4, $6
DATA gkq8perm<>+0x18(SB)/4, $3
DATA gkq8perm<>+0x1c(SB)/4, $7
GLOBL gkq8perm<>(SB), RODATA|NOPTR, $32

// QUANT8 leaves in y the nearestInt rounding of iscale (Y6) times the 8
// floats at m, capped at 127, as quantizeQ8_K computes it: v = iscale*x +
// 12582912 in float32, then (bits(v) & 0x7fffff) - 0x400000, then min 127.
// Y13 holds 12582912.0, Y12 0x007fffff, Y11 0x00400000, Y10 int32 127.
#define QUANT8(m, y) \
	VMULPS  m, Y6, y; \
	VADDPS  Y13, y, y; \
	VANDPS  Y12, y, y; \
	VPSUBD  Y11, y, y; \
	VPMINSD Y10, y, y

// func quantizeQ8_KAVX2(x *float32, dst *byte, nb int) int
// Encodes nb > 0 blocks of 256 floats at x as Q8_K at dst, as quantizeQ8_K
// does, and returns how many it encoded: it stops before a block whose
// largest magnitude is infinite or whose scale -127/max overflows, leaving
// that block to the Go code. Otherwise every value it rounds lies within
// ±128 (NaN inputs give their payload, capped), so the saturating packs
// keep what the Go code's int8 conversion keeps.
TEXT ·quantizeQ8_KAVX2(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ dst+8(FP), DI
	MOVQ nb+16(FP), CX
	MOVQ CX, R8
	MOVL $0x7fffffff, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	MOVL $0x01010101, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14
	MOVL $0x4b400000, AX
	VMOVD AX, X13
	VPBROADCASTD X13, Y13
	MOVL $0x007fffff, AX
	VMOVD AX, X12
	VPBROADCASTD X12, Y12
	MOVL $0x00400000, AX
	VMOVD AX, X11
	VPBROADCASTD X11, Y11
	MOVL $127, AX
	VMOVD AX, X10
	VPBROADCASTD X10, Y10
	MOVL $0x00010001, AX
	VMOVD AX, X9
	VPBROADCASTD X9, Y9
	VMOVDQU gkq8perm<>(SB), Y8

block:
	// amax: the largest |x|, NaNs left out (vmaxps returns its second
	// source when the first is NaN).
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	XORQ   BX, BX

amax:
	VANDPS 0(SI)(BX*1), Y15, Y4
	VMAXPS Y0, Y4, Y0
	VANDPS 32(SI)(BX*1), Y15, Y4
	VMAXPS Y1, Y4, Y1
	VANDPS 64(SI)(BX*1), Y15, Y4
	VMAXPS Y2, Y4, Y2
	VANDPS 96(SI)(BX*1), Y15, Y4
	VMAXPS Y3, Y4, Y3
	ADDQ   $128, BX
	CMPQ   BX, $1024
	JNE    amax
	VMAXPS Y1, Y0, Y0
	VMAXPS Y3, Y2, Y2
	VMAXPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VMAXPS X1, X0, X0
	VPERMILPS $0x4e, X0, X1
	VMAXPS X1, X0, X0
	VPERMILPS $0xb1, X0, X1
	VMAXPS X1, X0, X0 // amax in every lane

	VXORPS   X1, X1, X1
	VUCOMISS X1, X0
	JEQ      zero
	MOVL     $0x7f800000, AX
	VMOVD    AX, X1
	VUCOMISS X1, X0
	JEQ      done // amax = +Inf: the Go code's

	// mx: the first x with |x| = amax.
	VBROADCASTSS X0, Y5
	XORQ BX, BX

first:
	VANDPS    0(SI)(BX*1), Y15, Y4
	VCMPPS    $0, Y5, Y4, Y4
	VMOVMSKPS Y4, AX
	TESTL     AX, AX
	JNZ       found
	ADDQ      $32, BX
	JMP       first

found:
	BSFL AX, AX
	LEAQ (BX)(AX*4), BX
	VMOVSS (SI)(BX*1), X5

	// iscale = -127/mx; d = 1/iscale.
	MOVL   $0xc2fe0000, AX
	VMOVD  AX, X6
	VDIVSS X5, X6, X6
	VANDPS X15, X6, X7
	VUCOMISS X1, X7
	JEQ    done // iscale overflows: the Go code's
	MOVL   $0x3f800000, AX
	VMOVD  AX, X7
	VDIVSS X6, X7, X7
	VMOVSS X7, 0(DI)
	VBROADCASTSS X6, Y6

	// The quants, 32 at a time.
	XORQ BX, BX

quants:
	QUANT8(0(SI)(BX*4), Y0)
	QUANT8(32(SI)(BX*4), Y1)
	QUANT8(64(SI)(BX*4), Y2)
	QUANT8(96(SI)(BX*4), Y3)
	VPACKSSDW Y1, Y0, Y0
	VPACKSSDW Y3, Y2, Y2
	VPACKSSWB Y2, Y0, Y0
	VPERMD    Y0, Y8, Y0
	VMOVDQU   Y0, 4(DI)(BX*1)
	ADDQ      $32, BX
	CMPQ      BX, $256
	JNE       quants

	// bsums from the stored quants: vpmaddubsw and vpmaddwd by ones leave
	// four partial sums of each 16 in its 128-bit lane, vphaddd the rest.
	VPMADDUBSW 4(DI), Y14, Y0
	VPMADDWD   Y9, Y0, Y0
	VPMADDUBSW 36(DI), Y14, Y1
	VPMADDWD   Y9, Y1, Y1
	VPHADDD    Y1, Y0, Y0
	VPMADDUBSW 68(DI), Y14, Y1
	VPMADDWD   Y9, Y1, Y1
	VPMADDUBSW 100(DI), Y14, Y2
	VPMADDWD   Y9, Y2, Y2
	VPHADDD    Y2, Y1, Y1
	VPHADDD    Y1, Y0, Y0 // lanes: sums of 16 number 0, 2, 4, 6 | 1, 3, 5, 7
	VPMADDUBSW 132(DI), Y14, Y1
	VPMADDWD   Y9, Y1, Y1
	VPMADDUBSW 164(DI), Y14, Y2
	VPMADDWD   Y9, Y2, Y2
	VPHADDD    Y2, Y1, Y1
	VPMADDUBSW 196(DI), Y14, Y2
	VPMADDWD   Y9, Y2, Y2
	VPMADDUBSW 228(DI), Y14, Y3
	VPMADDWD   Y9, Y3, Y3
	VPHADDD    Y3, Y2, Y2
	VPHADDD    Y2, Y1, Y1 // 8, 10, 12, 14 | 9, 11, 13, 15
	VPACKSSDW  Y1, Y0, Y0 // 0, 2, ..., 14 | 1, 3, ..., 15 as int16
	VEXTRACTI128 $1, Y0, X1
	VPUNPCKLWD X1, X0, X2
	VPUNPCKHWD X1, X0, X3
	VMOVDQU    X2, 260(DI)
	VMOVDQU    X3, 276(DI)
	JMP        next

zero:
	VPXOR   Y0, Y0, Y0
	VMOVDQU Y0, 0(DI)
	VMOVDQU Y0, 32(DI)
	VMOVDQU Y0, 64(DI)
	VMOVDQU Y0, 96(DI)
	VMOVDQU Y0, 128(DI)
	VMOVDQU Y0, 160(DI)
	VMOVDQU Y0, 192(DI)
	VMOVDQU Y0, 224(DI)
	VMOVDQU Y0, 256(DI)
	MOVL    $0, 288(DI)

next:
	ADDQ $1024, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  block

done:
	SUBQ CX, R8
	MOVQ R8, ret+24(FP)
	VZEROUPPER
	RET
