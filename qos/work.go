package qos

// blendBlock is how many words of every layer blend processes at a time: a
// 4 KiB tile, so that the destination tile stays in the L1 cache while the
// source layers are added into it, and every layer is a sequential stream
// the hardware prefetchers follow.
const blendBlock = 512

// blend composes len(srcs) source layers into dst, as a compositor blends
// the layers of a frame (app surfaces, status bar, a translucent overlay)
// into the frame buffer: dst = srcs[0] ⊕ salt + srcs[1] + … word by word,
// tile by tile. Every source word is read once and every destination word
// written once, with a few integer operations per word, so the burst is
// bound by memory, not by the core; len(srcs)+1 streams are in flight at
// once, as in a real composition. It returns a fold of the values so the
// work cannot be optimized away. dst and every source must have the same
// length, a multiple of blendBlock.
func blend(dst []uint64, srcs [][]uint64, salt uint64) uint64 {
	var acc uint64
	n := len(dst) &^ (blendBlock - 1)
	for b := 0; b < n; b += blendBlock {
		d := (*[blendBlock]uint64)(dst[b : b+blendBlock])
		s0 := (*[blendBlock]uint64)(srcs[0][b : b+blendBlock])
		for j := 0; j < blendBlock; j += 4 {
			d[j] = s0[j] ^ salt
			d[j+1] = s0[j+1] ^ salt
			d[j+2] = s0[j+2] ^ salt
			d[j+3] = s0[j+3] ^ salt
		}
		for _, s := range srcs[1:] {
			sk := (*[blendBlock]uint64)(s[b : b+blendBlock])
			for j := 0; j < blendBlock; j += 4 {
				d[j] += sk[j]
				d[j+1] += sk[j+1]
				d[j+2] += sk[j+2]
				d[j+3] += sk[j+3]
			}
		}
		acc ^= d[0] ^ d[blendBlock-1]
	}
	return acc
}

// compute runs iters rounds of register-only integer work (four
// independent xorshift chains): the frame's layout, input and logic, which
// touch no memory beyond the core's own caches.
func compute(iters int, seed uint64) uint64 {
	a, b, c, d := seed|1, seed^0x5555, seed+0x1234567, ^seed
	for range iters {
		a ^= a << 13
		a ^= a >> 7
		a ^= a << 17
		b ^= b << 13
		b ^= b >> 7
		b ^= b << 17
		c = c*0x2545F4914F6CDD1D + a
		d = d*0x9E3779B97F4A7C15 + b
	}
	return a ^ b ^ c ^ d
}
