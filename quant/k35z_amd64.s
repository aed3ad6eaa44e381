//go:build amd64 && !noasm && gc

#include "textflag.h"

// AVX-512 (BW, VNNI) Q3_K and Q5_K kernels for the avx512 set: the
// contract and the arithmetic of k35_amd64.s (one weight row, c activation
// rows, each output the Go twin's bits), on 64-value ZMM chunks: a
// super-block's levels are 4 ZMM and its scale vectors 4 more, kept in
// registers, and VPDPWSSD adds each chunk's scaled pair sums. Both types'
// eight lanes and float32 lanes as in k35_amd64.s (c <= 16 here too).

// k5zshift<> shifts the words of the lower 256 bits by 0, the upper by 4:
// a group's low nibbles, then its high ones.
DATA k5zshift<>+0x00(SB)/8, $0x0000000000000000
DATA k5zshift<>+0x08(SB)/8, $0x0000000000000000
DATA k5zshift<>+0x10(SB)/8, $0x0000000000000000
DATA k5zshift<>+0x18(SB)/8, $0x0000000000000000
DATA k5zshift<>+0x20(SB)/8, $0x0004000400040004
DATA k5zshift<>+0x28(SB)/8, $0x0004000400040004
DATA k5zshift<>+0x30(SB)/8, $0x0004000400040004
DATA k5zshift<>+0x38(SB)/8, $0x0004000400040004
GLOBL k5zshift<>(SB), RODATA|NOPTR, $64

// k5ztest<>+64g tests qh bit 2g in the lower 256 bits, 2g+1 in the upper.
DATA k5ztest<>+0x00(SB)/8, $0x0101010101010101
DATA k5ztest<>+0x08(SB)/8, $0x0101010101010101
DATA k5ztest<>+0x10(SB)/8, $0x0101010101010101
DATA k5ztest<>+0x18(SB)/8, $0x0101010101010101
DATA k5ztest<>+0x20(SB)/8, $0x0202020202020202
DATA k5ztest<>+0x28(SB)/8, $0x0202020202020202
DATA k5ztest<>+0x30(SB)/8, $0x0202020202020202
DATA k5ztest<>+0x38(SB)/8, $0x0202020202020202
DATA k5ztest<>+0x40(SB)/8, $0x0404040404040404
DATA k5ztest<>+0x48(SB)/8, $0x0404040404040404
DATA k5ztest<>+0x50(SB)/8, $0x0404040404040404
DATA k5ztest<>+0x58(SB)/8, $0x0404040404040404
DATA k5ztest<>+0x60(SB)/8, $0x0808080808080808
DATA k5ztest<>+0x68(SB)/8, $0x0808080808080808
DATA k5ztest<>+0x70(SB)/8, $0x0808080808080808
DATA k5ztest<>+0x78(SB)/8, $0x0808080808080808
DATA k5ztest<>+0x80(SB)/8, $0x1010101010101010
DATA k5ztest<>+0x88(SB)/8, $0x1010101010101010
DATA k5ztest<>+0x90(SB)/8, $0x1010101010101010
DATA k5ztest<>+0x98(SB)/8, $0x1010101010101010
DATA k5ztest<>+0xa0(SB)/8, $0x2020202020202020
DATA k5ztest<>+0xa8(SB)/8, $0x2020202020202020
DATA k5ztest<>+0xb0(SB)/8, $0x2020202020202020
DATA k5ztest<>+0xb8(SB)/8, $0x2020202020202020
DATA k5ztest<>+0xc0(SB)/8, $0x4040404040404040
DATA k5ztest<>+0xc8(SB)/8, $0x4040404040404040
DATA k5ztest<>+0xd0(SB)/8, $0x4040404040404040
DATA k5ztest<>+0xd8(SB)/8, $0x4040404040404040
DATA k5ztest<>+0xe0(SB)/8, $0x8080808080808080
DATA k5ztest<>+0xe8(SB)/8, $0x8080808080808080
DATA k5ztest<>+0xf0(SB)/8, $0x8080808080808080
DATA k5ztest<>+0xf8(SB)/8, $0x8080808080808080
GLOBL k5ztest<>(SB), RODATA|NOPTR, $256

