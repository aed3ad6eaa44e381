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

// RoundF16 rounds each value of x to the nearest F16 value, in place (a
// NaN stays a NaN, its payload aside).
func RoundF16(x []float32) { k.roundF16(x) }

func roundF16Go(x []float32) {
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
// are none: they compute what the Go loops below do, bit for bit, without
// a call per cache row.
var f16Runs *f16RunKernels

type f16RunKernels struct {
	scores func(out []float32, ldo int, q []float32, hd int, keys []uint16, stride, count int, kbuf []float32) bool // false: not for this hd
	mads   func(acc []float32, v []uint16, stride int, w []float32) bool
	// group, when set, is MadsF16Group for the shapes it takes (false:
	// not for this shape or kernel set).
	group func(acc []float32, n int, v []uint16, stride int, w []float32, ws, count int) bool
}

// ScoresF16 sets out[i·ldo + j] to the dot product of query i (q holds
// len(q)/hd queries of hd values, already rounded to F16) with the F16 key
// row keys[j·stride:] for j < count, summed in the order ggml_vec_dot_f16
// sums on AVX2 (scoreF16Go): an attention score of llama.cpp's, bit for
// bit. Each key row is widened to float32 once, in kbuf (hd floats), for
// all the queries.
func ScoresF16(out []float32, ldo int, q []float32, hd int, keys []uint16, stride, count int, kbuf []float32) {
	nq := len(q) / hd
	if count == 0 || nq == 0 {
		return
	}
	_ = keys[(count-1)*stride+hd-1]
	_ = out[(nq-1)*ldo+count-1]
	if f16Runs != nil && k != &genericKernels && f16Runs.scores(out, ldo, q, hd, keys, stride, count, kbuf) {
		return
	}
	for j := range count {
		row := keys[j*stride : j*stride+hd]
		for i := range nq {
			out[i*ldo+j] = scoreF16Go(q[i*hd:(i+1)*hd], row)
		}
	}
}

// scoreF16Go is ggml_vec_dot_f16 as its AVX2 build computes it: each 32
// values go to four 8-lane accumulators by fused multiply-adds (value
// 8j+l of a 32 to lane l of accumulator j); the accumulators are added
// 0+2 and 1+3, then the two; then lanes l and l+4, then pairs, then the
// pair sums (_mm_hadd_ps twice); the rest of the values add their products
// one by one in float64, rounded to float32 at the end.
func scoreF16Go(q []float32, row []uint16) float32 {
	var acc [4][8]float32
	np := len(q) &^ 31
	for i := 0; i < np; i += 32 {
		for j := range 4 {
			for l := range 8 {
				e := i + 8*j + l
				acc[j][l] = fma32(f16Table[row[e]], q[e], acc[j][l])
			}
		}
	}
	var t [4]float32
	for l := range 8 {
		acc[0][l] += acc[2][l]
		acc[1][l] += acc[3][l]
		acc[0][l] += acc[1][l]
	}
	for l := range 4 {
		t[l] = acc[0][l] + acc[0][l+4]
	}
	sum := float64((t[0] + t[1]) + (t[2] + t[3]))
	for e := np; e < len(q); e++ {
		sum += float64(f16Table[row[e]] * q[e])
	}
	return float32(sum)
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

// MadsF16Group runs MadsF16(acc[q·n:(q+1)·n], v, stride, w[q·ws:q·ws+count])
// for each of the len(acc)/n queries q: the queries that share a KV head
// (grouped-query attention) over the same cache rows. Each query's
// accumulator sees the same steps in the same order as in its own
// MadsF16 call, so the bits are the same; a kernel can convert each value
// row once for all the queries and keep their independent rounding chains
// in flight together.
func MadsF16Group(acc []float32, n int, v []uint16, stride int, w []float32, ws, count int) {
	if count <= 0 || n <= 0 || len(acc) < n {
		return
	}
	nq := len(acc) / n
	_ = v[(count-1)*stride+n-1]
	_ = w[(nq-1)*ws+count-1]
	if f16Runs != nil && f16Runs.group != nil && k != &genericKernels && f16Runs.group(acc[:nq*n], n, v, stride, w, ws, count) {
		return
	}
	for q := range nq {
		MadsF16(acc[q*n:(q+1)*n], v, stride, w[q*ws:q*ws+count])
	}
}

func madsF16Go(acc []float32, v []uint16, stride int, w []float32) {
	for j, s := range w {
		k.madF16(acc, v[j*stride:j*stride+len(acc)], s)
	}
}
