//go:build amd64 && !noasm && gc

#include "textflag.h"

// AVX2+FMA+F16C dot products of quantized weight blocks with quantized
// activation blocks; Go twins and layouts in dot.go and blocks.go. Each takes
// (w, a *byte, nb int) with nb > 0 whole blocks and returns a float32.
// Integer sums within a block are exact; the per-block float scaling is
// accumulated in 8 float32 lanes with FMA and summed across lanes at the end,
// so results differ from the Go twins only by float32 rounding order.

// HSUM8 leaves the sum of Y0's eight floats in X0 and clears the upper
// halves of the vector registers.
#define HSUM8 \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPS       X1, X0, X0; \
	VPERMILPD    $1, X0, X1; \
	VADDPS       X1, X0, X0; \
	VMOVSHDUP    X0, X1; \
	VADDSS       X1, X0, X0; \
	VZEROUPPER

// DOT32 multiplies 32 int8 weights in Y2 by the 32 int8 activations in Y3
// and leaves eight int32 sums of four products each in Y4, the way ggml's
// mul_sum_i8_pairs does: vpmaddubsw(|w|, y*sign(w)). |-128| is 128 as an
// unsigned byte, so any weight works; y must not be -128. Pair sums are at
// most 2*128*127, so vpmaddubsw cannot saturate. Y15 holds int16 ones.
#define DOT32 \
	VPSIGNB    Y2, Y2, Y4; \
	VPSIGNB    Y2, Y3, Y5; \
	VPMADDUBSW Y5, Y4, Y4; \
	VPMADDWD   Y15, Y4, Y4

// SCALE_Q8_0 adds float(Y4) * d(SI) * d(DI) into Y0, the block scales being
// f16 at the block starts.
#define SCALE_Q8_0 \
	VPBROADCASTW 0(SI), X6; \
	VPBROADCASTW 0(DI), X7; \
	VCVTPH2PS    X6, Y6; \
	VCVTPH2PS    X7, Y7; \
	VMULPS       Y7, Y6, Y6; \
	VCVTDQ2PS    Y4, Y4; \
	VFMADD231PS  Y6, Y4, Y0

// func dotQ8_0Q8_0AVX2(w, a *byte, nb int) float32
TEXT ·dotQ8_0Q8_0AVX2(SB), NOSPLIT, $0-28
	MOVQ w+0(FP), SI
	MOVQ a+8(FP), DI
	MOVQ nb+16(FP), CX
	VXORPS Y0, Y0, Y0
	MOVL   $0x00010001, AX
	VMOVD  AX, X15
	VPBROADCASTD X15, Y15

q8loop:
	VMOVDQU 2(SI), Y2
	VMOVDQU 2(DI), Y3
	DOT32
	SCALE_Q8_0
	ADDQ $34, SI
	ADDQ $34, DI
	DECQ CX
	JNZ  q8loop
	HSUM8
	MOVSS X0, ret+24(FP)
	RET

// func dotQ4_0Q8_0AVX2(w, a *byte, nb int) float32
TEXT ·dotQ4_0Q8_0AVX2(SB), NOSPLIT, $0-28
	MOVQ w+0(FP), SI
	MOVQ a+8(FP), DI
	MOVQ nb+16(FP), CX
	VXORPS Y0, Y0, Y0
	MOVL   $0x00010001, AX
	VMOVD  AX, X15
	VPBROADCASTD X15, Y15
	MOVL   $0x0f0f0f0f, AX
	VMOVD  AX, X14
	VPBROADCASTD X14, Y14
	MOVL   $0x08080808, AX
	VMOVD  AX, X13
	VPBROADCASTD X13, Y13

q4loop:
	// Low nibbles are values 0..15, high nibbles 16..31.
	VMOVDQU     2(SI), X2
	VPSRLW      $4, X2, X3
	VINSERTI128 $1, X3, Y2, Y2
	VPAND       Y14, Y2, Y2
	VPSUBB      Y13, Y2, Y2
	VMOVDQU     2(DI), Y3
	DOT32
	SCALE_Q8_0
	ADDQ $18, SI
	ADDQ $34, DI
	DECQ CX
	JNZ  q4loop
	HSUM8
	MOVSS X0, ret+24(FP)
	RET

