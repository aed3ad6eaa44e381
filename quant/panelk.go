package quant

import "encoding/binary"

// Row panels for Q4_K: eight rows in the layout of the Q4_K tile kernels
// (quant/_gen/kquant, "Tile layout"), so that MatMul computes on them
// without unpacking a tile for every product, at decode as in batches.
// Super-block b of the panel of rows [8p, 8p+8) is q4kTileBytes bytes at
// (p·nb + b)·q4kTileBytes:
//
//	0     the 8 rows' f16 d, row r at 2r; at 16 their f16 dmin
//	32    the decoded 6-bit scales: scale j of row r at
//	      32 + 32(j/4) + 16(r/4) + 4(r%4) + j%4
//	96    the mins, placed as the scales
//	160   the quants: bytes 4G..4G+3 of the row's 32-byte group q (the
//	      values 4G.. of sub-blocks 2q and 2q+1) at 160 + 256q + 32G + 4r
//
// Scales and mins take a byte each where the file packs them in 6 bits, so
// a panel is 1184 bytes a super-block against the file's 8·144 = 1152 (3%
// more). Products on panels give the bits of the file's layout (each
// output is dotQ4_KQ8_KGo's, gemmk.go), so a matrix computes the same
// repacked or not.

const (
	// q4kPanelRows is the height of a Q4_K panel: a tile's 8 rows, one per
	// 32-bit lane of a YMM register.
	q4kPanelRows = 8
	// q4kTileBytes is one super-block of a Q4_K panel or tile; the
	// generator (quant/_gen/kquant) lays the kernels out for it.
	q4kTileBytes = 1184
)

// packQ4KPanel writes the 8 Q4_K rows at src (rb bytes apart, nb
// super-blocks each) into dst as one panel. It is the Go twin of the tile
// packer (packQ4KTile, amd64), byte for byte.
func packQ4KPanel(src []byte, rb, nb int, dst []byte) {
	for r := 0; r < q4kPanelRows; r++ {
		lane := 16*(r/4) + 4*(r%4)
		for b := 0; b < nb; b++ {
			blk := (*[q4_KBytes]byte)(src[r*rb+b*q4_KBytes:])
			out := (*[q4kTileBytes]byte)(dst[b*q4kTileBytes:])
			out[2*r], out[2*r+1] = blk[0], blk[1]
			out[16+2*r], out[17+2*r] = blk[2], blk[3]
			sc := (*[kScaleSize]byte)(blk[4:])
			for j := 0; j < 8; j++ {
				s, m := scaleMinK4(j, sc)
				out[32+32*(j/4)+lane+j%4] = s
				out[96+32*(j/4)+lane+j%4] = m
			}
			qs := blk[4+kScaleSize:]
			for q := 0; q < 4; q++ {
				for g := 0; g < 8; g++ {
					copy(out[160+256*q+32*g+4*r:][:4], qs[32*q+4*g:])
				}
			}
		}
	}
}

// q4kPanelBlock writes super-block b of row r of Q4_K panels (rows of nb
// super-blocks) back in the file's layout into blk: the inverse of
// packQ4KPanel, so the bytes are the file's.
func q4kPanelBlock(panels []byte, nb, r, b int, blk []byte) {
	in := (*[q4kTileBytes]byte)(panels[(r/q4kPanelRows*nb+b)*q4kTileBytes:])
	i := r % q4kPanelRows
	lane := 16*(i/4) + 4*(i%4)
	binary.LittleEndian.PutUint16(blk[0:], binary.LittleEndian.Uint16(in[2*i:]))
	binary.LittleEndian.PutUint16(blk[2:], binary.LittleEndian.Uint16(in[16+2*i:]))
	var scales, mins [8]uint8
	for j := 0; j < 8; j++ {
		scales[j] = in[32+32*(j/4)+lane+j%4]
		mins[j] = in[96+32*(j/4)+lane+j%4]
	}
	putScaleMinK4((*[kScaleSize]byte)(blk[4:]), &scales, &mins)
	qs := blk[4+kScaleSize:]
	for q := 0; q < 4; q++ {
		for g := 0; g < 8; g++ {
			copy(qs[32*q+4*g:][:4], in[160+256*q+32*g+4*i:])
		}
	}
}
