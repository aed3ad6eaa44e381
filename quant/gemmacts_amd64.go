//go:build amd64 && !noasm && gc

package quant

// gemmActsPutAVX2 stores nb Q8_0 blocks from src (34 bytes each) as
// gemmActs entries: each block's 32 quants at dst (then ds bytes on), its
// scale widened to float32 (as F16ToF32: Inf and NaN keep their payload) at
// side[0] and -off·Σq at side[1] (then ss bytes on).
//
//go:noescape
func gemmActsPutAVX2(src *byte, nb int, dst *byte, ds int, side *uint32, ss int, off int)

// putActs_amd64 is gemmActs.putGo in assembly.
func putActs_amd64(g *gemmActs, t Type, i int, src []byte) {
	if g.nb == 0 {
		return
	}
	// The assembly writes unchecked: check the first and last entries.
	_ = src[g.nb*q8_0Bytes-1]
	last := (g.nb-1)*g.n + i
	_ = g.q[last*qk8_0+qk8_0-1]
	_ = g.side[2*last+1]
	_ = g.q[i*qk8_0]
	gemmActsPutAVX2(&src[0], g.nb, &g.q[i*qk8_0], g.n*qk8_0, &g.side[2*i], g.n*8, int(gemmCorrection(t)))
}
