package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestKernelsMatchGeneric holds every kernel in use against its pure-Go
// reference over lengths from 0 blocks up, at misaligned offsets. With no
// per-architecture kernels the two sets are the same and this is a smoke
// test; it is the harness for accelerated kernels. Quantizers must agree
// byte for byte, dot products within float32 rounding of a different
// summation order.
func TestKernelsMatchGeneric(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	blockCounts := []int{0, 1, 2, 3, 7, 8, 9, 16, 17}
	dots := []struct {
		w         Type
		act       Type
		got, want func(w, a []byte) float32
	}{
		{Q4_0, Q8_0, k.dotQ4_0Q8_0, genericKernels.dotQ4_0Q8_0},
		{Q8_0, Q8_0, k.dotQ8_0Q8_0, genericKernels.dotQ8_0Q8_0},
		{Q4_K, Q8_K, k.dotQ4_KQ8_K, genericKernels.dotQ4_KQ8_K},
		{Q6_K, Q8_K, k.dotQ6_KQ8_K, genericKernels.dotQ6_KQ8_K},
	}
	for _, d := range dots {
		for _, nb := range blockCounts {
			for off := 0; off < 4; off++ {
				n := nb * d.w.BlockSize()
				w := misaligned(encode(t, d.w, testData(rng, n)), off)
				a := misaligned(quantizeAct(t, d.act, testData(rng, n)), 3-off)
				got, want := d.got(w, a), d.want(w, a)
				_, mag := dot64(decode(t, d.w, w, n), decodeAct(t, d.act, a, n))
				if !closeDot(got, want, mag) {
					t.Fatalf("%v x %v, %d blocks, offset %d: kernel %v, generic %v", d.w, d.act, nb, off, got, want)
				}
			}
		}
	}

	floatDots := []struct {
		w         Type
		round     func(float32) float32
		got, want func(w []byte, x []float32) float32
	}{
		{F16, func(v float32) float32 { return F16ToF32(F32ToF16(v)) }, k.dotF16, genericKernels.dotF16},
		{BF16, func(v float32) float32 { return BF16ToF32(F32ToBF16(v)) }, k.dotBF16, genericKernels.dotBF16},
		{F32, func(v float32) float32 { return v }, dotF32Go, dotF32Go},
	}
	for _, d := range floatDots {
		for _, n := range []int{0, 1, 2, 3, 4, 5, 15, 16, 17, 31, 32, 33, 255, 256, 257, 4097} {
			for off := 0; off < 4; off++ {
				w := misaligned(encode(t, d.w, testData(rng, n)), off)
				x := testData(rng, n)
				for i := range x {
					x[i] = d.round(x[i])
				}
				got, want := d.got(w, x), d.want(w, x)
				// The F32 weights at an odd offset take the decoding path;
				// compare with an exact float64 dot as well.
				ref, mag := dot64(decode(t, d.w, w, n), x)
				if !closeDot(got, want, mag) || !closeDot(got, float32(ref), mag) {
					t.Fatalf("%v, %d values, offset %d: kernel %v, generic %v, float64 %v", d.w, n, off, got, want, ref)
				}
			}
		}
	}

	for _, q := range []struct {
		t         Type
		got, want func(x []float32, dst []byte)
	}{
		{Q8_0, k.quantizeQ8_0, genericKernels.quantizeQ8_0},
		{Q8_K, k.quantizeQ8_K, genericKernels.quantizeQ8_K},
	} {
		for _, nb := range blockCounts {
			n := nb * q.t.BlockSize()
			x := testData(rng, n)
			size := nb * q.t.BlockBytes()
			got := make([]byte, size+8) // guard bytes past the output
			want := make([]byte, size)
			for i := range got {
				got[i] = 0xa5
			}
			q.got(x, got[:size])
			q.want(x, want)
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("quantize %v, %d blocks: first difference at byte %d: %#02x, generic %#02x", q.t, nb, i, got[i], want[i])
				}
			}
			for i := size; i < len(got); i++ {
				if got[i] != 0xa5 {
					t.Fatalf("quantize %v, %d blocks: wrote guard byte %d", q.t, nb, i)
				}
			}
		}
	}
}

// misaligned returns a copy of b starting off bytes into a fresh buffer.
func misaligned(b []byte, off int) []byte {
	buf := make([]byte, len(b)+off)
	copy(buf[off:], b)
	return buf[off:]
}

func quantizeAct(t *testing.T, typ Type, x []float32) []byte {
	b := make([]byte, len(x)/typ.BlockSize()*typ.BlockBytes())
	switch typ {
	case Q8_0:
		genericKernels.quantizeQ8_0(x, b)
	case Q8_K:
		genericKernels.quantizeQ8_K(x, b)
	default:
		t.Fatalf("no activation quantizer for %v", typ)
	}
	return b
}

func decodeAct(t *testing.T, typ Type, a []byte, n int) []float32 {
	if typ == Q8_K {
		return dequantizeQ8_K(t, a, n)
	}
	return decode(t, typ, a, n)
}

// closeDot reports whether two float32 dot products agree up to rounding in
// a different summation order, given mag = Σ|w·x| of their terms.
func closeDot(a, b float32, mag float64) bool {
	return math.Abs(float64(a)-float64(b)) <= 1e-5*mag
}
