//go:build (amd64 || arm64) && !noasm && gc

package quant

import (
	"fmt"
	"sync"
)

// chunkBlocks is how many blocks of a tile gemmChunked repacks at a time:
// 16 rows of them (up to 17 KiB) stay in L1 while every activation row is
// applied to them.
const chunkBlocks = 32

// chunkScratch is gemmChunked's working memory: the repacked blocks, and
// the outputs of a partial tile (the kernels compute all 16 lanes). It is
// pooled, not on the stack: the kernels are called through func values, so
// what is passed to them escapes.
type chunkScratch struct {
	buf [chunkBlocks * panelRows * q8_0Bytes]byte
	tmp [panelRows * panelRows]float32
}

var chunkBufs = sync.Pool{New: func() any { return new(chunkScratch) }}

// gemmChunked is gemmGo on the file's layout (tiles of at most gemmRows
// weight rows, any number of activation rows) for the panel kernels of
// amd64 and arm64: each tile is repacked into panel layout chunkBlocks
// blocks at a time and computed by the panel kernels, so a matrix gives the
// same bits repacked or not. pack writes blocks [b0, b0+nb) of the tile's
// rows (tw is the tile's first row) in panel layout into buf; tile adds
// activation rows [i0, i0+cc) times those blocks into dst (rows dys apart).
func gemmChunked(t Type, w []byte, rb, r0, rows int, a *gemmActs, i0, c int, y []float32, ys int,
	pack func(tw []byte, b0, nb int, buf []byte),
	tile func(buf []byte, b0, nb, i0, cc int, dst []float32, dys int)) {
	if rows <= 0 || c <= 0 || a.nb == 0 {
		return
	}
	if rows > gemmRows || (t != Q4_0 && t != Q8_0) || a.nb*t.BlockBytes() > rb || i0 < 0 || i0+c > a.n {
		panic(fmt.Sprintf("quant: gemm tile of %d rows of %d bytes of %v, %d blocks, activation rows [%d, %d) of %d", rows, rb, t, a.nb, i0, i0+c, a.n))
	}
	_ = w[(r0+rows-1)*rb+a.nb*t.BlockBytes()-1]
	_ = y[(c-1)*ys+rows-1]
	sc := chunkBufs.Get().(*chunkScratch)
	defer chunkBufs.Put(sc)
	// Whole tiles add into y; partial ones into tmp, panelRows activation
	// rows at a time.
	buf, tmp := sc.buf[:], sc.tmp[:]
	for c0 := 0; c0 < c; {
		cc, dst, dys := c-c0, y[c0*ys:], ys
		if rows < gemmRows {
			cc, dst, dys = min(cc, panelRows), tmp, panelRows
		}
		for i := 0; i < cc; i++ {
			clear(dst[i*dys : i*dys+rows])
		}
		for b0 := 0; b0 < a.nb; b0 += chunkBlocks {
			nb := min(chunkBlocks, a.nb-b0)
			pack(w[r0*rb:], b0, nb, buf)
			tile(buf, b0, nb, i0+c0, cc, dst, dys)
		}
		if rows < gemmRows {
			for i := 0; i < cc; i++ {
				copy(y[(c0+i)*ys:(c0+i)*ys+rows], tmp[i*panelRows:])
			}
		}
		c0 += cc
	}
}

// packChunk writes blocks [b0, b0+nb) of the rows rows at w (rb bytes
// apart) in panel layout into dst, as packPanel does for whole rows; the
// lanes of missing rows keep whatever dst held (their outputs are dropped).
func packChunk(t Type, w []byte, rb, rows, b0, nb int, dst []byte) {
	bw := t.BlockBytes()
	for i := 0; i < rows; i++ {
		row := w[i*rb+b0*bw : i*rb+(b0+nb)*bw]
		if t == Q4_0 {
			for b := 0; b < nb; b++ {
				blk := (*[q4_0Bytes]byte)(row[b*q4_0Bytes:])
				out := (*[panelRows * q4_0Bytes]byte)(dst[b*panelRows*q4_0Bytes:])
				out[2*i], out[2*i+1] = blk[0], blk[1]
				for g := 0; g < 4; g++ {
					copy(out[32+64*g+4*i:32+64*g+4*i+4], blk[2+4*g:])
				}
			}
			continue
		}
		for b := 0; b < nb; b++ {
			blk := (*[q8_0Bytes]byte)(row[b*q8_0Bytes:])
			out := (*[panelRows * q8_0Bytes]byte)(dst[b*panelRows*q8_0Bytes:])
			out[2*i], out[2*i+1] = blk[0], blk[1]
			for g := 0; g < 8; g++ {
				o := out[32+64*g+4*i : 32+64*g+4*i+4]
				o[0], o[1], o[2], o[3] = blk[2+4*g]^0x80, blk[3+4*g]^0x80, blk[4+4*g]^0x80, blk[5+4*g]^0x80
			}
		}
	}
}
