package synth

import (
	"math"
	"math/rand/v2"
)

// splitmix64 is a bijective 64-bit mixer (Steele, Lea and Flood's SplitMix64
// finalizer), used to derive generator seeds.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// tensorSeed mixes the user's seed with a tensor name (FNV-1a), so each
// tensor has its own stream and adding a tensor does not shift the others.
func tensorSeed(seed uint64, name string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(name); i++ {
		h ^= uint64(name[i])
		h *= 1099511628211
	}
	return splitmix64(seed ^ splitmix64(h))
}

// normalScale maps a sum of four 16-bit uniforms to unit variance: the sum
// has mean 2·65535 and variance ≈ 65536²/3.
const normalScale = 1.7320508075688772 / 65536

// normalRow fills row with mean + std·z, z approximately N(0, 1): the sum of
// four uniforms (Irwin–Hall), bounded at ±3.46, from one PCG output per
// value. Row r of a tensor has its own PCG stream, so rows can be made in any
// order, on any thread, with the same result.
func normalRow(row []float32, seed uint64, r int, mean, std float32) {
	var g rand.PCG
	g.Seed(seed, splitmix64(seed^uint64(r)))
	k := std * normalScale
	for i := range row {
		x := g.Uint64()
		s := int64(x&0xffff) + int64(x>>16&0xffff) + int64(x>>32&0xffff) + int64(x>>48)
		row[i] = mean + k*float32(s-2*65535)
	}
}

// scaleRMS scales x so that its root mean square is rms.
func scaleRMS(x []float32, rms float32) {
	var ss float64
	for _, v := range x {
		ss += float64(v) * float64(v)
	}
	if ss == 0 {
		return
	}
	k := rms / float32(math.Sqrt(ss/float64(len(x))))
	for i := range x {
		x[i] *= k
	}
}