// k5zsc<>+64g broadcasts scale word 2g to the lower 256 bits and 2g+1 to
// the upper, from the 8 scale words in every 128-bit lane.
DATA k5zsc<>+0x00(SB)/8, $0x0100010001000100
DATA k5zsc<>+0x08(SB)/8, $0x0100010001000100
DATA k5zsc<>+0x10(SB)/8, $0x0100010001000100
DATA k5zsc<>+0x18(SB)/8, $0x0100010001000100
DATA k5zsc<>+0x20(SB)/8, $0x0302030203020302
DATA k5zsc<>+0x28(SB)/8, $0x0302030203020302
DATA k5zsc<>+0x30(SB)/8, $0x0302030203020302
DATA k5zsc<>+0x38(SB)/8, $0x0302030203020302
DATA k5zsc<>+0x40(SB)/8, $0x0504050405040504
DATA k5zsc<>+0x48(SB)/8, $0x0504050405040504
DATA k5zsc<>+0x50(SB)/8, $0x0504050405040504
DATA k5zsc<>+0x58(SB)/8, $0x0504050405040504
DATA k5zsc<>+0x60(SB)/8, $0x0706070607060706
DATA k5zsc<>+0x68(SB)/8, $0x0706070607060706
DATA k5zsc<>+0x70(SB)/8, $0x0706070607060706
DATA k5zsc<>+0x78(SB)/8, $0x0706070607060706
DATA k5zsc<>+0x80(SB)/8, $0x0908090809080908
DATA k5zsc<>+0x88(SB)/8, $0x0908090809080908
DATA k5zsc<>+0x90(SB)/8, $0x0908090809080908
DATA k5zsc<>+0x98(SB)/8, $0x0908090809080908
DATA k5zsc<>+0xa0(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA k5zsc<>+0xa8(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA k5zsc<>+0xb0(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA k5zsc<>+0xb8(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA k5zsc<>+0xc0(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA k5zsc<>+0xc8(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA k5zsc<>+0xd0(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA k5zsc<>+0xd8(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA k5zsc<>+0xe0(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA k5zsc<>+0xe8(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA k5zsc<>+0xf0(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA k5zsc<>+0xf8(SB)/8, $0x0f0e0f0e0f0e0f0e
GLOBL k5zsc<>(SB), RODATA|NOPTR, $256

// k3zshift<>+64p shifts the words of the lower 256 bits by 4p, the upper
// by 4p+2: the bit pairs of chunks 4h+2p and 4h+2p+1.
DATA k3zshift<>+0x00(SB)/8, $0x0000000000000000
DATA k3zshift<>+0x08(SB)/8, $0x0000000000000000
DATA k3zshift<>+0x10(SB)/8, $0x0000000000000000
DATA k3zshift<>+0x18(SB)/8, $0x0000000000000000
DATA k3zshift<>+0x20(SB)/8, $0x0002000200020002
DATA k3zshift<>+0x28(SB)/8, $0x0002000200020002
DATA k3zshift<>+0x30(SB)/8, $0x0002000200020002
DATA k3zshift<>+0x38(SB)/8, $0x0002000200020002
DATA k3zshift<>+0x40(SB)/8, $0x0004000400040004
DATA k3zshift<>+0x48(SB)/8, $0x0004000400040004
DATA k3zshift<>+0x50(SB)/8, $0x0004000400040004
DATA k3zshift<>+0x58(SB)/8, $0x0004000400040004
DATA k3zshift<>+0x60(SB)/8, $0x0006000600060006
DATA k3zshift<>+0x68(SB)/8, $0x0006000600060006
DATA k3zshift<>+0x70(SB)/8, $0x0006000600060006
DATA k3zshift<>+0x78(SB)/8, $0x0006000600060006
GLOBL k3zshift<>(SB), RODATA|NOPTR, $128

// k3ztest<>+64k tests hmask bit 2k in the lower 256 bits, 2k+1 in the upper.
DATA k3ztest<>+0x00(SB)/8, $0x0101010101010101
DATA k3ztest<>+0x08(SB)/8, $0x0101010101010101
DATA k3ztest<>+0x10(SB)/8, $0x0101010101010101
DATA k3ztest<>+0x18(SB)/8, $0x0101010101010101
DATA k3ztest<>+0x20(SB)/8, $0x0202020202020202
DATA k3ztest<>+0x28(SB)/8, $0x0202020202020202
DATA k3ztest<>+0x30(SB)/8, $0x0202020202020202
DATA k3ztest<>+0x38(SB)/8, $0x0202020202020202
DATA k3ztest<>+0x40(SB)/8, $0x0404040404040404
DATA k3ztest<>+0x48(SB)/8, $0x0404040404040404
DATA k3ztest<>+0x50(SB)/8, $0x0404040404040404
DATA k3ztest<>+0x58(SB)/8, $0x0404040404040404
DATA k3ztest<>+0x60(SB)/8, $0x0808080808080808
DATA k3ztest<>+0x68(SB)/8, $0x0808080808080808
DATA k3ztest<>+0x70(SB)/8, $0x0808080808080808
DATA k3ztest<>+0x78(SB)/8, $0x0808080808080808
DATA k3ztest<>+0x80(SB)/8, $0x1010101010101010
DATA k3ztest<>+0x88(SB)/8, $0x1010101010101010
DATA k3ztest<>+0x90(SB)/8, $0x1010101010101010
DATA k3ztest<>+0x98(SB)/8, $0x1010101010101010
DATA k3ztest<>+0xa0(SB)/8, $0x2020202020202020
DATA k3ztest<>+0xa8(SB)/8, $0x2020202020202020
DATA k3ztest<>+0xb0(SB)/8, $0x2020202020202020
DATA k3ztest<>+0xb8(SB)/8, $0x2020202020202020
DATA k3ztest<>+0xc0(SB)/8, $0x4040404040404040
DATA k3ztest<>+0xc8(SB)/8, $0x4040404040404040
DATA k3ztest<>+0xd0(SB)/8, $0x4040404040404040
DATA k3ztest<>+0xd8(SB)/8, $0x4040404040404040
DATA k3ztest<>+0xe0(SB)/8, $0x8080808080808080
DATA k3ztest<>+0xe8(SB)/8, $0x8080808080808080
DATA k3ztest<>+0xf0(SB)/8, $0x8080808080808080
DATA k3ztest<>+0xf8(SB)/8, $0x8080808080808080
GLOBL k3ztest<>(SB), RODATA|NOPTR, $256

// k3zperm<>+64k puts scale word 4k+l in all of 128-bit lane l.
DATA k3zperm<>+0x00(SB)/8, $0x0000000000000000
DATA k3zperm<>+0x08(SB)/8, $0x0000000000000000
DATA k3zperm<>+0x10(SB)/8, $0x0001000100010001
DATA k3zperm<>+0x18(SB)/8, $0x0001000100010001
DATA k3zperm<>+0x20(SB)/8, $0x0002000200020002
DATA k3zperm<>+0x28(SB)/8, $0x0002000200020002
DATA k3zperm<>+0x30(SB)/8, $0x0003000300030003
DATA k3zperm<>+0x38(SB)/8, $0x0003000300030003
DATA k3zperm<>+0x40(SB)/8, $0x0004000400040004
DATA k3zperm<>+0x48(SB)/8, $0x0004000400040004
DATA k3zperm<>+0x50(SB)/8, $0x0005000500050005
DATA k3zperm<>+0x58(SB)/8, $0x0005000500050005
DATA k3zperm<>+0x60(SB)/8, $0x0006000600060006
DATA k3zperm<>+0x68(SB)/8, $0x0006000600060006
DATA k3zperm<>+0x70(SB)/8, $0x0007000700070007
DATA k3zperm<>+0x78(SB)/8, $0x0007000700070007
DATA k3zperm<>+0x80(SB)/8, $0x0008000800080008
DATA k3zperm<>+0x88(SB)/8, $0x0008000800080008
DATA k3zperm<>+0x90(SB)/8, $0x0009000900090009
DATA k3zperm<>+0x98(SB)/8, $0x0009000900090009
DATA k3zperm<>+0xa0(SB)/8, $0x000a000a000a000a
DATA k3zperm<>+0xa8(SB)/8, $0x000a000a000a000a
DATA k3zperm<>+0xb0(SB)/8, $0x000b000b000b000b
DATA k3zperm<>+0xb8(SB)/8, $0x000b000b000b000b
DATA k3zperm<>+0xc0(SB)/8, $0x000c000c000c000c
DATA k3zperm<>+0xc8(SB)/8, $0x000c000c000c000c
DATA k3zperm<>+0xd0(SB)/8, $0x000d000d000d000d
DATA k3zperm<>+0xd8(SB)/8, $0x000d000d000d000d
DATA k3zperm<>+0xe0(SB)/8, $0x000e000e000e000e
DATA k3zperm<>+0xe8(SB)/8, $0x000e000e000e000e
DATA k3zperm<>+0xf0(SB)/8, $0x000f000f000f000f
DATA k3zperm<>+0xf8(SB)/8, $0x000f000f000f000f
GLOBL k3zperm<>(SB), RODATA|NOPTR, $256

// ZMM_CONST broadcasts the 32-bit value v to all lanes of z through AX.
#define ZMM_CONST(v, x, z) \
	MOVL         $v, AX; \
	VMOVD        AX, x; \
	VPBROADCASTD x, z

// ZACT sums one activation row (at R12) against levels Z0..Z3 and scale
// vectors Z4..Z7 into the int32 lanes of Y14 (a VEX register, for
// VPHADDD).
#define ZACT \
	VPMADDUBSW    4(R12), Z0, Z14; \
	VPMADDWD      Z4, Z14, Z14; \
	VPMADDUBSW    68(R12), Z1, Z15; \
	VPDPWSSD      Z5, Z15, Z14; \
	VPMADDUBSW    132(R12), Z2, Z16; \
	VPMADDUBSW    196(R12), Z3, Z17; \
	VPDPWSSD      Z6, Z16, Z14; \
	VPDPWSSD      Z7, Z17, Z14; \
	VEXTRACTI64X4 $1, Z14, Y15; \
	VPADDD        Y15, Y14, Y14

// ZACT4 sums one activation row of a group of four (quants at m0..m3,
// bsums at mb) against levels Z16..Z19 and scale vectors Z20..Z23 into the
// int32 lanes of Yacc (folded from Zacc), and its bsums against Y27 into
// Ymin.
#define ZACT4(m0, m1, m2, m3, mb, zacc, yacc, ymin) \
	VPMADDUBSW    m0, Z16, Z8; \
	VPMADDWD      Z20, Z8, zacc; \
	VPMADDUBSW    m1, Z17, Z9; \
	VPDPWSSD      Z21, Z9, zacc; \
	VPMADDUBSW    m2, Z18, Z10; \
	VPMADDUBSW    m3, Z19, Z11; \
	VPDPWSSD      Z22, Z10, zacc; \
	VPDPWSSD      Z23, Z11, zacc; \
	VEXTRACTI64X4 $1, zacc, Y8; \
	VPADDD        Y8, yacc, yacc; \
	VPMADDWD      mb, Y27, ymin

// ZACT3 is ZACT for Q3_K as ggml's AVX2 kernel computes it: each pair sum
// of u·q8 less that of 4·q8 (Z25, 0x04 bytes), so of q3·q8 with q3 = u-4,
// before the scale words; Y14's lane l then sums values 4l..4l+3 of every
// 32-value chunk (ZMM lanes 8..15, chunk 2k+1's, folded onto 0..7).
#define ZACT3 \
	VPMADDUBSW    4(R12), Z0, Z14; \
	VPMADDUBSW    4(R12), Z25, Z16; \
	VPSUBW        Z16, Z14, Z14; \
	VPMADDWD      Z4, Z14, Z14; \
	VPMADDUBSW    68(R12), Z1, Z15; \
	VPMADDUBSW    68(R12), Z25, Z17; \
	VPSUBW        Z17, Z15, Z15; \
	VPDPWSSD      Z5, Z15, Z14; \
	VPMADDUBSW    132(R12), Z2, Z16; \
	VPMADDUBSW    132(R12), Z25, Z18; \
	VPSUBW        Z18, Z16, Z16; \
	VPDPWSSD      Z6, Z16, Z14; \
	VPMADDUBSW    196(R12), Z3, Z17; \
	VPMADDUBSW    196(R12), Z25, Z19; \
	VPSUBW        Z19, Z17, Z17; \
	VPDPWSSD      Z7, Z17, Z14; \
	VEXTRACTI64X4 $1, Z14, Y15; \
	VPADDD        Y15, Y14, Y14

// ZACT43X sums one activation row of a group of four (quants at m0..m3)
// against the signed levels q3 in Z16..Z19 and scale vectors Z20..Z23:
// VPMADDUBSW of q8+128 (the XOR with Z27's 0x80 bytes, unsigned) and q3
// (pairs at most 2·255·4), VPMADDWD/VPDPWSSD by the scale words, ZMM
// lanes 8..15 folded onto 0..7 into yacc, less Y15 (the same with 128 for
// q8): ZACT3's lanes, exactly, with one multiply fewer a chunk.
#define ZACT43X(m0, m1, m2, m3, zacc, yacc) \
	VPXORD        m0, Z27, Z8; \
	VPMADDUBSW    Z16, Z8, Z8; \
	VPMADDWD      Z20, Z8, zacc; \
	VPXORD        m1, Z27, Z9; \
	VPMADDUBSW    Z17, Z9, Z9; \
	VPDPWSSD      Z21, Z9, zacc; \
	VPXORD        m2, Z27, Z10; \
	VPMADDUBSW    Z18, Z10, Z10; \
	VPDPWSSD      Z22, Z10, zacc; \
	VPXORD        m3, Z27, Z11; \
	VPMADDUBSW    Z19, Z11, Z11; \
	VPDPWSSD      Z23, Z11, zacc; \
	VEXTRACTI64X4 $1, zacc, Y8; \
	VPADDD        Y8, yacc, yacc; \
	VPSUBD        Y15, yacc, yacc

// FMA_ROWZ adds row k's int32 lanes ylanes, converted, times
// d = dy_k·f16(x.d) (dy_k at doff(R13), f16(x.d) in X13's lane 0) to its
// float32 lanes at aoff(SP)(AX*1), one rounding a lane.
#define FMA_ROWZ(ylanes, doff, aoff) \
	VCVTDQ2PS    ylanes, ylanes; \
	VMULSS       doff(R13), X13, X8; \
	VBROADCASTSS X8, Y8; \
	VMOVUPS      aoff(SP)(AX*1), Y9; \
	VFMADD231PS  Y8, ylanes, Y9; \
	VMOVUPS      Y9, aoff(SP)(AX*1)

// HSUM8F leaves in x's lane 0 the sum of y's eight float32 lanes in
// ggml's hsum_float_8 order (hsum8); x is y's lower half, t a temporary.
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

// func q5kRowZ(w, a *byte, arb, nb int, y *float32, ys, c int)
//
// The float32 steps are q5kRowAVX2's (ggml's AVX2 order): c ≤ 16, row i's
// eight lanes at 32i(SP), its summs in y_i until the end.
TEXT ·q5kRowZ(SB), NOSPLIT, $512-56
	MOVQ w+0(FP), SI
	MOVQ a+8(FP), DI
	MOVQ arb+16(FP), R8
	MOVQ nb+24(FP), CX
	MOVQ y+32(FP), DX
	MOVQ ys+40(FP), R9
	SHLQ $2, R9
	MOVQ c+48(FP), R10

	MOVQ   DX, R13
	MOVQ   SP, R14
	MOVQ   R10, R11
	XORL   AX, AX
	VXORPS Y8, Y8, Y8
q5zclear:
	MOVL    AX, (R13)
	VMOVUPS Y8, (R14)
	ADDQ    R9, R13
	ADDQ    $32, R14
	DECQ    R11
	JNZ     q5zclear

	ZMM_CONST(0x0f0f0f0f, X24, Z24)
	ZMM_CONST(0x10101010, X25, Z25)
	VMOVDQU64 k5zshift<>(SB), Z26
	VMOVDQU64 k5ztest<>+0(SB), Z27
	VMOVDQU64 k5ztest<>+64(SB), Z28
	VMOVDQU64 k5ztest<>+128(SB), Z29
	VMOVDQU64 k5ztest<>+192(SB), Z30

q5zblock:
	// Levels: Z_g holds group g's low nibbles (sub-block 2g) in its
	// lower 256 bits, its high nibbles (2g+1) in the upper, each byte
	// with its qh bit added at bit 4.
	VBROADCASTI64X4 16(SI), Z13
	VBROADCASTI64X4 48(SI), Z0
	VBROADCASTI64X4 80(SI), Z1
	VBROADCASTI64X4 112(SI), Z2
	VBROADCASTI64X4 144(SI), Z3
	VPSRLVW  Z26, Z0, Z0
	VPSRLVW  Z26, Z1, Z1
	VPSRLVW  Z26, Z2, Z2
	VPSRLVW  Z26, Z3, Z3
	VPANDD   Z24, Z0, Z0
	VPANDD   Z24, Z1, Z1
	VPANDD   Z24, Z2, Z2
	VPANDD   Z24, Z3, Z3
	VPTESTMB Z27, Z13, K1
	VPTESTMB Z28, Z13, K2
	VPTESTMB Z29, Z13, K3
	VPTESTMB Z30, Z13, K4
	VPADDB   Z25, Z0, K1, Z0
	VPADDB   Z25, Z1, K2, Z1
	VPADDB   Z25, Z2, K3, Z2
	VPADDB   Z25, Z3, K4, Z3

	// Scales and mins as in q5kRowAVX2.
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
	VMOVD      AX, X8
	VPINSRD    $1, R11, X8, X8
	VPINSRD    $2, BX, X8, X8
	VPINSRD    $3, R14, X8, X8
	VPMOVZXBW  X8, Y8 // words 0..7 scales, 8..15 mins
	VSHUFI32X4 $0, Z8, Z8, Z9
	VPSHUFB    k5zsc<>+0(SB), Z9, Z4
	VPSHUFB    k5zsc<>+64(SB), Z9, Z5
	VPSHUFB    k5zsc<>+128(SB), Z9, Z6
	VPSHUFB    k5zsc<>+192(SB), Z9, Z7
	VEXTRACTI128 $1, Y8, X9
	VPUNPCKLWD   X9, X9, X10
	VPUNPCKHWD   X9, X9, X11
	VINSERTI128  $1, X11, Y10, Y8 // min k/2 against bsum k

	VMOVD     0(SI), X12
	VCVTPH2PS X12, X12 // d, dmin

	MOVQ DI, R12
	MOVQ DX, R13
	MOVQ SP, R14
	MOVQ R10, R11
q5zact:
	ZACT
	// summs = fma(-(dmin·dy), Σ min·bsum, summs), in y_i.
	VPMADDWD     260(R12), Y8, Y11
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
	VCVTDQ2PS    Y14, Y14
	VFMADD213PS  (R14), Y10, Y14
	VMOVUPS      Y14, (R14)
	ADDQ         R8, R12
	ADDQ         R9, R13
	ADDQ         $32, R14
	DECQ         R11
	JNZ          q5zact

	ADDQ $176, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  q5zblock

	// y_i = hsum_float_8(acc_i) + summs_i.
	MOVQ SP, R14
q5zsum:
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
	JNZ       q5zsum
	VZEROUPPER
	RET

// func q3kRowZ(w, a *byte, arb, nb int, y *float32, ys, c int)
TEXT ·q3kRowZ(SB), 0, $512-56
	MOVQ w+0(FP), SI
	MOVQ a+8(FP), DI
	MOVQ arb+16(FP), R8
	MOVQ nb+24(FP), CX
	MOVQ y+32(FP), DX
	MOVQ ys+40(FP), R9
	SHLQ $2, R9
	MOVQ c+48(FP), R10

	// Each output's eight float32 lanes at 32i(SP) (c <= 16).
	VXORPS Y8, Y8, Y8
	MOVQ   SP, R13
	MOVQ   R10, R11
q3zclear:
	VMOVUPS Y8, (R13)
	ADDQ    $32, R13
	DECQ    R11
	JNZ     q3zclear

	ZMM_CONST(0x03030303, X24, Z24)
	ZMM_CONST(0x04040404, X25, Z25)
	VMOVDQU64 k3zshift<>+0(SB), Z26
	VMOVDQU64 k3zshift<>+64(SB), Z31
	VMOVDQU64 k3ztest<>+0(SB), Z27
	VMOVDQU64 k3ztest<>+64(SB), Z28
	VMOVDQU64 k3ztest<>+128(SB), Z29
	VMOVDQU64 k3ztest<>+192(SB), Z30
	VMOVDQU64 k3zperm<>+0(SB), Z20
	VMOVDQU64 k3zperm<>+64(SB), Z21
	VMOVDQU64 k3zperm<>+128(SB), Z22
	VMOVDQU64 k3zperm<>+192(SB), Z23

q3zblock:
	// Levels u = q3+4: Z_k holds chunks 2k (lower 256 bits) and 2k+1
	// (upper), the bit pairs of qs half k/2 with the hmask bits 2k, 2k+1
	// added at bit 2.
	VBROADCASTI64X4 0(SI), Z13
	VBROADCASTI64X4 32(SI), Z0
	VBROADCASTI64X4 64(SI), Z2
	VPSRLVW  Z31, Z0, Z1
	VPSRLVW  Z26, Z0, Z0
	VPSRLVW  Z31, Z2, Z3
	VPSRLVW  Z26, Z2, Z2
	VPANDD   Z24, Z0, Z0
	VPANDD   Z24, Z1, Z1
	VPANDD   Z24, Z2, Z2
	VPANDD   Z24, Z3, Z3
	VPTESTMB Z27, Z13, K1
	VPTESTMB Z28, Z13, K2
	VPTESTMB Z29, Z13, K3
	VPTESTMB Z30, Z13, K4
	VPADDB   Z25, Z0, K1, Z0
	VPADDB   Z25, Z1, K2, Z1
	VPADDB   Z25, Z2, K3, Z2
	VPADDB   Z25, Z3, K4, Z3

	// The 16 scales less 32 as in q3kRowAVX2, as words in Y8; Z_k's
	// scale vector has scale 4k+l in 128-bit lane l.
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
	VPMOVSXBW X8, Y8
	VPERMW  Z8, Z20, Z4
	VPERMW  Z8, Z21, Z5
	VPERMW  Z8, Z22, Z6
	VPERMW  Z8, Z23, Z7

	MOVWLZX   108(SI), R11
	VMOVD     R11, X12
	VCVTPH2PS X12, X12 // d

	MOVQ DI, R12
	MOVQ SP, R13
	MOVQ R10, R11
q3zact:
	ZACT3
	VCVTDQ2PS    Y14, Y14
	VMULSS       0(R12), X12, X10 // d = dy·f16(x.d)
	VBROADCASTSS X10, Y10
	VMOVUPS      (R13), Y9
	VFMADD231PS  Y10, Y14, Y9
	VMOVUPS      Y9, (R13)
	ADDQ         R8, R12
	ADDQ         $32, R13
	DECQ         R11
	JNZ          q3zact

	ADDQ $110, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  q3zblock

	MOVQ SP, R13
q3zstore:
	VMOVUPS (R13), Y0
	HSUM8F(Y0, X0, X2)
	VMOVSS  X0, (DX)
	ADDQ    R9, DX
	ADDQ    $32, R13
	DECQ    R10
	JNZ     q3zstore
	VZEROUPPER
	RET

// func q5kRowZ4(w, a *byte, arb, nb int, y *float32, ys, c int, dy *float32)
//
// q5kRowZ for c = 4, 8, 12 or 16 activation rows, four at a time with
// their float32 steps in the lanes of one register: dy holds the rows'
// scales by super-block (dy[b*c+i]), the sums stay on the stack until the
// last super-block: row i's eight float32 lanes at 32i(SP), its summs at
// 512+4i(SP) (q5kRowAVX2G's steps).
TEXT ·q5kRowZ4(SB), NOSPLIT, $576-64
	MOVQ w+0(FP), SI
	MOVQ a+8(FP), DI
	MOVQ arb+16(FP), R8
	MOVQ nb+24(FP), CX
	MOVQ ys+40(FP), R9
	SHLQ $2, R9
	MOVQ c+48(FP), R10
	MOVQ dy+56(FP), R13

	VPXORD    Z8, Z8, Z8
	MOVQ      SP, AX
	MOVQ      $9, R11
q5z4clear:
	VMOVDQU64 Z8, (AX)
	ADDQ      $64, AX
	DECQ      R11
	JNZ       q5z4clear
	ZMM_CONST(0x0f0f0f0f, X24, Z24)
	ZMM_CONST(0x10101010, X25, Z25)
	VMOVDQU64 k5zshift<>(SB), Z26

q5z4block:
	VBROADCASTI64X4 16(SI), Z31
	VBROADCASTI64X4 48(SI), Z16
	VBROADCASTI64X4 80(SI), Z17
	VBROADCASTI64X4 112(SI), Z18
	VBROADCASTI64X4 144(SI), Z19
	VPSRLVW  Z26, Z16, Z16
	VPSRLVW  Z26, Z17, Z17
	VPSRLVW  Z26, Z18, Z18
	VPSRLVW  Z26, Z19, Z19
	VPANDD   Z24, Z16, Z16
	VPANDD   Z24, Z17, Z17
	VPANDD   Z24, Z18, Z18
	VPANDD   Z24, Z19, Z19
	VPTESTMB k5ztest<>+0(SB), Z31, K1
	VPTESTMB k5ztest<>+64(SB), Z31, K2
	VPTESTMB k5ztest<>+128(SB), Z31, K3
	VPTESTMB k5ztest<>+192(SB), Z31, K4
	VPADDB   Z25, Z16, K1, Z16
	VPADDB   Z25, Z17, K2, Z17
	VPADDB   Z25, Z18, K3, Z18
	VPADDB   Z25, Z19, K4, Z19

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
	VMOVD      AX, X8
	VPINSRD    $1, R11, X8, X8
	VPINSRD    $2, BX, X8, X8
	VPINSRD    $3, R14, X8, X8
	VPMOVZXBW  X8, Y8
	VSHUFI32X4 $0, Z8, Z8, Z9
	VPSHUFB    k5zsc<>+0(SB), Z9, Z20
	VPSHUFB    k5zsc<>+64(SB), Z9, Z21
	VPSHUFB    k5zsc<>+128(SB), Z9, Z22
	VPSHUFB    k5zsc<>+192(SB), Z9, Z23
	VEXTRACTI128 $1, Y8, X9
	VPUNPCKLWD   X9, X9, X10
	VPUNPCKHWD   X9, X9, X11
	VINSERTI128  $1, X11, Y10, Y10
	VMOVDQU64    Y10, Y27

	VMOVD        0(SI), X12
	VCVTPH2PS    X12, X12
	VBROADCASTSS X12, Y13 // d
	VMOVSHDUP    X12, X14
	VBROADCASTSS X14, X14 // dmin

	MOVQ DI, R12
	LEAQ (R8)(R8*2), R14
	XORL AX, AX
	MOVQ R10, R11
q5z4act:
	ZACT4(4(R12), 68(R12), 132(R12), 196(R12), 260(R12), Z0, Y0, Y4)
	ZACT4(4(R12)(R8*1), 68(R12)(R8*1), 132(R12)(R8*1), 196(R12)(R8*1), 260(R12)(R8*1), Z1, Y1, Y5)
	ZACT4(4(R12)(R8*2), 68(R12)(R8*2), 132(R12)(R8*2), 196(R12)(R8*2), 260(R12)(R8*2), Z2, Y2, Y6)
	ZACT4(4(R12)(R14*1), 68(R12)(R14*1), 132(R12)(R14*1), 196(R12)(R14*1), 260(R12)(R14*1), Z3, Y3, Y7)
	// The four rows' summs: fma(-(dmin·dy), Σ min·bsum, summs).
	HSUM4(Y4, Y5, Y6, Y7, X11)
	VCVTDQ2PS    X11, X11
	VMOVUPS      (R13), X9
	VMULPS       X14, X9, X9 // dmin·dy
	VMOVUPS      512(SP)(AX*1), X8
	VFNMADD231PS X9, X11, X8
	VMOVUPS      X8, 512(SP)(AX*1)
	// Each row's lanes: acc = fma(d·dy, float32(lane), acc).
	VBROADCASTSS 0(R13), Y8
	VMULPS       Y13, Y8, Y8
	VCVTDQ2PS    Y0, Y0
	VFMADD213PS  0(SP)(AX*8), Y8, Y0
	VMOVUPS      Y0, 0(SP)(AX*8)
	VBROADCASTSS 4(R13), Y8
	VMULPS       Y13, Y8, Y8
	VCVTDQ2PS    Y1, Y1
	VFMADD213PS  32(SP)(AX*8), Y8, Y1
	VMOVUPS      Y1, 32(SP)(AX*8)
	VBROADCASTSS 8(R13), Y8
	VMULPS       Y13, Y8, Y8
	VCVTDQ2PS    Y2, Y2
	VFMADD213PS  64(SP)(AX*8), Y8, Y2
	VMOVUPS      Y2, 64(SP)(AX*8)
	VBROADCASTSS 12(R13), Y8
	VMULPS       Y13, Y8, Y8
	VCVTDQ2PS    Y3, Y3
	VFMADD213PS  96(SP)(AX*8), Y8, Y3
	VMOVUPS      Y3, 96(SP)(AX*8)
	LEAQ         (R12)(R8*4), R12
	ADDQ         $16, R13
	ADDQ         $16, AX
	SUBQ         $4, R11
	JNZ          q5z4act

	ADDQ $176, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  q5z4block

	// y_i = hsum_float_8(acc_i) + summs_i.
	MOVQ y+32(FP), DX
	XORL AX, AX
	SHLQ $2, R10
q5z4store:
	VMOVUPS   0(SP)(AX*8), X0
	VMOVUPS   16(SP)(AX*8), X1
	VADDPS    X0, X1, X0
	VMOVHLPS  X0, X0, X1
	VADDPS    X1, X0, X0
	VMOVSHDUP X0, X1
	VADDSS    X1, X0, X0
	VADDSS    512(SP)(AX*1), X0, X0
	VMOVSS    X0, (DX)
	ADDQ      R9, DX
	ADDQ      $4, AX
	CMPQ      AX, R10
	JB        q5z4store
	VZEROUPPER
	RET

// func q3kRowZ4(w, a *byte, arb, nb int, y *float32, ys, c int, dy *float32)
//
// q3kRowZ for c = 4, 8, 12 or 16 activation rows, four at a time, each
// output's eight float32 lanes at 32i(SP).
TEXT ·q3kRowZ4(SB), 0, $512-64
	MOVQ w+0(FP), SI
	MOVQ a+8(FP), DI
	MOVQ arb+16(FP), R8
	MOVQ nb+24(FP), CX
	MOVQ ys+40(FP), R9
	SHLQ $2, R9
	MOVQ c+48(FP), R10
	MOVQ dy+56(FP), R13

	VXORPS Y8, Y8, Y8
	MOVQ   SP, R11
	MOVQ   R10, R12
q3z4clear:
	VMOVUPS Y8, (R11)
	ADDQ    $32, R11
	DECQ    R12
	JNZ     q3z4clear
	ZMM_CONST(0x03030303, X24, Z24)
	ZMM_CONST(0x04040404, X25, Z25)
	ZMM_CONST(0x80808080, X27, Z27)
	VMOVDQU64 k3zperm<>+0(SB), Z26
	VMOVDQU64 k3zperm<>+64(SB), Z28
	VMOVDQU64 k3zperm<>+128(SB), Z29
	VMOVDQU64 k3zperm<>+192(SB), Z30

q3z4block:
	VBROADCASTI64X4 0(SI), Z31
	VBROADCASTI64X4 32(SI), Z16
	VBROADCASTI64X4 64(SI), Z18
	VPSRLVW  k3zshift<>+64(SB), Z16, Z17
	VPSRLVW  k3zshift<>+0(SB), Z16, Z16
	VPSRLVW  k3zshift<>+64(SB), Z18, Z19
	VPSRLVW  k3zshift<>+0(SB), Z18, Z18
	VPANDD   Z24, Z16, Z16
	VPANDD   Z24, Z17, Z17
	VPANDD   Z24, Z18, Z18
	VPANDD   Z24, Z19, Z19
	VPTESTMB k3ztest<>+0(SB), Z31, K1
	VPTESTMB k3ztest<>+64(SB), Z31, K2
	VPTESTMB k3ztest<>+128(SB), Z31, K3
	VPTESTMB k3ztest<>+192(SB), Z31, K4
	VPADDB   Z25, Z16, K1, Z16
	VPADDB   Z25, Z17, K2, Z17
	VPADDB   Z25, Z18, K3, Z18
	VPADDB   Z25, Z19, K4, Z19
	// Signed levels q3 = u-4, for VPMADDUBSW against the rows' q8+128.
	VPSUBB   Z25, Z16, Z16
	VPSUBB   Z25, Z17, Z17
	VPSUBB   Z25, Z18, Z18
	VPSUBB   Z25, Z19, Z19

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
	VPMOVSXBW X8, Y8
	VPERMW    Z8, Z26, Z20
	VPERMW    Z8, Z28, Z21
	VPERMW    Z8, Z29, Z22
	VPERMW    Z8, Z30, Z23
	// Y15: the block's lanes of Σ scale·128·q3, which the rows' sums
	// against q8+128 carry on top of their Σ scale·q3·q8.
	VPMADDUBSW    Z16, Z27, Z4
	VPMADDWD      Z20, Z4, Z15
	VPMADDUBSW    Z17, Z27, Z5
	VPDPWSSD      Z21, Z5, Z15
	VPMADDUBSW    Z18, Z27, Z6
	VPDPWSSD      Z22, Z6, Z15
	VPMADDUBSW    Z19, Z27, Z7
	VPDPWSSD      Z23, Z7, Z15
	VEXTRACTI64X4 $1, Z15, Y8
	VPADDD        Y8, Y15, Y15

	MOVWLZX      108(SI), R11
	VMOVD        R11, X12
	VCVTPH2PS    X12, X12
	VBROADCASTSS X12, X13 // d

	MOVQ DI, R12
	LEAQ (R8)(R8*2), R14
	XORL AX, AX
	MOVQ R10, R11
q3z4act:
	ZACT43X(4(R12), 68(R12), 132(R12), 196(R12), Z0, Y0)
	ZACT43X(4(R12)(R8*1), 68(R12)(R8*1), 132(R12)(R8*1), 196(R12)(R8*1), Z1, Y1)
	ZACT43X(4(R12)(R8*2), 68(R12)(R8*2), 132(R12)(R8*2), 196(R12)(R8*2), Z2, Y2)
	ZACT43X(4(R12)(R14*1), 68(R12)(R14*1), 132(R12)(R14*1), 196(R12)(R14*1), Z3, Y3)
	FMA_ROWZ(Y0, 0, 0)
	FMA_ROWZ(Y1, 4, 32)
	FMA_ROWZ(Y2, 8, 64)
	FMA_ROWZ(Y3, 12, 96)
	LEAQ      (R12)(R8*4), R12
	ADDQ      $16, R13
	ADDQ      $128, AX
	SUBQ      $4, R11
	JNZ       q3z4act

	ADDQ $110, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  q3z4block

	MOVQ y+32(FP), DX
	MOVQ SP, R11
q3z4store:
	VMOVUPS (R11), Y0
	HSUM8F(Y0, X0, X2)
	VMOVSS  X0, (DX)
	ADDQ    R9, DX
	ADDQ    $32, R11
	DECQ    R10
	JNZ     q3z4store
	VZEROUPPER
	RET
