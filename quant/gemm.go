package quant

import (
	"encoding/binary"
	"math"
)

// The register-blocked matmul for Q4_0 and Q8_0 weights (gemm_amd64.s for
// AVX-512 VNNI, gemm_avx2_amd64.s for AVX2).
//
// Its result for one output is defined here, independently of any tiling,
// so that every kernel variant (any number of weight rows or activation rows
// per tile, any thread split) and the Go twin gemmGo give the same bits:
//
//	acc = 0
//	for each block b of 32 values:
//	    isum = Σ u_j·a_j + corr_b        (int32, exact)
//	    acc  = fma32(float32(isum), dw_b*da_b, acc)
//	y = acc
//
// where a is the activation block quantized to Q8_0, u the weights as
// unsigned bytes (the Q4_0 nibble q, or the Q8_0 weight + 128) and
// corr_b = -8·Σa (Q4_0) or -128·Σa (Q8_0), so that isum equals ggml's
// Σ (q-8)·a or Σ w·a. dw_b*da_b is a float32 product of the two block
// scales and fma32 a fused float32 multiply-add. Only the float32 part
// differs from dotQ4_0Q8_0Go and dotQ8_0Q8_0Go (one rounding fewer per
// block). Since MatMul uses this one definition for every n, a row's outputs
// do not depend on the batch it is computed in.

// gemmActs holds a batch of activation rows quantized to Q8_0 and laid out
// for the gemm kernels, block-major: the 32 int8 values of block b of row i
// at q[(b*n+i)*32:], and at side[(b*n+i)*2:] the block's float32 scale (as
// bits) and its correction corr_b.
type gemmActs struct {
	n, nb int
	q     []byte
	side  []uint32
}

// gemmCorrection is the multiple of Σa subtracted per block for weight type t
// (the offset that makes its weights unsigned).
func gemmCorrection(t Type) int32 {
	if t == Q4_0 {
		return 8
	}
	return 128
}

// put stores activation row i, given as Q8_0 blocks in src, for weights of
// type t, with the kernel set's putActs.
func (g *gemmActs) put(t Type, i int, src []byte) { k.putActs(g, t, i, src) }

// putGo is put's Go twin. It runs once per row and block of every batched
// product, so it moves and sums the 32 quants eight at a time: the bytes
// biased by 128 (x^0x80 = x+128, unsigned) are added in 16-bit lanes (at
// most 4·2·255) and the four lanes folded by a multiply (at most
// 32·255 < 2^16).
func (g *gemmActs) putGo(t Type, i int, src []byte) {
	off := gemmCorrection(t)
	const bias, lo8, ones16 = 0x8080808080808080, 0x00ff00ff00ff00ff, 0x0001000100010001
	for b := 0; b < g.nb; b++ {
		blk := (*[q8_0Bytes]byte)(src[b*q8_0Bytes:])
		e := b*g.n + i
		dst := (*[qk8_0]byte)(g.q[e*qk8_0:])
		var lanes uint64
		for w := 0; w < qk8_0; w += 8 {
			v := binary.LittleEndian.Uint64(blk[2+w:])
			binary.LittleEndian.PutUint64(dst[w:], v)
			u := v ^ bias
			lanes += u&lo8 + (u>>8)&lo8
		}
		sum := int32(lanes*ones16>>48) - 128*qk8_0
		g.side[2*e] = math.Float32bits(f16At(blk[0:]))
		g.side[2*e+1] = uint32(-off * sum)
	}
}

// fma32 is x*y+z rounded once to float32. The product of two float32s is
// exact in float64; the sum is rounded to odd in float64 (53 bits, more
// than 24+2) so that the final rounding to float32 is correct.
func fma32(x, y, z float32) float32 {
	p := float64(x) * float64(y)
	zz := float64(z)
	s := p + zz
	// TwoSum: e is the part of p+zz that s lost.
	bv := s - p
	e := (p - (s - bv)) + (zz - bv)
	if e != 0 && !math.IsInf(s, 0) {
		bits := math.Float64bits(s)
		if bits&1 == 0 {
			if (e > 0) == (s > 0) {
				bits++
			} else {
				bits--
			}
			s = math.Float64frombits(bits)
		}
	}
	return float32(s)
}

// gemmGo is the Go twin of the gemm kernels: outputs of weight rows
// [r0, r0+rows) of w (row stride rb bytes, type t) for activation rows
// [i0, i0+c) of a, stored at y[(i-i0)*ys + r-r0].
func gemmGo(t Type, w []byte, rb, r0, rows int, a *gemmActs, i0, c int, y []float32, ys int) {
	bw := t.BlockBytes()
	for i := i0; i < i0+c; i++ {
		for r := r0; r < r0+rows; r++ {
			row := w[r*rb:]
			var acc float32
			for b := 0; b < a.nb; b++ {
				blk := row[b*bw:]
				e := b*a.n + i
				q := a.q[e*qk8_0 : (e+1)*qk8_0]
				isum := int32(a.side[2*e+1])
				if t == Q4_0 {
					for j := 0; j < 16; j++ {
						isum += int32(blk[2+j]&0xf)*int32(int8(q[j])) + int32(blk[2+j]>>4)*int32(int8(q[j+16]))
					}
				} else {
					for j := 0; j < 32; j++ {
						isum += int32(blk[2+j]^0x80) * int32(int8(q[j]))
					}
				}
				s := f16At(blk) * math.Float32frombits(a.side[2*e])
				acc = fma32(float32(isum), s, acc)
			}
			y[(i-i0)*ys+r-r0] = acc
		}
	}
}

// Tile of the gemm kernels: gemmRows weight rows (one per int32 lane of a
// 512-bit register) by up to gemmCols activation rows (one accumulator
// register each).
const (
	gemmRows = 16
	gemmCols = 16
)

// TileRows is how many activation rows (tokens of a batch) the matrix
// kernels take at a time: a batch of b rows costs about b/TileRows passes
// of a full tile plus one of the remainder, so cost does not grow evenly
// with b (package cost models it so).
const TileRows = gemmCols
