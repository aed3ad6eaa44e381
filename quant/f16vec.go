package quant

import "unsafe"

// The kernels of attention over an F16 KV cache, as ggml's CPU flash
// attention computes it: scores are F16·F16 dot products, and the weighted
// sum of values accumulates in F16, each step a fused multiply-add rounded
// back to half precision. Accumulators are kept as float32 values that are
// always exactly representable in F16.

// MadF16 sets acc[i] = f16(v[i]·s + acc[i]) (one rounding of the fused
// product-sum to float32, then to F16).
func MadF16(acc []float32, v []uint16, s float32) { k.madF16(acc, v[:len(acc)], s) }

// ScaleF16 sets acc[i] = f16(acc[i]·s).
func ScaleF16(acc []float32, s float32) { k.scaleF16(acc, s) }

// ToF16 rounds src to F16 bits in dst (nearest, ties to even).
func ToF16(dst []uint16, src []float32) { k.toF16(dst[:len(src)], src) }

// RoundF16 rounds each value of x to the nearest F16 value, in place.
func RoundF16(x []float32) {
	for i, v := range x {
		x[i] = f16Table[F32ToF16(v)]
	}
}

// DotF16 is the dot product of q, whose values are exactly representable
// in F16, with the F16 vector h (ggml_vec_dot_f16).
func DotF16(q []float32, h []uint16) float32 {
	b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(h))), 2*len(h))
	return k.dotF16(b, q[:len(h)])
}

func madF16Go(acc []float32, v []uint16, s float32) {
	for i, x := range v {
		acc[i] = f16Table[F32ToF16(fma32(f16Table[x], s, acc[i]))]
	}
}

func scaleF16Go(acc []float32, s float32) {
	for i, a := range acc {
		acc[i] = f16Table[F32ToF16(a*s)]
	}
}

func toF16Go(dst []uint16, src []float32) {
	for i, v := range src {
		dst[i] = F32ToF16(v)
	}
}

// f16Runs are the multi-row attention kernels of this CPU, nil where there
// are none: they do what a loop of DotF16 or MadF16 calls does, bit for
// bit, without a call per cache row.
var f16Runs *f16RunKernels

type f16RunKernels struct {
	dots func(out, q []float32, k []uint16, stride int) bool // false: not for this length
	mads func(acc []float32, v []uint16, stride int, w []float32) bool
}

// DotsF16 sets out[j] = DotF16(q, keys[j·stride:]) for every j < len(out):
// the scores of one query against consecutive cache rows stride halves
// apart.
func DotsF16(out, q []float32, keys []uint16, stride int) {
	if len(out) == 0 {
		return
	}
	_ = keys[(len(out)-1)*stride+len(q)-1]
	if f16Runs != nil && k != &genericKernels && f16Runs.dots(out, q, keys, stride) {
		return
	}
	dotsF16Go(out, q, keys, stride)
}

// MadsF16 runs MadF16(acc, v[j·stride:], w[j]) for j = 0, 1, … len(w)-1 in
// that order: the weighted values of consecutive cache rows added to one
// query's F16 accumulator, each step rounded as MadF16 rounds it.
func MadsF16(acc []float32, v []uint16, stride int, w []float32) {
	if len(w) == 0 {
		return
	}
	_ = v[(len(w)-1)*stride+len(acc)-1]
	if f16Runs != nil && k != &genericKernels && f16Runs.mads(acc, v, stride, w) {
		return
	}
	madsF16Go(acc, v, stride, w)
}

func dotsF16Go(out, q []float32, kk []uint16, stride int) {
	for j := range out {
		out[j] = DotF16(q, kk[j*stride:j*stride+len(q)])
	}
}

func madsF16Go(acc []float32, v []uint16, stride int, w []float32) {
	for j, s := range w {
		k.madF16(acc, v[j*stride:j*stride+len(acc)], s)
	}
}