// k4shuf<>+32j picks int16 word j of each 128-bit lane into all its words:
// the scale of Q4_K sub-block j from the unpacked scales.
DATA k4shuf<>+0x00(SB)/8, $0x0100010001000100
DATA k4shuf<>+0x08(SB)/8, $0x0100010001000100
DATA k4shuf<>+0x10(SB)/8, $0x0100010001000100
DATA k4shuf<>+0x18(SB)/8, $0x0100010001000100
DATA k4shuf<>+0x20(SB)/8, $0x0302030203020302
DATA k4shuf<>+0x28(SB)/8, $0x0302030203020302
DATA k4shuf<>+0x30(SB)/8, $0x0302030203020302
DATA k4shuf<>+0x38(SB)/8, $0x0302030203020302
DATA k4shuf<>+0x40(SB)/8, $0x0504050405040504
DATA k4shuf<>+0x48(SB)/8, $0x0504050405040504
DATA k4shuf<>+0x50(SB)/8, $0x0504050405040504
DATA k4shuf<>+0x58(SB)/8, $0x0504050405040504
DATA k4shuf<>+0x60(SB)/8, $0x0706070607060706
DATA k4shuf<>+0x68(SB)/8, $0x0706070607060706
DATA k4shuf<>+0x70(SB)/8, $0x0706070607060706
DATA k4shuf<>+0x78(SB)/8, $0x0706070607060706
DATA k4shuf<>+0x80(SB)/8, $0x0908090809080908
DATA k4shuf<>+0x88(SB)/8, $0x0908090809080908
DATA k4shuf<>+0x90(SB)/8, $0x0908090809080908
DATA k4shuf<>+0x98(SB)/8, $0x0908090809080908
DATA k4shuf<>+0xa0(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA k4shuf<>+0xa8(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA k4shuf<>+0xb0(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA k4shuf<>+0xb8(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA k4shuf<>+0xc0(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA k4shuf<>+0xc8(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA k4shuf<>+0xd0(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA k4shuf<>+0xd8(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA k4shuf<>+0xe0(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA k4shuf<>+0xe8(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA k4shuf<>+0xf0(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA k4shuf<>+0xf8(SB)/8, $0x0f0e0f0e0f0e0f0e
GLOBL k4shuf<>(SB), RODATA|NOPTR, $256

// Q4K_GROUP adds to the int32 lanes of Y8 the scaled sums of one 64-value
// group g: 32 bytes of nibbles at qoff(SI), activations at yoff(DI) (low
// nibbles) and yoff+32(DI) (high), sub-block scales picked from Y7 by the
// masks at k4shuf<>+m0 and +m1. Nibble-by-int8 pair sums fit int16.
#define Q4K_GROUP(qoff, yoff, m0, m1) \
	VMOVDQU    qoff(SI), Y9; \
	VPSRLW     $4, Y9, Y10; \
	VPAND      Y15, Y9, Y9; \
	VPAND      Y15, Y10, Y10; \
	VPMADDUBSW yoff(DI), Y9, Y9; \
	VPMADDUBSW yoff+32(DI), Y10, Y10; \
	VPSHUFB    k4shuf<>+m0(SB), Y7, Y11; \
	VPSHUFB    k4shuf<>+m1(SB), Y7, Y12; \
	VPMADDWD   Y11, Y9, Y9; \
	VPMADDWD   Y12, Y10, Y10; \
	VPADDD     Y9, Y8, Y8; \
	VPADDD     Y10, Y8, Y8

// func dotQ4_KQ8_KAVX2(w, a *byte, nb int) float32
//
// dotQ4_KQ8_KGo's order (llama.cpp's repacked gemv): each super-block's
// integer sums summed across lanes, exact, then X0 = fma(float32(sumi), d,
// X0) and X14 = fma(float32(sumMins), dmin, X14) in lane 0, X0 - X14 at
// the end.
TEXT ·dotQ4_KQ8_KAVX2(SB), NOSPLIT, $0-28
	MOVQ w+0(FP), SI
	MOVQ a+8(FP), DI
	MOVQ nb+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y14, Y14, Y14
	MOVL   $0x0f0f0f0f, AX
	VMOVD  AX, X15
	VPBROADCASTD X15, Y15

q4kloop:
	// Unpack the 12 scale bytes into 8 scales (AX, DX) and 8 mins (BX,
	// R8), as ggml's utmp shuffle does; see scaleMinK4.
	MOVL 4(SI), AX
	MOVL 8(SI), BX
	MOVL 12(SI), DX
	MOVL DX, R8
	SHRL $4, R8
	ANDL $0x0f0f0f0f, R8
	MOVL BX, R9
	SHRL $6, R9
	ANDL $0x03030303, R9
	SHLL $4, R9
	ORL  R9, R8
	ANDL $0x3f3f3f3f, BX
	ANDL $0x0f0f0f0f, DX
	MOVL AX, R9
	SHRL $6, R9
	ANDL $0x03030303, R9
	SHLL $4, R9
	ORL  R9, DX
	ANDL $0x3f3f3f3f, AX
	VMOVD     AX, X1
	VPINSRD   $1, DX, X1, X1
	VPINSRD   $2, BX, X1, X1
	VPINSRD   $3, R8, X1, X1
	VPMOVZXBW X1, Y1 // words 0..7 scales, 8..15 mins

	// Mins: Σ min_j * (bsums[2j] + bsums[2j+1]), four int32 lanes.
	VMOVDQU      260(DI), Y2
	VEXTRACTI128 $1, Y2, X3
	VPHADDW      X3, X2, X2
	VEXTRACTI128 $1, Y1, X3
	VPMADDWD     X3, X2, X2
	VPSHUFD      $0x4e, X2, X3
	VPADDD       X3, X2, X2
	VPSHUFD      $0xb1, X2, X3
	VPADDD       X3, X2, X2 // sumMins in every lane
	VCVTDQ2PS    X2, X2

	// d = f16(x.d)*dy in lane 0 of X4, dmin = f16(x.dmin)*dy in X6.
	VMOVD        0(SI), X4
	VCVTPH2PS    X4, X4
	VBROADCASTSS 0(DI), X5
	VMULPS       X5, X4, X4
	VMOVSHDUP    X4, X6
	VFMADD231SS  X6, X2, X14 // smin = fma(float32(sumMins), dmin, smin)

	VPERMQ $0x44, Y1, Y7 // the scales in both lanes
	VPXOR  Y8, Y8, Y8
	Q4K_GROUP(16, 4, 0x00, 0x20)
	Q4K_GROUP(48, 68, 0x40, 0x60)
	Q4K_GROUP(80, 132, 0x80, 0xa0)
	Q4K_GROUP(112, 196, 0xc0, 0xe0)
	VEXTRACTI128 $1, Y8, X9
	VPADDD       X9, X8, X8
	VPSHUFD      $0x4e, X8, X9
	VPADDD       X9, X8, X8
	VPSHUFD      $0xb1, X8, X9
	VPADDD       X9, X8, X8 // sumi in every lane
	VCVTDQ2PS    X8, X8
	VFMADD231SS  X4, X8, X0 // sum = fma(float32(sumi), d, sum)

	ADDQ $144, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  q4kloop
	VSUBSS X14, X0, X0
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// q6shuf<>+8i is byte i in all 8 bytes: q6shuf<>+16j picks Q6_K scale 2j
// into bytes 0..7 and scale 2j+1 into bytes 8..15.
DATA q6shuf<>+0x00(SB)/8, $0x0000000000000000
DATA q6shuf<>+0x08(SB)/8, $0x0101010101010101
DATA q6shuf<>+0x10(SB)/8, $0x0202020202020202
DATA q6shuf<>+0x18(SB)/8, $0x0303030303030303
DATA q6shuf<>+0x20(SB)/8, $0x0404040404040404
DATA q6shuf<>+0x28(SB)/8, $0x0505050505050505
DATA q6shuf<>+0x30(SB)/8, $0x0606060606060606
DATA q6shuf<>+0x38(SB)/8, $0x0707070707070707
DATA q6shuf<>+0x40(SB)/8, $0x0808080808080808
DATA q6shuf<>+0x48(SB)/8, $0x0909090909090909
DATA q6shuf<>+0x50(SB)/8, $0x0a0a0a0a0a0a0a0a
DATA q6shuf<>+0x58(SB)/8, $0x0b0b0b0b0b0b0b0b
DATA q6shuf<>+0x60(SB)/8, $0x0c0c0c0c0c0c0c0c
DATA q6shuf<>+0x68(SB)/8, $0x0d0d0d0d0d0d0d0d
DATA q6shuf<>+0x70(SB)/8, $0x0e0e0e0e0e0e0e0e
DATA q6shuf<>+0x78(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL q6shuf<>(SB), RODATA|NOPTR, $128

// Q6K_SCALE multiplies the int16 pair sums in y (32 activations, scales 2j
// and 2j+1 of the 16 int8 in X1) by their scales into int32 and adds them to Y3.
#define Q6K_SCALE(y, m) \
	VPSHUFB   q6shuf<>+m(SB), X1, X9; \
	VPMOVSXBW X9, Y9; \
	VPMADDWD  Y9, y, y; \
	VPADDD    y, Y3, Y3

// Q6K_HALF adds to Y3 the scaled sums Σ q6*y (q6 unsigned, 0..63) of one half
// of 128 values: ql at ql(SI), qh at qh(SI), activations at y(DI), scales
// 8h..8h+7 with mask offsets m..m+48. Y15 holds bytes 0x0f, Y14 bytes 0x30.
#define Q6K_HALF(ql, qh, y, m) \
	VMOVDQU    qh(SI), Y4; \
	VMOVDQU    ql(SI), Y5; \
	VMOVDQU    ql+32(SI), Y6; \
	VPSLLW     $4, Y4, Y7; \
	VPAND      Y14, Y7, Y7; \
	VPAND      Y15, Y5, Y8; \
	VPOR       Y8, Y7, Y7; \
	VPSLLW     $2, Y4, Y8; \
	VPAND      Y14, Y8, Y8; \
	VPAND      Y15, Y6, Y9; \
	VPOR       Y9, Y8, Y8; \
	VPSRLW     $4, Y5, Y5; \
	VPAND      Y15, Y5, Y5; \
	VPAND      Y14, Y4, Y9; \
	VPOR       Y9, Y5, Y5; \
	VPSRLW     $4, Y6, Y6; \
	VPAND      Y15, Y6, Y6; \
	VPSRLW     $2, Y4, Y9; \
	VPAND      Y14, Y9, Y9; \
	VPOR       Y9, Y6, Y6; \
	VPMADDUBSW y(DI), Y7, Y7; \
	VPMADDUBSW y+32(DI), Y8, Y8; \
	VPMADDUBSW y+64(DI), Y5, Y5; \
	VPMADDUBSW y+96(DI), Y6, Y6; \
	Q6K_SCALE(Y7, m); \
	Q6K_SCALE(Y8, m+16); \
	Q6K_SCALE(Y5, m+32); \
	Q6K_SCALE(Y6, m+48)

// func dotQ6_KQ8_KAVX2(w, a *byte, nb int) float32
TEXT ·dotQ6_KQ8_KAVX2(SB), NOSPLIT, $0-28
	MOVQ w+0(FP), SI
	MOVQ a+8(FP), DI
	MOVQ nb+16(FP), CX
	VXORPS Y0, Y0, Y0
	MOVL   $0x0f0f0f0f, AX
	VMOVD  AX, X15
	VPBROADCASTD X15, Y15
	MOVL   $0x30303030, AX
	VMOVD  AX, X14
	VPBROADCASTD X14, Y14

q6kloop:
	// Σ (q6-32)*y = Σ q6*y - 32*Σ y: the second part from the bsums,
	// Σ_i scale_i * bsums[i] over the 16 sub-blocks of 16.
	VMOVDQU   192(SI), X1
	VPMOVSXBW X1, Y2
	VPMADDWD  260(DI), Y2, Y2
	VPSLLD    $5, Y2, Y2
	VPXOR     Y3, Y3, Y3
	Q6K_HALF(0, 128, 4, 0)
	Q6K_HALF(64, 160, 132, 64)
	VPSUBD    Y2, Y3, Y3
	VCVTDQ2PS Y3, Y3

	VPBROADCASTW 208(SI), X4
	VCVTPH2PS    X4, Y4
	VBROADCASTSS 0(DI), Y5
	VMULPS       Y5, Y4, Y4
	VFMADD231PS  Y4, Y3, Y0

	ADDQ $210, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  q6kloop
	HSUM8
	MOVSS X0, ret+24(FP)
	RET

// HALF_DOT16 adds to the float64 lanes of Y0, Y5, Y6, Y7 the sixteen float32
// products of the float32 values in Y1, Y2 (weights, widened) and 0(DI),
// 32(DI). Products of two halves or two bfloat16s are exact in float32 (as
// in the Go twins), and the float64 sums match theirs up to order.
#define HALF_DOT16 \
	VMULPS       0(DI), Y1, Y1; \
	VMULPS       32(DI), Y2, Y2; \
	VCVTPS2PD    X1, Y3; \
	VEXTRACTF128 $1, Y1, X1; \
	VCVTPS2PD    X1, Y4; \
	VADDPD       Y3, Y0, Y0; \
	VADDPD       Y4, Y5, Y5; \
	VCVTPS2PD    X2, Y3; \
	VEXTRACTF128 $1, Y2, X2; \
	VCVTPS2PD    X2, Y4; \
	VADDPD       Y3, Y6, Y6; \
	VADDPD       Y4, Y7, Y7

// HSUM4PD leaves the float64 sum of Y0, Y5, Y6, Y7 in X0.
#define HSUM4PD \
	VADDPD       Y5, Y0, Y0; \
	VADDPD       Y7, Y6, Y6; \
	VADDPD       Y6, Y0, Y0; \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPD       X1, X0, X0; \
	VPERMILPD    $1, X0, X1; \
	VADDSD       X1, X0, X0; \
	VZEROUPPER

// func dotF16AVX2(w *byte, x *float32, n int) float64
// n > 0 is a multiple of 16: n halves at w, n float32 at x.
TEXT ·dotF16AVX2(SB), NOSPLIT, $0-32
	MOVQ   w+0(FP), SI
	MOVQ   x+8(FP), DI
	MOVQ   n+16(FP), CX
	SHRQ   $4, CX
	VXORPD Y0, Y0, Y0
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7

f16loop:
	VCVTPH2PS 0(SI), Y1
	VCVTPH2PS 16(SI), Y2
	HALF_DOT16
	ADDQ $32, SI
	ADDQ $64, DI
	DECQ CX
	JNZ  f16loop
	HSUM4PD
	MOVSD X0, ret+24(FP)
	RET

// func dotBF16AVX2(w *byte, x *float32, n int) float64
// n > 0 is a multiple of 16: n bfloat16s at w, n float32 at x.
TEXT ·dotBF16AVX2(SB), NOSPLIT, $0-32
	MOVQ   w+0(FP), SI
	MOVQ   x+8(FP), DI
	MOVQ   n+16(FP), CX
	SHRQ   $4, CX
	VXORPD Y0, Y0, Y0
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7

bf16loop:
	VPMOVZXWD 0(SI), Y1
	VPMOVZXWD 16(SI), Y2
	VPSLLD    $16, Y1, Y1
	VPSLLD    $16, Y2, Y2
	HALF_DOT16
	ADDQ $32, SI
	ADDQ $64, DI
	DECQ CX
	JNZ  bf16loop
	HSUM4PD
	MOVSD X0, ret+24(FP)
	RET
