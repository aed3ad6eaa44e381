//go:build amd64 && !noasm && gc

#include "textflag.h"

// The four-query scores' pieces, shared by its one-pair (g4pair) and
// two-pair (g4quad) loops. G4START clears the sixteen accumulators (query i
// in Z4i-Z4i+3) and points AX at the pair's key rows, DX at the frame's
// queries, R13 at the groups of 32 values to go. G4COLUMNS adds one group:
// each 16 halves of the two rows widened once (Z16), times the four
// queries' values; it leaves the flags of DECQ R13 for the loop's JNZ.
// G4SUM(a, b, c, d, dst) adds a query's accumulators as scoreF16Go does:
// a+c, b+d, then the two, into dst.
#define G4START \
	VPXORD Z0, Z0, Z0; VPXORD Z1, Z1, Z1; VPXORD Z2, Z2, Z2; VPXORD Z3, Z3, Z3; \
	VPXORD Z4, Z4, Z4; VPXORD Z5, Z5, Z5; VPXORD Z6, Z6, Z6; VPXORD Z7, Z7, Z7; \
	VPXORD Z8, Z8, Z8; VPXORD Z9, Z9, Z9; VPXORD Z10, Z10, Z10; VPXORD Z11, Z11, Z11; \
	VPXORD Z12, Z12, Z12; VPXORD Z13, Z13, Z13; VPXORD Z14, Z14, Z14; VPXORD Z15, Z15, Z15; \
	MOVQ SI, AX; \
	LEAQ 63(SP), DX; \
	ANDQ $-64, DX; \
	MOVQ R12, R13

#define G4COLUMN(off, doff, A0, A1, A2, A3) \
	VMOVDQU32 off(AX), X16; \
	VINSERTI32X4 $1, off(AX)(BX*1), Y16, Y16; \
	VCVTPH2PS Y16, Z16; \
	VFMADD231PS doff(DX), Z16, A0; \
	VFMADD231PS doff(DX)(R11*1), Z16, A1; \
	VFMADD231PS doff(DX)(R11*2), Z16, A2; \
	VFMADD231PS doff(DX)(R14*1), Z16, A3

#define G4COLUMNS \
	G4COLUMN(0, 0, Z0, Z4, Z8, Z12); \
	G4COLUMN(16, 64, Z1, Z5, Z9, Z13); \
	G4COLUMN(32, 128, Z2, Z6, Z10, Z14); \
	G4COLUMN(48, 192, Z3, Z7, Z11, Z15); \
	ADDQ $64, AX; \
	ADDQ $256, DX; \
	DECQ R13

#define G4SUM(a, b, c, d, dst) \
	VADDPS c, a, a; \
	VADDPS d, b, b; \
	VADDPS b, a, dst

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

// func roundF16AVX2(x *float32, n int)
// n is a positive multiple of 8: x[i] = float32(f16(x[i])), rounding to
// nearest even as F32ToF16 does.
TEXT ·roundF16AVX2(SB), NOSPLIT, $0-16
	MOVQ x+0(FP), DI
	MOVQ n+8(FP), CX

round:
	VMOVUPS (DI), Y1
	VCVTPS2PH $0, Y1, X1
	VCVTPH2PS X1, Y1
	VMOVUPS Y1, (DI)
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ round
	VZEROUPPER
	RET

// func scoresF16AVX2(out *float32, ldo int, q *float32, nq int, k *uint16, stride, count, hd int, kbuf *float32)
// For each of count key rows (stride bytes apart) and each of nq queries
// (hd float32 each, back to back): out[i·ldo + j] = ggml_vec_dot_f16 of
// query i and row j, in its AVX2 order: four 8-lane FMA accumulators over
// each 32 values, added 0+2, 1+3, then 0+1, the halves of the result
// added and two horizontal adds; the last hd mod 32 products (a multiple
// of 8) added one by one in float64, which is then rounded to float32.
// Row j is widened to float32 in kbuf once for all nq queries. ldo is in
// bytes; hd > 0 is a multiple of 8; nq, count > 0.
TEXT ·scoresF16AVX2(SB), NOSPLIT, $0-72
	MOVQ out+0(FP), R8
	MOVQ k+32(FP), R10
	MOVQ count+48(FP), R13

