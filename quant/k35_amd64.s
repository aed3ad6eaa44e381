//go:build amd64 && !noasm && gc

#include "textflag.h"

// AVX2 Q3_K and Q5_K kernels against Q8_K activations (wrappers and the
// contract in k35_amd64.go). Each takes one weight row of nb > 0
// super-blocks and c > 0 activation rows arb bytes apart, and writes
// output i at y + i*ys*4. A super-block of weights is unpacked once, into
// Y0..Y7 (its 256 levels as unsigned bytes) and the stack (its scales as
// int16 vectors), then applied to each activation row: so the rows of a
// batch share the unpacking, and each output is the Go twin's bits
// whatever c. Per super-block and row the integer sums are exact int32
// (VPMADDUBSW pair sums are at most 2·31·128, far from saturating). Both
// types keep ggml's AVX2 eight lanes and add them into eight float32 lanes
// a row (VFMADD231PS, the twin's fma32) kept on the stack, summed as hsum8
// at the end (Q5_K's minima in one more fused scalar a row, added after):
// so the row kernels take c <= 16.

// k35bcast<>+32j broadcasts int16 word j of a lane pair to all 16 words.
DATA k35bcast<>+0x00(SB)/8, $0x0100010001000100
DATA k35bcast<>+0x08(SB)/8, $0x0100010001000100
DATA k35bcast<>+0x10(SB)/8, $0x0100010001000100
DATA k35bcast<>+0x18(SB)/8, $0x0100010001000100
DATA k35bcast<>+0x20(SB)/8, $0x0302030203020302
DATA k35bcast<>+0x28(SB)/8, $0x0302030203020302
DATA k35bcast<>+0x30(SB)/8, $0x0302030203020302
DATA k35bcast<>+0x38(SB)/8, $0x0302030203020302
DATA k35bcast<>+0x40(SB)/8, $0x0504050405040504
DATA k35bcast<>+0x48(SB)/8, $0x0504050405040504
DATA k35bcast<>+0x50(SB)/8, $0x0504050405040504
DATA k35bcast<>+0x58(SB)/8, $0x0504050405040504
DATA k35bcast<>+0x60(SB)/8, $0x0706070607060706
DATA k35bcast<>+0x68(SB)/8, $0x0706070607060706
DATA k35bcast<>+0x70(SB)/8, $0x0706070607060706
DATA k35bcast<>+0x78(SB)/8, $0x0706070607060706
DATA k35bcast<>+0x80(SB)/8, $0x0908090809080908
DATA k35bcast<>+0x88(SB)/8, $0x0908090809080908
DATA k35bcast<>+0x90(SB)/8, $0x0908090809080908
DATA k35bcast<>+0x98(SB)/8, $0x0908090809080908
DATA k35bcast<>+0xa0(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA k35bcast<>+0xa8(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA k35bcast<>+0xb0(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA k35bcast<>+0xb8(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA k35bcast<>+0xc0(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA k35bcast<>+0xc8(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA k35bcast<>+0xd0(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA k35bcast<>+0xd8(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA k35bcast<>+0xe0(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA k35bcast<>+0xe8(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA k35bcast<>+0xf0(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA k35bcast<>+0xf8(SB)/8, $0x0f0e0f0e0f0e0f0e
GLOBL k35bcast<>(SB), RODATA|NOPTR, $256

// k3pair<>+16j picks byte 2j into bytes 0..7 and byte 2j+1 into 8..15:
// the Q3_K scales of one 32-value chunk, for VPMOVSXBW.
DATA k3pair<>+0x00(SB)/8, $0x0000000000000000
DATA k3pair<>+0x08(SB)/8, $0x0101010101010101
DATA k3pair<>+0x10(SB)/8, $0x0202020202020202
DATA k3pair<>+0x18(SB)/8, $0x0303030303030303
DATA k3pair<>+0x20(SB)/8, $0x0404040404040404
DATA k3pair<>+0x28(SB)/8, $0x0505050505050505
DATA k3pair<>+0x30(SB)/8, $0x0606060606060606
DATA k3pair<>+0x38(SB)/8, $0x0707070707070707
DATA k3pair<>+0x40(SB)/8, $0x0808080808080808
DATA k3pair<>+0x48(SB)/8, $0x0909090909090909
DATA k3pair<>+0x50(SB)/8, $0x0a0a0a0a0a0a0a0a
DATA k3pair<>+0x58(SB)/8, $0x0b0b0b0b0b0b0b0b
DATA k3pair<>+0x60(SB)/8, $0x0c0c0c0c0c0c0c0c
DATA k3pair<>+0x68(SB)/8, $0x0d0d0d0d0d0d0d0d
DATA k3pair<>+0x70(SB)/8, $0x0e0e0e0e0e0e0e0e
DATA k3pair<>+0x78(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL k3pair<>(SB), RODATA|NOPTR, $128

// HBIT moves one bit of each byte of Y13 (qh or hmask) to the bit Y14
// masks and ORs it into dst: shift is the word shift that does so (bits do
// not cross bytes for the shifts used).
#define HBIT(shift, n, dst) \
	shift $n, Y13, Y11; \
	VPAND Y14, Y11, Y11; \
	VPOR  Y11, dst, dst

// SCALEVEC stores at off(SP), off = 32j, the int16 vector of scale j: the
// byte pair pattern k35bcast<>+off applied to the words in both lanes of Y9.
#define SCALEVEC(off) \
	VPSHUFB k35bcast<>+off(SB), Y9, Y10; \
	VMOVDQU Y10, off(SP)

// CHUNK adds to Y8 the scaled sums of chunk j (32 values) of the
// activation row at R12: levels in u, activations at aoff(R12) (4+32j),
// scale vector at soff(SP) (32j).
#define CHUNK(u, aoff, soff, t) \
	VPMADDUBSW aoff(R12), u, t; \
	VPMADDWD   soff(SP), t, t; \
	VPADDD     t, Y8, Y8

// Q3CHUNK adds to Y8 the scaled lanes of Q3_K chunk j (32 values) of the
// activation row at R12, as ggml's AVX2 kernel: VPMADDUBSW pair sums of
// u·q8 less those of 4·q8 (Y14, 0x04 bytes), so q3·q8 with q3 = u-4 (at
// most 2·4·128 a pair), then VPMADDWD by the scale words: lane l sums
// values 4l..4l+3 of the chunk. Levels in u, activations at aoff(R12)
// (4+32j), scale vector at soff(SP) (32j).
#define Q3CHUNK(u, aoff, soff, t, t2) \
	VPMADDUBSW aoff(R12), u, t; \
	VPMADDUBSW aoff(R12), Y14, t2; \
	VPSUBW     t2, t, t; \
	VPMADDWD   soff(SP), t, t; \
	VPADDD     t, Y8, Y8

// FMA_ROW adds row k's int32 lanes ylanes, converted, times
// d = dy_k·f16(x.d) (dy_k at doff(R13), f16(x.d) in X13's lane 0) to its
// float32 lanes at aoff(SP)(AX*1), one rounding a lane as VFMADD231PS.
#define FMA_ROW(ylanes, doff, aoff) \
	VCVTDQ2PS    ylanes, ylanes; \
	VMULSS       doff(R13), X13, X8; \
	VBROADCASTSS X8, Y8; \
	VMOVUPS      aoff(SP)(AX*1), Y9; \
	VFMADD231PS  Y8, ylanes, Y9; \
	VMOVUPS      Y9, aoff(SP)(AX*1)

// HSUM8F leaves in x's lane 0 the sum of y's eight float32 lanes in
// ggml's hsum_float_8 order (hsum8): r_i = y[i+4]+y[i], then
// (r0+r2) + (r1+r3); x is y's lower half, t a temporary.
#define HSUM8F(y, x, t) \
	VEXTRACTF128 $1, y, t; \
	VADDPS       x, t, x; \
	VPSHUFD      $0x4e, x, t; \
	VADDPS       t, x, x; \
	VMOVSHDUP    x, t; \
	VADDSS       t, x, x

// HSUM4 leaves in x the sums of the int32 lanes of y0..y3, one each, in
// that order (lane k for activation row k of a group), using Y8 and Y9.
#define HSUM4(y0, y1, y2, y3, x) \
	VPHADDD      y1, y0, Y8; \
	VPHADDD      y3, y2, Y9; \
	VPHADDD      Y9, Y8, Y8; \
	VEXTRACTI128 $1, Y8, X9; \
	VPADDD       X9, X8, x

// func q5kRowAVX2(w, a *byte, arb, nb int, y *float32, ys, c int)
//
// Q5_K follows ggml's AVX2 order (dotQ5_KQ8_KGo), not the one scalar and
// the unfused steps the header describes (those are Q3_K's): c ≤ 16
// (k35Acts), each activation row keeps eight float32 lanes at
// 288+32i(SP), fused per super-block, and its fused scalar of mins in its
// output y_i; at the end y_i = hsum_float_8 of the lanes + summs, so a
// row's bits do not depend on the rows beside it. The frame is past what
// NOSPLIT allows, so the function checks the stack.
TEXT ·q5kRowAVX2(SB), $800-56
	MOVQ w+0(FP), SI
	MOVQ a+8(FP), DI
	MOVQ arb+16(FP), R8
	MOVQ nb+24(FP), CX
	MOVQ y+32(FP), DX
	MOVQ ys+40(FP), R9
	SHLQ $2, R9
	MOVQ c+48(FP), R10

	MOVQ   DX, R13
	LEAQ   288(SP), R14
	MOVQ   R10, R11
	XORL   AX, AX
	VXORPS Y8, Y8, Y8
q5clear:
	MOVL    AX, (R13)
	VMOVUPS Y8, (R14)
	ADDQ    R9, R13
	ADDQ    $32, R14
	DECQ    R11
	JNZ     q5clear

	MOVL         $0x0f0f0f0f, AX
	VMOVD        AX, X15
	VPBROADCASTD X15, Y15
	MOVL         $0x10101010, AX
	VMOVD        AX, X14
	VPBROADCASTD X14, Y14

q5block:
	// Levels: nibbles of qs, the fifth bit from qh (bit i/32 of byte i%32).
	VMOVDQU 16(SI), Y13
	VMOVDQU 48(SI), Y12
	VPAND   Y15, Y12, Y0
	VPSRLW  $4, Y12, Y1
	VPAND   Y15, Y1, Y1
	HBIT(VPSLLW, 4, Y0)
	HBIT(VPSLLW, 3, Y1)
	VMOVDQU 80(SI), Y12
	VPAND   Y15, Y12, Y2
	VPSRLW  $4, Y12, Y3
	VPAND   Y15, Y3, Y3
	HBIT(VPSLLW, 2, Y2)
	HBIT(VPSLLW, 1, Y3)
	VMOVDQU 112(SI), Y12
	VPAND   Y15, Y12, Y4
	VPSRLW  $4, Y12, Y5
	VPAND   Y15, Y5, Y5
	VPAND   Y14, Y13, Y11
	VPOR    Y11, Y4, Y4
	HBIT(VPSRLW, 1, Y5)
	VMOVDQU 144(SI), Y12
	VPAND   Y15, Y12, Y6
	VPSRLW  $4, Y12, Y7
	VPAND   Y15, Y7, Y7
	HBIT(VPSRLW, 2, Y6)
	HBIT(VPSRLW, 3, Y7)

	// Scales and mins as scaleMinK4: scales 0..3 in AX, 4..7 in R11,
	// mins 0..3 in BX, 4..7 in R14.
	MOVL 4(SI), AX
	MOVL 8(SI), BX
	MOVL 12(SI), R14
	MOVL R14, R11
	ANDL $0x0f0f0f0f, R11
	MOVL AX, R12
	SHRL $6, R12
	ANDL $0x03030303, R12
	SHLL $4, R12
	ORL  R12, R11
	ANDL $0x3f3f3f3f, AX
	SHRL $4, R14
	ANDL $0x0f0f0f0f, R14
	MOVL BX, R12
	SHRL $6, R12
	ANDL $0x03030303, R12
	SHLL $4, R12
	ORL  R12, R14
	ANDL $0x3f3f3f3f, BX
	VMOVD     AX, X8
	VPINSRD   $1, R11, X8, X8
	VPINSRD   $2, BX, X8, X8
	VPINSRD   $3, R14, X8, X8
	VPMOVZXBW X8, Y8 // words 0..7 scales, 8..15 mins
	VPERMQ    $0x44, Y8, Y9
	SCALEVEC(0)
	SCALEVEC(32)
	SCALEVEC(64)
	SCALEVEC(96)
	SCALEVEC(128)
	SCALEVEC(160)
	SCALEVEC(192)
	SCALEVEC(224)
	// Min j against bsums 2j and 2j+1.
	VEXTRACTI128 $1, Y8, X9
	VPUNPCKLWD   X9, X9, X10
	VPUNPCKHWD   X9, X9, X11
	VINSERTI128  $1, X11, Y10, Y10
	VMOVDQU      Y10, 256(SP)

	VMOVD     0(SI), X12
	VCVTPH2PS X12, X12 // d, dmin

	MOVQ DI, R12
	MOVQ DX, R13
	LEAQ 288(SP), R14
	MOVQ R10, R11
q5act:
	// Y8: the row's eight int32 lanes (lane l: bytes 4l..4l+3 of every
	// chunk, times the chunk's scale).
	VPMADDUBSW 4(R12), Y0, Y8
	VPMADDWD   0(SP), Y8, Y8
	CHUNK(Y1, 36, 32, Y9)
	CHUNK(Y2, 68, 64, Y10)
	CHUNK(Y3, 100, 96, Y9)
	CHUNK(Y4, 132, 128, Y10)
	CHUNK(Y5, 164, 160, Y9)
	CHUNK(Y6, 196, 192, Y10)
	CHUNK(Y7, 228, 224, Y9)
	// summs = fma(-(dmin·dy), Σ min·bsum, summs), in y_i.
	VMOVDQU      260(R12), Y11
	VPMADDWD     256(SP), Y11, Y11
	VEXTRACTI128 $1, Y11, X10
	VPADDD       X10, X11, X11
	VPSHUFD      $0x4e, X11, X10
	VPADDD       X10, X11, X11
	VPSHUFD      $0xb1, X11, X10
	VPADDD       X10, X11, X11
	VCVTDQ2PS    X11, X11
	VBROADCASTSS 0(R12), X10
	VMULPS       X12, X10, X10 // d·dy, dmin·dy
	VMOVSHDUP    X10, X9
	VMOVSS       (R13), X13
	VFNMADD231SS X9, X11, X13
	VMOVSS       X13, (R13)
	// acc_l = fma(d·dy, float32(lane_l), acc_l).
	VBROADCASTSS X10, Y10
	VCVTDQ2PS    Y8, Y8
	VMOVUPS      (R14), Y9
	VFMADD231PS  Y10, Y8, Y9
	VMOVUPS      Y9, (R14)
	ADDQ         R8, R12
	ADDQ         R9, R13
	ADDQ         $32, R14
	DECQ         R11
	JNZ          q5act

	ADDQ $176, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  q5block

	// y_i = hsum_float_8(acc_i) + summs_i: r_k = acc[4+k] + acc[k], then
	// (r0+r2) + (r1+r3).
	LEAQ 288(SP), R14
q5sum:
	VMOVUPS   (R14), X0
	VMOVUPS   16(R14), X1
	VADDPS    X0, X1, X0
	VMOVHLPS  X0, X0, X1
	VADDPS    X1, X0, X0
	VMOVSHDUP X0, X1
	VADDSS    X1, X0, X0
	VADDSS    (DX), X0, X0
	VMOVSS    X0, (DX)
	ADDQ      $32, R14
	ADDQ      R9, DX
	DECQ      R10
	JNZ       q5sum
	VZEROUPPER
	RET

// func q3kRowAVX2(w, a *byte, arb, nb int, y *float32, ys, c int)
TEXT ·q3kRowAVX2(SB), 0, $768-56
	MOVQ w+0(FP), SI
	MOVQ a+8(FP), DI
	MOVQ arb+16(FP), R8
	MOVQ nb+24(FP), CX
	MOVQ y+32(FP), DX
	MOVQ ys+40(FP), R9
	SHLQ $2, R9
	MOVQ c+48(FP), R10

	// Each output's eight float32 lanes at 256(SP)+32i (c <= 16).
	VXORPS Y8, Y8, Y8
	LEAQ   256(SP), R13
	MOVQ   R10, R11
q3clear:
	VMOVUPS Y8, (R13)
	ADDQ    $32, R13
	DECQ    R11
	JNZ     q3clear

	MOVL         $0x03030303, AX
	VMOVD        AX, X15
	VPBROADCASTD X15, Y15
	MOVL         $0x04040404, AX
	VMOVD        AX, X14
	VPBROADCASTD X14, Y14

q3block:
	// Levels u = q3+4 in 0..7: 2 bits of qs, the third from hmask (bit
	// i/32 of byte i%32); q3·q8 = u·q8 - 4·q8, taken out per pair (Q3CHUNK).
	VMOVDQU 0(SI), Y13
	VMOVDQU 32(SI), Y12
	VPAND   Y15, Y12, Y0
	VPSRLW  $2, Y12, Y1
	VPAND   Y15, Y1, Y1
	VPSRLW  $4, Y12, Y2
	VPAND   Y15, Y2, Y2
	VPSRLW  $6, Y12, Y3
	VPAND   Y15, Y3, Y3
	HBIT(VPSLLW, 2, Y0)
	HBIT(VPSLLW, 1, Y1)
	VPAND   Y14, Y13, Y11
	VPOR    Y11, Y2, Y2
	HBIT(VPSRLW, 1, Y3)
	VMOVDQU 64(SI), Y12
	VPAND   Y15, Y12, Y4
	VPSRLW  $2, Y12, Y5
	VPAND   Y15, Y5, Y5
	VPSRLW  $4, Y12, Y6
	VPAND   Y15, Y6, Y6
	VPSRLW  $6, Y12, Y7
	VPAND   Y15, Y7, Y7
	HBIT(VPSRLW, 2, Y4)
	HBIT(VPSRLW, 3, Y5)
	HBIT(VPSRLW, 4, Y6)
	HBIT(VPSRLW, 5, Y7)

	// The 16 scales as q3kScales, ggml's kmask shuffle: bytes 0..3 of
	// scales 0..3 in R11, then 4..7, 8..11, 12..15, less 32.
	MOVL    96(SI), AX
	MOVL    100(SI), BX
	MOVL    104(SI), R14
	MOVL    R14, R12
	ANDL    $0x03030303, R12
	SHLL    $4, R12
	MOVL    AX, R11
	ANDL    $0x0f0f0f0f, R11
	ORL     R12, R11
	VMOVD   R11, X8
	MOVL    R14, R12
	SHRL    $2, R12
	ANDL    $0x03030303, R12
	SHLL    $4, R12
	MOVL    BX, R11
	ANDL    $0x0f0f0f0f, R11
	ORL     R12, R11
	VPINSRD $1, R11, X8, X8
	MOVL    R14, R12
	SHRL    $4, R12
	ANDL    $0x03030303, R12
	SHLL    $4, R12
	MOVL    AX, R11
	SHRL    $4, R11
	ANDL    $0x0f0f0f0f, R11
	ORL     R12, R11
	VPINSRD $2, R11, X8, X8
	MOVL    R14, R12
	SHRL    $6, R12
	ANDL    $0x03030303, R12
	SHLL    $4, R12
	MOVL    BX, R11
	SHRL    $4, R11
	ANDL    $0x0f0f0f0f, R11
	ORL     R12, R11
	VPINSRD $3, R11, X8, X8
	MOVL    $0x20202020, R11
	VMOVD   R11, X9
	VPBROADCASTD X9, X9
	VPSUBB  X9, X8, X8

	// Chunk j of 32 values has scale 2j on its first 16, 2j+1 on the rest.
	VPSHUFB   k3pair<>+0x00(SB), X8, X9
	VPMOVSXBW X9, Y9
	VMOVDQU   Y9, 0(SP)
	VPSHUFB   k3pair<>+0x10(SB), X8, X9
	VPMOVSXBW X9, Y9
	VMOVDQU   Y9, 32(SP)
	VPSHUFB   k3pair<>+0x20(SB), X8, X9
	VPMOVSXBW X9, Y9
	VMOVDQU   Y9, 64(SP)
	VPSHUFB   k3pair<>+0x30(SB), X8, X9
	VPMOVSXBW X9, Y9
	VMOVDQU   Y9, 96(SP)
	VPSHUFB   k3pair<>+0x40(SB), X8, X9
	VPMOVSXBW X9, Y9
	VMOVDQU   Y9, 128(SP)
	VPSHUFB   k3pair<>+0x50(SB), X8, X9
	VPMOVSXBW X9, Y9
	VMOVDQU   Y9, 160(SP)
	VPSHUFB   k3pair<>+0x60(SB), X8, X9
	VPMOVSXBW X9, Y9
	VMOVDQU   Y9, 192(SP)
	VPSHUFB   k3pair<>+0x70(SB), X8, X9
	VPMOVSXBW X9, Y9
	VMOVDQU   Y9, 224(SP)

	MOVWLZX   108(SI), R11
	VMOVD     R11, X12
	VCVTPH2PS X12, X12 // d

	MOVQ DI, R12
	LEAQ 256(SP), R13
	MOVQ R10, R11
q3act:
	VPMADDUBSW 4(R12), Y0, Y8
	VPMADDUBSW 4(R12), Y14, Y11
	VPSUBW     Y11, Y8, Y8
	VPMADDWD   0(SP), Y8, Y8
	Q3CHUNK(Y1, 36, 32, Y9, Y11)
	Q3CHUNK(Y2, 68, 64, Y10, Y13)
	Q3CHUNK(Y3, 100, 96, Y9, Y11)
	Q3CHUNK(Y4, 132, 128, Y10, Y13)
	Q3CHUNK(Y5, 164, 160, Y9, Y11)
	Q3CHUNK(Y6, 196, 192, Y10, Y13)
	Q3CHUNK(Y7, 228, 224, Y9, Y11)
	VCVTDQ2PS    Y8, Y8
	VMULSS       0(R12), X12, X10 // d = dy·f16(x.d)
	VBROADCASTSS X10, Y10
	VMOVUPS      (R13), Y9
	VFMADD231PS  Y10, Y8, Y9
	VMOVUPS      Y9, (R13)
	ADDQ         R8, R12
	ADDQ         $32, R13
	DECQ         R11
	JNZ          q3act

	ADDQ $110, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  q3block

	LEAQ 256(SP), R13
q3store:
	VMOVUPS (R13), Y0
	HSUM8F(Y0, X0, X2)
	VMOVSS  X0, (DX)
	ADDQ    R9, DX
	ADDQ    $32, R13
	DECQ    R10
	JNZ     q3store
	VZEROUPPER
	RET

// func q3kRowAVX2G(w, a *byte, arb, nb int, y *float32, ys, c int, dy *float32)
//
// q3kRowAVX2 for c = 4, 8, 12 or 16 activation rows, four at a time as
// q3kRowZ4 does: the levels wait on the stack (288(SP)), each 32-value
// chunk loaded once for the four rows; each output's eight float32 lanes
// at 544(SP)+32i.
TEXT ·q3kRowAVX2G(SB), 0, $1056-64
	MOVQ w+0(FP), SI
	MOVQ a+8(FP), DI
	MOVQ arb+16(FP), R8
	MOVQ nb+24(FP), CX
	MOVQ ys+40(FP), R9
	SHLQ $2, R9
	MOVQ c+48(FP), R10
	MOVQ dy+56(FP), R13
	VXORPS Y8, Y8, Y8
	LEAQ   544(SP), R11
	MOVQ   R10, R12
q3kRowAVX2Gclear:
	VMOVUPS Y8, (R11)
	ADDQ    $32, R11
	DECQ    R12
	JNZ     q3kRowAVX2Gclear

q3kRowAVX2Gblock:
	MOVL         $0x03030303, AX
	VMOVD        AX, X15
	VPBROADCASTD X15, Y15
	MOVL         $0x04040404, AX
	VMOVD        AX, X14
	VPBROADCASTD X14, Y14
	// Levels u = q3+4 in 0..7: 2 bits of qs, the third from hmask (bit
	// i/32 of byte i%32).
	VMOVDQU 0(SI), Y13
	VMOVDQU 32(SI), Y12
	VPAND   Y15, Y12, Y0
	VPSRLW  $2, Y12, Y1
	VPAND   Y15, Y1, Y1
	VPSRLW  $4, Y12, Y2
	VPAND   Y15, Y2, Y2
	VPSRLW  $6, Y12, Y3
	VPAND   Y15, Y3, Y3
	HBIT(VPSLLW, 2, Y0)
	HBIT(VPSLLW, 1, Y1)
	VPAND   Y14, Y13, Y11
	VPOR    Y11, Y2, Y2
	HBIT(VPSRLW, 1, Y3)
	VMOVDQU 64(SI), Y12
	VPAND   Y15, Y12, Y4
	VPSRLW  $2, Y12, Y5
	VPAND   Y15, Y5, Y5
	VPSRLW  $4, Y12, Y6
	VPAND   Y15, Y6, Y6
	VPSRLW  $6, Y12, Y7
	VPAND   Y15, Y7, Y7
	HBIT(VPSRLW, 2, Y4)
	HBIT(VPSRLW, 3, Y5)
	HBIT(VPSRLW, 4, Y6)
	HBIT(VPSRLW, 5, Y7)

	// The 16 scales as q3kScales, ggml's kmask shuffle: bytes 0..3 of
	// scales 0..3 in R11, then 4..7, 8..11, 12..15, less 32.
	MOVL    96(SI), AX
	MOVL    100(SI), BX
	MOVL    104(SI), R14
	MOVL    R14, R12
	ANDL    $0x03030303, R12
	SHLL    $4, R12
	MOVL    AX, R11
	ANDL    $0x0f0f0f0f, R11
	ORL     R12, R11
	VMOVD   R11, X8
	MOVL    R14, R12
	SHRL    $2, R12
	ANDL    $0x03030303, R12
	SHLL    $4, R12
	MOVL    BX, R11
	ANDL    $0x0f0f0f0f, R11
	ORL     R12, R11
	VPINSRD $1, R11, X8, X8
	MOVL    R14, R12
	SHRL    $4, R12
	ANDL    $0x03030303, R12
	SHLL    $4, R12
	MOVL    AX, R11
	SHRL    $4, R11
	ANDL    $0x0f0f0f0f, R11
	ORL     R12, R11
	VPINSRD $2, R11, X8, X8
	MOVL    R14, R12
	SHRL    $6, R12
	ANDL    $0x03030303, R12
	SHLL    $4, R12
	MOVL    BX, R11
	SHRL    $4, R11
	ANDL    $0x0f0f0f0f, R11
	ORL     R12, R11
	VPINSRD $3, R11, X8, X8
	MOVL    $0x20202020, R11
	VMOVD   R11, X9
	VPBROADCASTD X9, X9
	VPSUBB  X9, X8, X8

	// Chunk j of 32 values has scale 2j on its first 16, 2j+1 on the rest.
	VPSHUFB   k3pair<>+0x00(SB), X8, X9
	VPMOVSXBW X9, Y9
	VMOVDQU   Y9, 0(SP)
	VPSHUFB   k3pair<>+0x10(SB), X8, X9
	VPMOVSXBW X9, Y9
	VMOVDQU   Y9, 32(SP)
	VPSHUFB   k3pair<>+0x20(SB), X8, X9
	VPMOVSXBW X9, Y9
	VMOVDQU   Y9, 64(SP)
	VPSHUFB   k3pair<>+0x30(SB), X8, X9
	VPMOVSXBW X9, Y9
	VMOVDQU   Y9, 96(SP)
	VPSHUFB   k3pair<>+0x40(SB), X8, X9
	VPMOVSXBW X9, Y9
	VMOVDQU   Y9, 128(SP)
	VPSHUFB   k3pair<>+0x50(SB), X8, X9
	VPMOVSXBW X9, Y9
	VMOVDQU   Y9, 160(SP)
	VPSHUFB   k3pair<>+0x60(SB), X8, X9
	VPMOVSXBW X9, Y9
	VMOVDQU   Y9, 192(SP)
	VPSHUFB   k3pair<>+0x70(SB), X8, X9
	VPMOVSXBW X9, Y9
	VMOVDQU   Y9, 224(SP)

	MOVWLZX   108(SI), R11
	VMOVD     R11, X12
	VCVTPH2PS X12, X12 // d
	VBROADCASTSS X12, X13 // d
	// Signed levels q3 = u-4 wait on the stack, for VPMADDUBSW against
	// the rows' q8+128 (XOR with Y14's 0x80 bytes); Y15 gets the block's
	// lanes of Σ scale·128·q3, which those sums carry on top of
	// Σ scale·q3·q8.
	MOVL         $0x80808080, AX
	VMOVD        AX, X15
	VPBROADCASTD X15, Y15
	VPSUBB     Y14, Y0, Y0
	VMOVDQU    Y0, 288(SP)
	VPMADDUBSW Y0, Y15, Y0
	VPMADDWD   0(SP), Y0, Y0
	VPSUBB     Y14, Y1, Y1
	VMOVDQU    Y1, 320(SP)
	VPMADDUBSW Y1, Y15, Y1
	VPMADDWD   32(SP), Y1, Y1
	VPSUBB     Y14, Y2, Y2
	VMOVDQU    Y2, 352(SP)
	VPMADDUBSW Y2, Y15, Y2
	VPMADDWD   64(SP), Y2, Y2
	VPSUBB     Y14, Y3, Y3
	VMOVDQU    Y3, 384(SP)
	VPMADDUBSW Y3, Y15, Y3
	VPMADDWD   96(SP), Y3, Y3
	VPSUBB     Y14, Y4, Y4
	VMOVDQU    Y4, 416(SP)
	VPMADDUBSW Y4, Y15, Y4
	VPMADDWD   128(SP), Y4, Y4
	VPSUBB     Y14, Y5, Y5
	VMOVDQU    Y5, 448(SP)
	VPMADDUBSW Y5, Y15, Y5
	VPMADDWD   160(SP), Y5, Y5
	VPSUBB     Y14, Y6, Y6
	VMOVDQU    Y6, 480(SP)
	VPMADDUBSW Y6, Y15, Y6
	VPMADDWD   192(SP), Y6, Y6
	VPSUBB     Y14, Y7, Y7
	VMOVDQU    Y7, 512(SP)
	VPMADDUBSW Y7, Y15, Y7
	VPMADDWD   224(SP), Y7, Y7
	VPADDD     Y1, Y0, Y0
	VPADDD     Y3, Y2, Y2
	VPADDD     Y5, Y4, Y4
	VPADDD     Y7, Y6, Y6
	VPADDD     Y2, Y0, Y0
	VPADDD     Y6, Y4, Y4
	VMOVDQA    Y15, Y14
	VPADDD     Y4, Y0, Y15

	MOVQ DI, R12
	LEAQ (R8)(R8*2), R14
	XORL AX, AX
	MOVQ R10, R11
q3kRowAVX2Gact:
	VMOVDQU 288(SP), Y10
	VPXOR      4(R12), Y14, Y11
	VPMADDUBSW Y10, Y11, Y11
	VPMADDWD   0(SP), Y11, Y0
	VPXOR      4(R12)(R8*1), Y14, Y12
	VPMADDUBSW Y10, Y12, Y12
	VPMADDWD   0(SP), Y12, Y1
	VPXOR      4(R12)(R8*2), Y14, Y11
	VPMADDUBSW Y10, Y11, Y11
	VPMADDWD   0(SP), Y11, Y2
	VPXOR      4(R12)(R14*1), Y14, Y12
	VPMADDUBSW Y10, Y12, Y12
	VPMADDWD   0(SP), Y12, Y3
	VMOVDQU 320(SP), Y10
	VPXOR      36(R12), Y14, Y11
	VPMADDUBSW Y10, Y11, Y11
	VPMADDWD   32(SP), Y11, Y11
	VPADDD     Y11, Y0, Y0
	VPXOR      36(R12)(R8*1), Y14, Y12
	VPMADDUBSW Y10, Y12, Y12
	VPMADDWD   32(SP), Y12, Y12
	VPADDD     Y12, Y1, Y1
	VPXOR      36(R12)(R8*2), Y14, Y11
	VPMADDUBSW Y10, Y11, Y11
	VPMADDWD   32(SP), Y11, Y11
	VPADDD     Y11, Y2, Y2
	VPXOR      36(R12)(R14*1), Y14, Y12
	VPMADDUBSW Y10, Y12, Y12
	VPMADDWD   32(SP), Y12, Y12
	VPADDD     Y12, Y3, Y3
	VMOVDQU 352(SP), Y10
	VPXOR      68(R12), Y14, Y11
	VPMADDUBSW Y10, Y11, Y11
	VPMADDWD   64(SP), Y11, Y11
	VPADDD     Y11, Y0, Y0
	VPXOR      68(R12)(R8*1), Y14, Y12
	VPMADDUBSW Y10, Y12, Y12
	VPMADDWD   64(SP), Y12, Y12
	VPADDD     Y12, Y1, Y1
	VPXOR      68(R12)(R8*2), Y14, Y11
	VPMADDUBSW Y10, Y11, Y11
	VPMADDWD   64(SP), Y11, Y11
	VPADDD     Y11, Y2, Y2
	VPXOR      68(R12)(R14*1), Y14, Y12
	VPMADDUBSW Y10, Y12, Y12
	VPMADDWD   64(SP), Y12, Y12
	VPADDD     Y12, Y3, Y3
	VMOVDQU 384(SP), Y10
	VPXOR      100(R12), Y14, Y11
	VPMADDUBSW Y10, Y11, Y11
	VPMADDWD   96(SP), Y11, Y11
	VPADDD     Y11, Y0, Y0
	VPXOR      100(R12)(R8*1), Y14, Y12
	VPMADDUBSW Y10, Y12, Y12
	VPMADDWD   96(SP), Y12, Y12
	VPADDD     Y12, Y1, Y1
	VPXOR      100(R12)(R8*2), Y14, Y11
	VPMADDUBSW Y10, Y11, Y11
	VPMADDWD   96(SP), Y11, Y11
	VPADDD     Y11, Y2, Y2
	VPXOR      100(R12)(R14*1), Y14, Y12
	VPMADDUBSW Y10, Y12, Y12
	VPMADDWD   96(SP), Y12, Y12
	VPADDD     Y12, Y3, Y3
	VMOVDQU 416(SP), Y10
	VPXOR      132(R12), Y14, Y11
	VPMADDUBSW Y10, Y11, Y11
	VPMADDWD   128(SP), Y11, Y11
	VPADDD     Y11, Y0, Y0
	VPXOR      132(R12)(R8*1), Y14, Y12
	VPMADDUBSW Y10, Y12, Y12
	VPMADDWD   128(SP), Y12, Y12
	VPADDD     Y12, Y1, Y1
	VPXOR      132(R12)(R8*2), Y14, Y11
	VPMADDUBSW Y10, Y11, Y11
	VPMADDWD   128(SP), Y11, Y11
	VPADDD     Y11, Y2, Y2
	VPXOR      132(R12)(R14*1), Y14, Y12
	VPMADDUBSW Y10, Y12, Y12
	VPMADDWD   128(SP), Y12, Y12
	VPADDD     Y12, Y3, Y3
	VMOVDQU 448(SP), Y10
	VPXOR      164(R12), Y14, Y11
	VPMADDUBSW Y10, Y11, Y11
	VPMADDWD   160(SP), Y11, Y11
	VPADDD     Y11, Y0, Y0
	VPXOR      164(R12)(R8*1), Y14, Y12
	VPMADDUBSW Y10, Y12, Y12
	VPMADDWD   160(SP), Y12, Y12
	VPADDD     Y12, Y1, Y1
	VPXOR      164(R12)(R8*2), Y14, Y11
	VPMADDUBSW Y10, Y11, Y11
	VPMADDWD   160(SP), Y11, Y11
	VPADDD     Y11, Y2, Y2
	VPXOR      164(R12)(R14*1), Y14, Y12
	VPMADDUBSW Y10, Y12, Y12
	VPMADDWD   160(SP), Y12, Y12
	VPADDD     Y12, Y3, Y3
	VMOVDQU 480(SP), Y10
	VPXOR      196(R12), Y14, Y11
	VPMADDUBSW Y10, Y11, Y11
	VPMADDWD   192(SP), Y11, Y11
	VPADDD     Y11, Y0, Y0
	VPXOR      196(R12)(R8*1), Y14, Y12
	VPMADDUBSW Y10, Y12, Y12
	VPMADDWD   192(SP), Y12, Y12
	VPADDD     Y12, Y1, Y1
	VPXOR      196(R12)(R8*2), Y14, Y11
	VPMADDUBSW Y10, Y11, Y11
	VPMADDWD   192(SP), Y11, Y11
	VPADDD     Y11, Y2, Y2
	VPXOR      196(R12)(R14*1), Y14, Y12
	VPMADDUBSW Y10, Y12, Y12
	VPMADDWD   192(SP), Y12, Y12
	VPADDD     Y12, Y3, Y3
	VMOVDQU 512(SP), Y10
	VPXOR      228(R12), Y14, Y11
	VPMADDUBSW Y10, Y11, Y11
	VPMADDWD   224(SP), Y11, Y11
	VPADDD     Y11, Y0, Y0
	VPXOR      228(R12)(R8*1), Y14, Y12
	VPMADDUBSW Y10, Y12, Y12
	VPMADDWD   224(SP), Y12, Y12
	VPADDD     Y12, Y1, Y1
	VPXOR      228(R12)(R8*2), Y14, Y11
	VPMADDUBSW Y10, Y11, Y11
	VPMADDWD   224(SP), Y11, Y11
	VPADDD     Y11, Y2, Y2
	VPXOR      228(R12)(R14*1), Y14, Y12
	VPMADDUBSW Y10, Y12, Y12
	VPMADDWD   224(SP), Y12, Y12
	VPADDD     Y12, Y3, Y3
	VPSUBD     Y15, Y0, Y0
	VPSUBD     Y15, Y1, Y1
	VPSUBD     Y15, Y2, Y2
	VPSUBD     Y15, Y3, Y3
	// Row k's lanes into its float32 lanes: acc = fma(dy·f16(x.d), lanes, acc).
	FMA_ROW(Y0, 0, 544)
	FMA_ROW(Y1, 4, 576)
	FMA_ROW(Y2, 8, 608)
	FMA_ROW(Y3, 12, 640)
	LEAQ (R12)(R8*4), R12
	ADDQ $16, R13
	ADDQ $128, AX
	SUBQ $4, R11
	JNZ  q3kRowAVX2Gact

	ADDQ $110, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  q3kRowAVX2Gblock

	MOVQ y+32(FP), DX
	LEAQ 544(SP), R11
q3kRowAVX2Gstore:
	VMOVUPS (R11), Y0
	HSUM8F(Y0, X0, X2)
	VMOVSS  X0, (DX)
	ADDQ    R9, DX
	ADDQ    $32, R11
	DECQ    R10
	JNZ     q3kRowAVX2Gstore
	VZEROUPPER
	RET

// func q5kRowAVX2G(w, a *byte, arb, nb int, y *float32, ys, c int, dy *float32)
//
// q5kRowAVX2 for c = 4, 8, 12 or 16 activation rows, four at a time as
// q5kRowZ4 does: the levels wait on the stack (288(SP)), each 32-value
// chunk loaded once for the four rows; row i's eight float32 lanes at
// 544+32i(SP), its summs at 1056+4i(SP) (a frame past NOSPLIT's limit).
TEXT ·q5kRowAVX2G(SB), $1120-64
	MOVQ w+0(FP), SI
	MOVQ a+8(FP), DI
	MOVQ arb+16(FP), R8
	MOVQ nb+24(FP), CX
	MOVQ ys+40(FP), R9
	SHLQ $2, R9
	MOVQ c+48(FP), R10
	MOVQ dy+56(FP), R13
	VPXOR   Y8, Y8, Y8
	LEAQ    544(SP), AX
	MOVQ    $18, R11
q5kRowAVX2Gclear:
	VMOVDQU Y8, (AX)
	ADDQ    $32, AX
	DECQ    R11
	JNZ     q5kRowAVX2Gclear

q5kRowAVX2Gblock:
	MOVL         $0x0f0f0f0f, AX
	VMOVD        AX, X15
	VPBROADCASTD X15, Y15
	MOVL         $0x10101010, AX
	VMOVD        AX, X14
	VPBROADCASTD X14, Y14
	// Levels: nibbles of qs, the fifth bit from qh (bit i/32 of byte i%32).
	VMOVDQU 16(SI), Y13
	VMOVDQU 48(SI), Y12
	VPAND   Y15, Y12, Y0
	VPSRLW  $4, Y12, Y1
	VPAND   Y15, Y1, Y1
	HBIT(VPSLLW, 4, Y0)
	HBIT(VPSLLW, 3, Y1)
	VMOVDQU 80(SI), Y12
	VPAND   Y15, Y12, Y2
	VPSRLW  $4, Y12, Y3
	VPAND   Y15, Y3, Y3
	HBIT(VPSLLW, 2, Y2)
	HBIT(VPSLLW, 1, Y3)
	VMOVDQU 112(SI), Y12
	VPAND   Y15, Y12, Y4
	VPSRLW  $4, Y12, Y5
	VPAND   Y15, Y5, Y5
	VPAND   Y14, Y13, Y11
	VPOR    Y11, Y4, Y4
	HBIT(VPSRLW, 1, Y5)
	VMOVDQU 144(SI), Y12
	VPAND   Y15, Y12, Y6
	VPSRLW  $4, Y12, Y7
	VPAND   Y15, Y7, Y7
	HBIT(VPSRLW, 2, Y6)
	HBIT(VPSRLW, 3, Y7)

	// Scales and mins as scaleMinK4: scales 0..3 in AX, 4..7 in R11,
	// mins 0..3 in BX, 4..7 in R14.
	MOVL 4(SI), AX
	MOVL 8(SI), BX
	MOVL 12(SI), R14
	MOVL R14, R11
	ANDL $0x0f0f0f0f, R11
	MOVL AX, R12
	SHRL $6, R12
	ANDL $0x03030303, R12
	SHLL $4, R12
	ORL  R12, R11
	ANDL $0x3f3f3f3f, AX
	SHRL $4, R14
	ANDL $0x0f0f0f0f, R14
	MOVL BX, R12
	SHRL $6, R12
	ANDL $0x03030303, R12
	SHLL $4, R12
	ORL  R12, R14
	ANDL $0x3f3f3f3f, BX
	VMOVD     AX, X8
	VPINSRD   $1, R11, X8, X8
	VPINSRD   $2, BX, X8, X8
	VPINSRD   $3, R14, X8, X8
	VPMOVZXBW X8, Y8 // words 0..7 scales, 8..15 mins
	VPERMQ    $0x44, Y8, Y9
	SCALEVEC(0)
	SCALEVEC(32)
	SCALEVEC(64)
	SCALEVEC(96)
	SCALEVEC(128)
	SCALEVEC(160)
	SCALEVEC(192)
	SCALEVEC(224)
	// Min j against bsums 2j and 2j+1.
	VEXTRACTI128 $1, Y8, X9
	VPUNPCKLWD   X9, X9, X10
	VPUNPCKHWD   X9, X9, X11
	VINSERTI128  $1, X11, Y10, Y10
	VMOVDQU      Y10, 256(SP)

	VMOVD     0(SI), X12
	VCVTPH2PS X12, X12 // d, dmin
	VMOVDQU Y0, 288(SP)
	VMOVDQU Y1, 320(SP)
	VMOVDQU Y2, 352(SP)
	VMOVDQU Y3, 384(SP)
	VMOVDQU Y4, 416(SP)
	VMOVDQU Y5, 448(SP)
	VMOVDQU Y6, 480(SP)
	VMOVDQU Y7, 512(SP)
	VBROADCASTSS X12, Y13 // d
	VMOVSHDUP    X12, X11
	VBROADCASTSS X11, X11
	VMOVDQU      X11, X14 // dmin (the 0x10s are set again each super-block)

	MOVQ DI, R12
	LEAQ (R8)(R8*2), R14
	XORL AX, AX
	MOVQ R10, R11
q5kRowAVX2Gact:
	VMOVDQU 288(SP), Y10
	VPMADDUBSW 4(R12), Y10, Y11
	VPMADDWD   0(SP), Y11, Y0
	VPMADDUBSW 4(R12)(R8*1), Y10, Y11
	VPMADDWD   0(SP), Y11, Y1
	VPMADDUBSW 4(R12)(R8*2), Y10, Y11
	VPMADDWD   0(SP), Y11, Y2
	VPMADDUBSW 4(R12)(R14*1), Y10, Y11
	VPMADDWD   0(SP), Y11, Y3
	VMOVDQU 320(SP), Y10
	VPMADDUBSW 36(R12), Y10, Y11
	VPMADDWD   32(SP), Y11, Y11
	VPADDD     Y11, Y0, Y0
	VPMADDUBSW 36(R12)(R8*1), Y10, Y11
	VPMADDWD   32(SP), Y11, Y11
	VPADDD     Y11, Y1, Y1
	VPMADDUBSW 36(R12)(R8*2), Y10, Y11
	VPMADDWD   32(SP), Y11, Y11
	VPADDD     Y11, Y2, Y2
	VPMADDUBSW 36(R12)(R14*1), Y10, Y11
	VPMADDWD   32(SP), Y11, Y11
	VPADDD     Y11, Y3, Y3
	VMOVDQU 352(SP), Y10
	VPMADDUBSW 68(R12), Y10, Y11
	VPMADDWD   64(SP), Y11, Y11
	VPADDD     Y11, Y0, Y0
	VPMADDUBSW 68(R12)(R8*1), Y10, Y11
	VPMADDWD   64(SP), Y11, Y11
	VPADDD     Y11, Y1, Y1
	VPMADDUBSW 68(R12)(R8*2), Y10, Y11
	VPMADDWD   64(SP), Y11, Y11
	VPADDD     Y11, Y2, Y2
	VPMADDUBSW 68(R12)(R14*1), Y10, Y11
	VPMADDWD   64(SP), Y11, Y11
	VPADDD     Y11, Y3, Y3
	VMOVDQU 384(SP), Y10
	VPMADDUBSW 100(R12), Y10, Y11
	VPMADDWD   96(SP), Y11, Y11
	VPADDD     Y11, Y0, Y0
	VPMADDUBSW 100(R12)(R8*1), Y10, Y11
	VPMADDWD   96(SP), Y11, Y11
	VPADDD     Y11, Y1, Y1
	VPMADDUBSW 100(R12)(R8*2), Y10, Y11
	VPMADDWD   96(SP), Y11, Y11
	VPADDD     Y11, Y2, Y2
	VPMADDUBSW 100(R12)(R14*1), Y10, Y11
	VPMADDWD   96(SP), Y11, Y11
	VPADDD     Y11, Y3, Y3
	VMOVDQU 416(SP), Y10
	VPMADDUBSW 132(R12), Y10, Y11
	VPMADDWD   128(SP), Y11, Y11
	VPADDD     Y11, Y0, Y0
	VPMADDUBSW 132(R12)(R8*1), Y10, Y11
	VPMADDWD   128(SP), Y11, Y11
	VPADDD     Y11, Y1, Y1
	VPMADDUBSW 132(R12)(R8*2), Y10, Y11
	VPMADDWD   128(SP), Y11, Y11
	VPADDD     Y11, Y2, Y2
	VPMADDUBSW 132(R12)(R14*1), Y10, Y11
	VPMADDWD   128(SP), Y11, Y11
	VPADDD     Y11, Y3, Y3
	VMOVDQU 448(SP), Y10
	VPMADDUBSW 164(R12), Y10, Y11
	VPMADDWD   160(SP), Y11, Y11
	VPADDD     Y11, Y0, Y0
	VPMADDUBSW 164(R12)(R8*1), Y10, Y11
	VPMADDWD   160(SP), Y11, Y11
	VPADDD     Y11, Y1, Y1
	VPMADDUBSW 164(R12)(R8*2), Y10, Y11
	VPMADDWD   160(SP), Y11, Y11
	VPADDD     Y11, Y2, Y2
	VPMADDUBSW 164(R12)(R14*1), Y10, Y11
	VPMADDWD   160(SP), Y11, Y11
	VPADDD     Y11, Y3, Y3
	VMOVDQU 480(SP), Y10
	VPMADDUBSW 196(R12), Y10, Y11
	VPMADDWD   192(SP), Y11, Y11
	VPADDD     Y11, Y0, Y0
	VPMADDUBSW 196(R12)(R8*1), Y10, Y11
	VPMADDWD   192(SP), Y11, Y11
	VPADDD     Y11, Y1, Y1
	VPMADDUBSW 196(R12)(R8*2), Y10, Y11
	VPMADDWD   192(SP), Y11, Y11
	VPADDD     Y11, Y2, Y2
	VPMADDUBSW 196(R12)(R14*1), Y10, Y11
	VPMADDWD   192(SP), Y11, Y11
	VPADDD     Y11, Y3, Y3
	VMOVDQU 512(SP), Y10
	VPMADDUBSW 228(R12), Y10, Y11
	VPMADDWD   224(SP), Y11, Y11
	VPADDD     Y11, Y0, Y0
	VPMADDUBSW 228(R12)(R8*1), Y10, Y11
	VPMADDWD   224(SP), Y11, Y11
	VPADDD     Y11, Y1, Y1
	VPMADDUBSW 228(R12)(R8*2), Y10, Y11
	VPMADDWD   224(SP), Y11, Y11
	VPADDD     Y11, Y2, Y2
	VPMADDUBSW 228(R12)(R14*1), Y10, Y11
	VPMADDWD   224(SP), Y11, Y11
	VPADDD     Y11, Y3, Y3
	VMOVDQU 256(SP), Y10
	VPMADDWD 260(R12), Y10, Y4
	VPMADDWD 260(R12)(R8*1), Y10, Y5
	VPMADDWD 260(R12)(R8*2), Y10, Y6
	VPMADDWD 260(R12)(R14*1), Y10, Y7
	// The four rows' summs: fma(-(dmin·dy), Σ min·bsum, summs).
	HSUM4(Y4, Y5, Y6, Y7, X11)
	VCVTDQ2PS    X11, X11
	VMOVUPS      (R13), X9
	VMULPS       X14, X9, X9 // dmin·dy
	VMOVUPS      1056(SP)(AX*1), X8
	VFNMADD231PS X9, X11, X8
	VMOVUPS      X8, 1056(SP)(AX*1)
	// Each row's lanes: acc = fma(d·dy, float32(lane), acc).
	VBROADCASTSS 0(R13), Y8
	VMULPS       Y13, Y8, Y8
	VCVTDQ2PS    Y0, Y0
	VFMADD213PS  544(SP)(AX*8), Y8, Y0
	VMOVUPS      Y0, 544(SP)(AX*8)
	VBROADCASTSS 4(R13), Y8
	VMULPS       Y13, Y8, Y8
	VCVTDQ2PS    Y1, Y1
	VFMADD213PS  576(SP)(AX*8), Y8, Y1
	VMOVUPS      Y1, 576(SP)(AX*8)
	VBROADCASTSS 8(R13), Y8
	VMULPS       Y13, Y8, Y8
	VCVTDQ2PS    Y2, Y2
	VFMADD213PS  608(SP)(AX*8), Y8, Y2
	VMOVUPS      Y2, 608(SP)(AX*8)
	VBROADCASTSS 12(R13), Y8
	VMULPS       Y13, Y8, Y8
	VCVTDQ2PS    Y3, Y3
	VFMADD213PS  640(SP)(AX*8), Y8, Y3
	VMOVUPS      Y3, 640(SP)(AX*8)
	LEAQ (R12)(R8*4), R12
	ADDQ $16, R13
	ADDQ $16, AX
	SUBQ $4, R11
	JNZ  q5kRowAVX2Gact

	ADDQ $176, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  q5kRowAVX2Gblock

	// y_i = hsum_float_8(acc_i) + summs_i, as q5kRowAVX2.
	MOVQ y+32(FP), DX
	XORL AX, AX
	SHLQ $2, R10
q5kRowAVX2Gstore:
	VMOVUPS   544(SP)(AX*8), X0
	VMOVUPS   560(SP)(AX*8), X1
	VADDPS    X0, X1, X0
	VMOVHLPS  X0, X0, X1
	VADDPS    X1, X0, X0
	VMOVSHDUP X0, X1
	VADDSS    X1, X0, X0
	VADDSS    1056(SP)(AX*1), X0, X0
	VMOVSS    X0, (DX)
	ADDQ      R9, DX
	ADDQ      $4, AX
	CMPQ      AX, R10
	JB        q5kRowAVX2Gstore
	VZEROUPPER
	RET