scrow:
	// kbuf = float32(row j)
	MOVQ hd+56(FP), CX
	MOVQ R10, SI
	MOVQ kbuf+64(FP), DI

sccvt:
	VCVTPH2PS (SI), Y1
	VMOVUPS   Y1, (DI)
	ADDQ $16, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ  sccvt

	MOVQ q+16(FP), R9
	MOVQ nq+24(FP), R12
	MOVQ R8, R11

scquery:
	MOVQ   kbuf+64(FP), SI
	MOVQ   R9, DI
	MOVQ   hd+56(FP), CX
	SHRQ   $5, CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	TESTQ  CX, CX
	JZ     screduce

scstep:
	VMOVUPS     0(SI), Y4
	VMOVUPS     32(SI), Y5
	VMOVUPS     64(SI), Y6
	VMOVUPS     96(SI), Y7
	VFMADD231PS 0(DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS 64(DI), Y6, Y2
	VFMADD231PS 96(DI), Y7, Y3
	ADDQ $128, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  scstep

screduce:
	VADDPS       Y2, Y0, Y0
	VADDPS       Y3, Y1, Y1
	VADDPS       Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0
	VCVTSS2SD    X0, X0, X0
	// the last hd mod 32 products, one by one in float64
	MOVQ hd+56(FP), CX
	ANDQ $31, CX
	JZ   scstore

sctail:
	VMOVSS    (SI), X1
	VMULSS    (DI), X1, X1
	VCVTSS2SD X1, X1, X1
	VADDSD    X1, X0, X0
	ADDQ $4, SI
	ADDQ $4, DI
	DECQ CX
	JNZ  sctail

scstore:
	VCVTSD2SS X0, X0, X0
	VMOVSS    X0, (R11)
	ADDQ ldo+8(FP), R11
	MOVQ hd+56(FP), AX
	LEAQ (R9)(AX*4), R9
	DECQ R12
	JNZ  scquery

	ADDQ $4, R8
	ADDQ stride+40(FP), R10
	DECQ R13
	JNZ  scrow
	VZEROUPPER
	RET

// MADSTEP does one madF16AVX2 step on accumulator register A for the eight
// halves at off(R10), with the weight broadcast in Y0.
#define MADSTEP(off, T, A) \
	VCVTPH2PS   off(R10), T; \
	VFMADD231PS Y0, T, A; \
	VCVTPS2PH   $0, A, X1; \
	VCVTPH2PS   X1, A

// func madsF16AVX2(acc *float32, v *uint16, stride int, w *float32, count, n int)
// For j < count in order: acc[i] = f16(f16(v[j·stride + i])·w[j] + acc[i]),
// each step madF16AVX2's. The accumulators stay in registers over all count
// steps, 64 columns at a time (then 8); each column's sequence of roundings
// is the same as one MadF16 call per step. n > 0 is a multiple of 8, stride
// in bytes, count > 0.
TEXT ·madsF16AVX2(SB), NOSPLIT, $0-48
	MOVQ acc+0(FP), DI
	MOVQ v+8(FP), SI
	MOVQ stride+16(FP), R11
	MOVQ w+24(FP), R9
	MOVQ count+32(FP), R13
	MOVQ n+40(FP), R12

mads64:
	CMPQ R12, $64
	JLT  mads8
	VMOVUPS 0(DI), Y8
	VMOVUPS 32(DI), Y9
	VMOVUPS 64(DI), Y10
	VMOVUPS 96(DI), Y11
	VMOVUPS 128(DI), Y12
	VMOVUPS 160(DI), Y13
	VMOVUPS 192(DI), Y14
	VMOVUPS 224(DI), Y15
	MOVQ SI, R10
	MOVQ R9, BX
	MOVQ R13, CX

mads64step:
	VBROADCASTSS (BX), Y0
	MADSTEP(0, Y2, Y8)
	MADSTEP(16, Y3, Y9)
	MADSTEP(32, Y4, Y10)
	MADSTEP(48, Y5, Y11)
	MADSTEP(64, Y6, Y12)
	MADSTEP(80, Y7, Y13)
	MADSTEP(96, Y2, Y14)
	MADSTEP(112, Y3, Y15)
	ADDQ $4, BX
	ADDQ R11, R10
	DECQ CX
	JNZ  mads64step
	VMOVUPS Y8, 0(DI)
	VMOVUPS Y9, 32(DI)
	VMOVUPS Y10, 64(DI)
	VMOVUPS Y11, 96(DI)
	VMOVUPS Y12, 128(DI)
	VMOVUPS Y13, 160(DI)
	VMOVUPS Y14, 192(DI)
	VMOVUPS Y15, 224(DI)
	ADDQ $256, DI
	ADDQ $128, SI
	SUBQ $64, R12
	JMP  mads64

mads8:
	TESTQ R12, R12
	JZ    madsdone
	VMOVUPS (DI), Y8
	MOVQ SI, R10
	MOVQ R9, BX
	MOVQ R13, CX

mads8step:
	VBROADCASTSS (BX), Y0
	MADSTEP(0, Y2, Y8)
	ADDQ $4, BX
	ADDQ R11, R10
	DECQ CX
	JNZ  mads8step
	VMOVUPS Y8, (DI)
	ADDQ $32, DI
	ADDQ $16, SI
	SUBQ $8, R12
	JMP  mads8

madsdone:
	VZEROUPPER
	RET

// func scores4F16AVX2(out *float32, q *float32, k *uint16, stride, groups, nb int)
// Sets out[j], j < 4·groups, to one query's scores against the F16 key
// rows at k (stride bytes apart) of hd = 32·nb values, in ggml_vec_dot_f16's
// order (scoreF16Go; hd a multiple of 32, so no float64 tail): each row's
// four 8-lane accumulators start at zero and take every value by FMA, are
// added 0+2 and 1+3, then the two; then lanes l and l+4; then the two
// VHADDPS steps, which four rows take together, lane by lane the same
// additions as scoresF16AVX2's one row at a time. The rows are widened
// straight from memory: no kbuf, no per-score reduction and loop.
TEXT ·scores4F16AVX2(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), DI
	MOVQ k+16(FP), SI
	MOVQ stride+24(FP), BX
	MOVQ groups+32(FP), CX

s4group:
	// Two pairs of rows, each pair's sums into Y11; the move at the top
	// keeps the first pair's in Y10.
	MOVQ $2, DX

s4pair:
	VMOVAPS Y11, Y10
	MOVQ q+8(FP), R10
	MOVQ SI, R11
	MOVQ nb+40(FP), R13
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
s4step:
	VCVTPH2PS 0(R11), Y8
	VFMADD231PS 0(R10), Y8, Y0
	VCVTPH2PS 16(R11), Y9
	VFMADD231PS 32(R10), Y9, Y1
	VCVTPH2PS 32(R11), Y8
	VFMADD231PS 64(R10), Y8, Y2
	VCVTPH2PS 48(R11), Y9
	VFMADD231PS 96(R10), Y9, Y3
	VCVTPH2PS 0(R11)(BX*1), Y8
	VFMADD231PS 0(R10), Y8, Y4
	VCVTPH2PS 16(R11)(BX*1), Y9
	VFMADD231PS 32(R10), Y9, Y5
	VCVTPH2PS 32(R11)(BX*1), Y8
	VFMADD231PS 64(R10), Y8, Y6
	VCVTPH2PS 48(R11)(BX*1), Y9
	VFMADD231PS 96(R10), Y9, Y7
	ADDQ $64, R11
	ADDQ $128, R10
	DECQ R13
	JNZ  s4step
	VADDPS Y2, Y0, Y0
	VADDPS Y3, Y1, Y1
	VADDPS Y1, Y0, Y0
	VADDPS Y6, Y4, Y4
	VADDPS Y7, Y5, Y5
	VADDPS Y5, Y4, Y4
	VPERM2F128 $0x20, Y4, Y0, Y8
	VPERM2F128 $0x31, Y4, Y0, Y9
	VADDPS Y9, Y8, Y11
	LEAQ (SI)(BX*2), SI
	DECQ DX
	JNZ  s4pair
	VHADDPS Y11, Y10, Y12
	VHADDPS Y12, Y12, Y12
	VEXTRACTF128 $1, Y12, X13
	VUNPCKLPS X13, X12, X12
	VMOVUPS X12, (DI)
	ADDQ $16, DI
	DECQ CX
	JNZ  s4group
	VZEROUPPER
	RET

// func mads4F16AVX512(acc *float32, n int, v *uint16, stride int, w *float32, ws, count int)
// For each of four queries q (accumulators n floats apart, weights ws bytes
// apart) and j < count in order: acc_q[i] = f16(f16(v[j·stride + i])·w_q[j]
// + acc_q[i]), each step madF16AVX2's (one FMA, rounded to F16 with
// VCVTPS2PH and back). 64 columns at a time: each value row is converted
// once for the four queries, whose 16 ZMM chains are independent. n > 0 is
// a multiple of 64, stride in bytes, count > 0.
TEXT ·mads4F16AVX512(SB), NOSPLIT, $0-56
	MOVQ acc+0(FP), DI
	MOVQ n+8(FP), R12
	MOVQ v+16(FP), SI
	MOVQ stride+24(FP), R11
	MOVQ w+32(FP), R9
	MOVQ ws+40(FP), R8
	LEAQ (R8)(R8*2), R15
	MOVQ count+48(FP), R13
	MOVQ R12, R14
	SHLQ $2, R14 // one query's accumulator, in bytes

m4block:
	MOVQ DI, AX
	VMOVUPS 0(AX), Z0
	VMOVUPS 64(AX), Z1
	VMOVUPS 128(AX), Z2
	VMOVUPS 192(AX), Z3
	ADDQ R14, AX
	VMOVUPS 0(AX), Z4
	VMOVUPS 64(AX), Z5
	VMOVUPS 128(AX), Z6
	VMOVUPS 192(AX), Z7
	ADDQ R14, AX
	VMOVUPS 0(AX), Z8
	VMOVUPS 64(AX), Z9
	VMOVUPS 128(AX), Z10
	VMOVUPS 192(AX), Z11
	ADDQ R14, AX
	VMOVUPS 0(AX), Z12
	VMOVUPS 64(AX), Z13
	VMOVUPS 128(AX), Z14
	VMOVUPS 192(AX), Z15
	MOVQ SI, R10
	MOVQ R9, BX
	MOVQ R13, CX

m4step:
	VCVTPH2PS 0(R10), Z16
	VCVTPH2PS 32(R10), Z17
	VCVTPH2PS 64(R10), Z18
	VCVTPH2PS 96(R10), Z19
	VBROADCASTSS (BX), Z20
	VBROADCASTSS (BX)(R8*1), Z21
	VBROADCASTSS (BX)(R8*2), Z22
	VBROADCASTSS (BX)(R15*1), Z23
	VFMADD231PS Z20, Z16, Z0
	VFMADD231PS Z21, Z16, Z4
	VFMADD231PS Z22, Z16, Z8
	VFMADD231PS Z23, Z16, Z12
	VFMADD231PS Z20, Z17, Z1
	VFMADD231PS Z21, Z17, Z5
	VFMADD231PS Z22, Z17, Z9
	VFMADD231PS Z23, Z17, Z13
	VFMADD231PS Z20, Z18, Z2
	VFMADD231PS Z21, Z18, Z6
	VFMADD231PS Z22, Z18, Z10
	VFMADD231PS Z23, Z18, Z14
	VFMADD231PS Z20, Z19, Z3
	VFMADD231PS Z21, Z19, Z7
	VFMADD231PS Z22, Z19, Z11
	VFMADD231PS Z23, Z19, Z15
	VCVTPS2PH $0, Z0, Y24
	VCVTPS2PH $0, Z4, Y25
	VCVTPS2PH $0, Z8, Y26
	VCVTPS2PH $0, Z12, Y27
	VCVTPS2PH $0, Z1, Y28
	VCVTPS2PH $0, Z5, Y29
	VCVTPS2PH $0, Z9, Y30
	VCVTPS2PH $0, Z13, Y31
	VCVTPH2PS Y24, Z0
	VCVTPH2PS Y25, Z4
	VCVTPH2PS Y26, Z8
	VCVTPH2PS Y27, Z12
	VCVTPH2PS Y28, Z1
	VCVTPH2PS Y29, Z5
	VCVTPH2PS Y30, Z9
	VCVTPH2PS Y31, Z13
	VCVTPS2PH $0, Z2, Y24
	VCVTPS2PH $0, Z6, Y25
	VCVTPS2PH $0, Z10, Y26
	VCVTPS2PH $0, Z14, Y27
	VCVTPS2PH $0, Z3, Y28
	VCVTPS2PH $0, Z7, Y29
	VCVTPS2PH $0, Z11, Y30
	VCVTPS2PH $0, Z15, Y31
	VCVTPH2PS Y24, Z2
	VCVTPH2PS Y25, Z6
	VCVTPH2PS Y26, Z10
	VCVTPH2PS Y27, Z14
	VCVTPH2PS Y28, Z3
	VCVTPH2PS Y29, Z7
	VCVTPH2PS Y30, Z11
	VCVTPH2PS Y31, Z15
	ADDQ $4, BX
	ADDQ R11, R10
	DECQ CX
	JNZ  m4step
	MOVQ DI, AX
	VMOVUPS Z0, 0(AX)
	VMOVUPS Z1, 64(AX)
	VMOVUPS Z2, 128(AX)
	VMOVUPS Z3, 192(AX)
	ADDQ R14, AX
	VMOVUPS Z4, 0(AX)
	VMOVUPS Z5, 64(AX)
	VMOVUPS Z6, 128(AX)
	VMOVUPS Z7, 192(AX)
	ADDQ R14, AX
	VMOVUPS Z8, 0(AX)
	VMOVUPS Z9, 64(AX)
	VMOVUPS Z10, 128(AX)
	VMOVUPS Z11, 192(AX)
	ADDQ R14, AX
	VMOVUPS Z12, 0(AX)
	VMOVUPS Z13, 64(AX)
	VMOVUPS Z14, 128(AX)
	VMOVUPS Z15, 192(AX)
	ADDQ $256, DI
	ADDQ $128, SI
	SUBQ $64, R12
	JNZ  m4block
	VZEROUPPER
	RET

// func mads3F16AVX512(acc *float32, n int, v *uint16, stride int, w *float32, ws, count int)
// mads4F16AVX512 for three queries (its instructions for the fourth left
// out): the three past a multiple of four in a group of seven (Qwen2.5 7B
// and 0.5B) or a group of three (Llama 3.2 3B).
TEXT ·mads3F16AVX512(SB), NOSPLIT, $0-56
	MOVQ acc+0(FP), DI
	MOVQ n+8(FP), R12
	MOVQ v+16(FP), SI
	MOVQ stride+24(FP), R11
	MOVQ w+32(FP), R9
	MOVQ ws+40(FP), R8
	MOVQ count+48(FP), R13
	MOVQ R12, R14
	SHLQ $2, R14 // one query's accumulator, in bytes

m3block:
	MOVQ DI, AX
	VMOVUPS 0(AX), Z0
	VMOVUPS 64(AX), Z1
	VMOVUPS 128(AX), Z2
	VMOVUPS 192(AX), Z3
	ADDQ R14, AX
	VMOVUPS 0(AX), Z4
	VMOVUPS 64(AX), Z5
	VMOVUPS 128(AX), Z6
	VMOVUPS 192(AX), Z7
	ADDQ R14, AX
	VMOVUPS 0(AX), Z8
	VMOVUPS 64(AX), Z9
	VMOVUPS 128(AX), Z10
	VMOVUPS 192(AX), Z11
	MOVQ SI, R10
	MOVQ R9, BX
	MOVQ R13, CX

m3step:
	VCVTPH2PS 0(R10), Z16
	VCVTPH2PS 32(R10), Z17
	VCVTPH2PS 64(R10), Z18
	VCVTPH2PS 96(R10), Z19
	VBROADCASTSS (BX), Z20
	VBROADCASTSS (BX)(R8*1), Z21
	VBROADCASTSS (BX)(R8*2), Z22
	VFMADD231PS Z20, Z16, Z0
	VFMADD231PS Z21, Z16, Z4
	VFMADD231PS Z22, Z16, Z8
	VFMADD231PS Z20, Z17, Z1
	VFMADD231PS Z21, Z17, Z5
	VFMADD231PS Z22, Z17, Z9
	VFMADD231PS Z20, Z18, Z2
	VFMADD231PS Z21, Z18, Z6
	VFMADD231PS Z22, Z18, Z10
	VFMADD231PS Z20, Z19, Z3
	VFMADD231PS Z21, Z19, Z7
	VFMADD231PS Z22, Z19, Z11
	VCVTPS2PH $0, Z0, Y24
	VCVTPS2PH $0, Z4, Y25
	VCVTPS2PH $0, Z8, Y26
	VCVTPS2PH $0, Z1, Y28
	VCVTPS2PH $0, Z5, Y29
	VCVTPS2PH $0, Z9, Y30
	VCVTPH2PS Y24, Z0
	VCVTPH2PS Y25, Z4
	VCVTPH2PS Y26, Z8
	VCVTPH2PS Y28, Z1
	VCVTPH2PS Y29, Z5
	VCVTPH2PS Y30, Z9
	VCVTPS2PH $0, Z2, Y24
	VCVTPS2PH $0, Z6, Y25
	VCVTPS2PH $0, Z10, Y26
	VCVTPS2PH $0, Z3, Y28
	VCVTPS2PH $0, Z7, Y29
	VCVTPS2PH $0, Z11, Y30
	VCVTPH2PS Y24, Z2
	VCVTPH2PS Y25, Z6
	VCVTPH2PS Y26, Z10
	VCVTPH2PS Y28, Z3
	VCVTPH2PS Y29, Z7
	VCVTPH2PS Y30, Z11
	ADDQ $4, BX
	ADDQ R11, R10
	DECQ CX
	JNZ  m3step
	MOVQ DI, AX
	VMOVUPS Z0, 0(AX)
	VMOVUPS Z1, 64(AX)
	VMOVUPS Z2, 128(AX)
	VMOVUPS Z3, 192(AX)
	ADDQ R14, AX
	VMOVUPS Z4, 0(AX)
	VMOVUPS Z5, 64(AX)
	VMOVUPS Z6, 128(AX)
	VMOVUPS Z7, 192(AX)
	ADDQ R14, AX
	VMOVUPS Z8, 0(AX)
	VMOVUPS Z9, 64(AX)
	VMOVUPS Z10, 128(AX)
	VMOVUPS Z11, 192(AX)
	ADDQ $256, DI
	ADDQ $128, SI
	SUBQ $64, R12
	JNZ  m3block
	VZEROUPPER
	RET

// scoreIdx orders a ZMM register of two rows' accumulators (row A in lanes
// 0-7, row B in 8-15) as A0-3, B0-3, A4-7, B4-7: the halves then add into
// the pairs l, l+4 of each row.
DATA scoreIdx<>+0(SB)/8, $0x0000000100000000
DATA scoreIdx<>+8(SB)/8, $0x0000000300000002
DATA scoreIdx<>+16(SB)/8, $0x0000000900000008
DATA scoreIdx<>+24(SB)/8, $0x0000000b0000000a
DATA scoreIdx<>+32(SB)/8, $0x0000000500000004
DATA scoreIdx<>+40(SB)/8, $0x0000000700000006
DATA scoreIdx<>+48(SB)/8, $0x0000000d0000000c
DATA scoreIdx<>+56(SB)/8, $0x0000000f0000000e
GLOBL scoreIdx<>(SB), RODATA|NOPTR, $64

// scoreT4 transposes a ZMM register of four rows' scores for four queries
// (row r's 128-bit block holding queries 0-3) into four queries' scores of
// four rows (query q's block holding rows 0-3).
DATA scoreT4<>+0(SB)/8, $0x0000000400000000
DATA scoreT4<>+8(SB)/8, $0x0000000c00000008
DATA scoreT4<>+16(SB)/8, $0x0000000500000001
DATA scoreT4<>+24(SB)/8, $0x0000000d00000009
DATA scoreT4<>+32(SB)/8, $0x0000000600000002
DATA scoreT4<>+40(SB)/8, $0x0000000e0000000a
DATA scoreT4<>+48(SB)/8, $0x0000000700000003
DATA scoreT4<>+56(SB)/8, $0x0000000f0000000b
GLOBL scoreT4<>(SB), RODATA|NOPTR, $64

// func scoresG4F16AVX512(out *float32, ldo int, q *float32, hd int, k *uint16, stride, pairs int)
// out[i·ldo + j] = scoreF16Go(query i, key row j) for the four queries
// i < 4 (hd floats each, from q) and the 2·pairs key rows j (stride bytes
// apart, from k): each ZMM register holds one query's accumulator of two
// rows (row 2p in lanes 0-7, 2p+1 in 8-15), each lane summing what it
// sums in scores4F16AVX2; the two rows' halves are converted once for the
// four queries. The reduction is scoreF16Go's: accumulators 0+2, 1+3, then
// the two, lanes l and l+4, then (t0+t1)+(t2+t3) by two VHADDPS steps. Two
// pairs of rows at a time (g4quad), the first pair's reduced accumulators
// wait in Z17-Z20 while the second's are computed; then the lanes l and
// l+4 of all four rows add in one ZMM per query (VSHUFF32X4), the pairs of
// sums by VSHUFPS and VADDPS (the same additions as VHADDPS, on four rows),
// and one VPERMPS turns the rows' blocks of four queries into the queries'
// blocks of four rows for the stores: the same additions in the same order,
// a quarter fewer instructions a row at head size 64 (BenchmarkScoresF16 on
// Zen 5, 2026-12-05: 1.24x at head size 64, 1.18x at 128). A last odd pair
// takes g4pair.
// The queries are first copied to the frame with each 8 values twice (a
// query's 2·hd floats, 2·hd·4 bytes apart, from a 64-byte boundary), so
// that the multiply-adds take them as aligned full-width memory operands:
// broadcasting them from q at every pair of rows took 29% (hd 64) to 45%
// (hd 128) longer on Zen 4 (BenchmarkScoresF16). hd > 0 is a multiple of
// 32, at most 128 (the frame's 4096 bytes, and 64 to align them).
TEXT ·scoresG4F16AVX512(SB), 0, $4160-56
	MOVQ out+0(FP), DI
	MOVQ ldo+8(FP), R8
	SHLQ $2, R8
	LEAQ (R8)(R8*2), R9
	MOVQ q+16(FP), R10
	MOVQ hd+24(FP), R11
	MOVQ R11, R12
	SHRQ $5, R12
	SHLQ $2, R11
	LEAQ (R11)(R11*2), R14
	MOVQ k+32(FP), SI
	MOVQ stride+40(FP), BX
	MOVQ pairs+48(FP), CX
	VMOVDQU32 scoreIdx<>(SB), Z31
	VMOVDQU32 scoreT4<>(SB), Z30

	// The four queries, each 8 values twice, to the frame: query i at
	// 2·i·R11 bytes.
	MOVQ R10, AX
	LEAQ 63(SP), DX
	ANDQ $-64, DX
	MOVQ R12, R13
	SHLQ $2, R13

g4dup:
	VBROADCASTF64X4 0(AX), Z16
	VMOVUPS Z16, 0(DX)
	VBROADCASTF64X4 0(AX)(R11*1), Z17
	VMOVUPS Z17, 0(DX)(R11*2)
	VBROADCASTF64X4 0(AX)(R11*2), Z18
	VMOVUPS Z18, 0(DX)(R11*4)
	VBROADCASTF64X4 0(AX)(R14*1), Z19
	VMOVUPS Z19, 0(DX)(R14*2)
	ADDQ $32, AX
	ADDQ $64, DX
	DECQ R13
	JNZ  g4dup
	SHLQ $1, R11
	LEAQ (R11)(R11*2), R14

g4quad:
	CMPQ CX, $2
	JLT  g4pair
	G4START

g4groupP:
	G4COLUMNS
	JNZ  g4groupP
	G4SUM(Z0, Z1, Z2, Z3, Z17)
	G4SUM(Z4, Z5, Z6, Z7, Z18)
	G4SUM(Z8, Z9, Z10, Z11, Z19)
	G4SUM(Z12, Z13, Z14, Z15, Z20)
	LEAQ (SI)(BX*2), SI
	G4START

g4groupQ:
	G4COLUMNS
	JNZ  g4groupQ
	G4SUM(Z0, Z1, Z2, Z3, Z0)
	G4SUM(Z4, Z5, Z6, Z7, Z4)
	G4SUM(Z8, Z9, Z10, Z11, Z8)
	G4SUM(Z12, Z13, Z14, Z15, Z12)
	VSHUFF32X4 $0x88, Z0, Z17, Z21
	VSHUFF32X4 $0xdd, Z0, Z17, Z22
	VADDPS Z22, Z21, Z0
	VSHUFF32X4 $0x88, Z4, Z18, Z21
	VSHUFF32X4 $0xdd, Z4, Z18, Z22
	VADDPS Z22, Z21, Z4
	VSHUFF32X4 $0x88, Z8, Z19, Z21
	VSHUFF32X4 $0xdd, Z8, Z19, Z22
	VADDPS Z22, Z21, Z8
	VSHUFF32X4 $0x88, Z12, Z20, Z21
	VSHUFF32X4 $0xdd, Z12, Z20, Z22
	VADDPS Z22, Z21, Z12
	VSHUFPS $0x88, Z4, Z0, Z21
	VSHUFPS $0xdd, Z4, Z0, Z22
	VADDPS Z22, Z21, Z0
	VSHUFPS $0x88, Z12, Z8, Z21
	VSHUFPS $0xdd, Z12, Z8, Z22
	VADDPS Z22, Z21, Z8
	VSHUFPS $0x88, Z8, Z0, Z21
	VSHUFPS $0xdd, Z8, Z0, Z22
	VADDPS Z22, Z21, Z0
	VPERMPS Z0, Z30, Z0
	VMOVUPS X0, (DI)
	VEXTRACTF32X4 $1, Z0, (DI)(R8*1)
	VEXTRACTF32X4 $2, Z0, (DI)(R8*2)
	VEXTRACTF32X4 $3, Z0, (DI)(R9*1)
	ADDQ $16, DI
	LEAQ (SI)(BX*2), SI
	SUBQ $2, CX
	JNZ  g4quad
	JMP  g4done

g4pair:
	G4START

g4group:
	G4COLUMNS
	JNZ  g4group
	G4SUM(Z0, Z1, Z2, Z3, Z0)
	VPERMPS Z0, Z31, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS Y1, Y0, Y0
	G4SUM(Z4, Z5, Z6, Z7, Z4)
	VPERMPS Z4, Z31, Z4
	VEXTRACTF64X4 $1, Z4, Y5
	VADDPS Y5, Y4, Y4
	G4SUM(Z8, Z9, Z10, Z11, Z8)
	VPERMPS Z8, Z31, Z8
	VEXTRACTF64X4 $1, Z8, Y9
	VADDPS Y9, Y8, Y8
	G4SUM(Z12, Z13, Z14, Z15, Z12)
	VPERMPS Z12, Z31, Z12
	VEXTRACTF64X4 $1, Z12, Y13
	VADDPS Y13, Y12, Y12
	VHADDPS Y4, Y0, Y0
	VHADDPS Y12, Y8, Y8
	VHADDPS Y8, Y0, Y0
	VMOVSS X0, (DI)
	VEXTRACTPS $1, X0, (DI)(R8*1)
	VEXTRACTPS $2, X0, (DI)(R8*2)
	VEXTRACTPS $3, X0, (DI)(R9*1)
	VEXTRACTF128 $1, Y0, X1
	VMOVSS X1, 4(DI)
	VEXTRACTPS $1, X1, 4(DI)(R8*1)
	VEXTRACTPS $2, X1, 4(DI)(R8*2)
	VEXTRACTPS $3, X1, 4(DI)(R9*1)
	ADDQ $8, DI
	LEAQ (SI)(BX*2), SI
	DECQ CX
	JNZ  g4pair

g4done:
	VZEROUPPER
	RET
