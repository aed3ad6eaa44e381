//go:build amd64 && !noasm && gc

package quant

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
)

// asmDots pairs each amd64 dot kernel with its Go twin.
var asmDots = []struct {
	w, act    Type
	asm, twin func(w, a []byte) float32
}{
	{Q8_0, Q8_0, dotQ8_0Q8_0_amd64, dotQ8_0Q8_0Go},
	{Q4_0, Q8_0, dotQ4_0Q8_0_amd64, dotQ4_0Q8_0Go},
	{Q4_K, Q8_K, dotQ4_KQ8_K_amd64, dotQ4_KQ8_KGo},
	{Q6_K, Q8_K, dotQ6_KQ8_K_amd64, dotQ6_KQ8_KGo},
}

// TestArchKernelsInUse checks which sets this CPU offers and that the best
// is in use (unless SHADE_KERNELS names another).
func TestArchKernelsInUse(t *testing.T) {
	want := []string{"generic"}
	if haveAVX2FMA {
		want = append(want, "avx2")
	}
	if haveAVXVNNI {
		want = append(want, "avxvnni")
	}
	if haveAVX2FMA && haveVNNI {
		want = append(want, "avx512")
	}
	if got := strings.Join(KernelSets(), ","); got != strings.Join(want, ",") {
		t.Errorf("KernelSets() = %s, want %s", got, strings.Join(want, ","))
	}
	if os.Getenv(KernelsEnv) == "" && !strings.HasPrefix(Kernels(), want[len(want)-1]) {
		t.Errorf("Kernels() = %q, want the best set %s", Kernels(), want[len(want)-1])
	}
}

// TestAsmDotsMatchGo holds each amd64 dot kernel against its Go twin over
// quantized realistic data and over raw blocks of random and extreme bytes
// (all nibbles 0 or 15, int8 -128 and 127 weights and scales, activations at
// ±127, Q8_K activations at -128), for 0..17 and 255..257 blocks at
// misaligned offsets.
func TestAsmDotsMatchGo(t *testing.T) {
	if !haveAVX2FMA {
		t.Skip("CPU lacks AVX2, FMA or F16C")
	}
	rng := rand.New(rand.NewPCG(31, 32))
	var counts []int
	for nb := 0; nb <= 17; nb++ {
		counts = append(counts, nb)
	}
	counts = append(counts, 255, 256, 257)
	modes := []string{"quantized", "random", "zero", "0xff", "0x80", "0x7f", "max-products"}
	for _, d := range asmDots {
		for _, mode := range modes {
			for _, nb := range counts {
				off := rng.IntN(8)
				var w, a []byte
				if mode == "quantized" {
					n := nb * d.w.BlockSize()
					w = encode(t, d.w, testData(rng, n))
					a = quantizeAct(t, d.act, testData(rng, n))
				} else {
					w = rawWeights(rng, d.w, nb, mode)
					a = rawActs(rng, d.act, nb, mode)
				}
				w, a = misaligned(w, off), misaligned(a, 7-off)
				checkAsmDot(t, fmt.Sprintf("%v x %v, %s, %d blocks, offset %d", d.w, d.act, mode, nb, off),
					d.w, d.act, nb, w, a, d.asm, d.twin)
			}
		}
	}
}

// checkAsmDot compares asm against twin on w, a (nb blocks) within float32
// rounding of Σ|terms| and, on failure, names the first block that differs.
func checkAsmDot(t *testing.T, what string, wt, at Type, nb int, w, a []byte, asm, twin func(w, a []byte) float32) {
	t.Helper()
	n := nb * wt.BlockSize()
	got, want := asm(w, a), twin(w, a)
	_, mag := dot64(decode(t, wt, w, n), decodeAct(t, at, a, n))
	if closeDot(got, want, mag) {
		return
	}
	wb, ab := wt.BlockBytes(), at.BlockBytes()
	for b := 0; b < nb; b++ {
		bw, ba := w[b*wb:(b+1)*wb], a[b*ab:(b+1)*ab]
		g, x := asm(bw, ba), twin(bw, ba)
		_, m := dot64(decode(t, wt, bw, wt.BlockSize()), decodeAct(t, at, ba, wt.BlockSize()))
		if !closeDot(g, x, m) {
			t.Fatalf("%s: asm %v, Go %v; first bad block %d: asm %v, Go %v", what, got, want, b, g, x)
		}
	}
	t.Fatalf("%s: asm %v, Go %v (every block alone agrees)", what, got, want)
}

// Finite f16 block scales for raw blocks, including 1 (so that sums are
// integers), negatives and a subnormal.
var testHalves = []uint16{0x3c00, 0xb800, 0x2e66, 0x1400, 0x5640, 0x0001, 0x8123}

// rawWeights returns nb blocks of type typ whose quant bytes (and Q4_K/Q6_K
// scale bytes) are random or all one byte, with finite f16 scales.
func rawWeights(rng *rand.Rand, typ Type, nb int, mode string) []byte {
	bs := typ.BlockBytes()
	b := make([]byte, nb*bs)
	fillMode(rng, b, mode)
	for i := 0; i < nb; i++ {
		blk := b[i*bs : (i+1)*bs]
		h := testHalves[rng.IntN(len(testHalves))]
		switch typ {
		case Q8_0, Q4_0:
			binary.LittleEndian.PutUint16(blk, h)
		case Q4_K:
			binary.LittleEndian.PutUint16(blk, h)
			binary.LittleEndian.PutUint16(blk[2:], testHalves[rng.IntN(len(testHalves))])
		case Q6_K:
			binary.LittleEndian.PutUint16(blk[208:], h)
		}
	}
	return b
}

// rawActs returns nb activation blocks (Q8_0 or Q8_K) with quants random or
// extreme, a finite scale and, for Q8_K, matching bsums. Q8_0 activations
// stay within ±127, as quantizeQ8_0 writes them; Q8_K ones may be -128.
func rawActs(rng *rand.Rand, typ Type, nb int, mode string) []byte {
	bs := typ.BlockBytes()
	b := make([]byte, nb*bs)
	for i := 0; i < nb; i++ {
		blk := b[i*bs : (i+1)*bs]
		var q []byte
		if typ == Q8_0 {
			binary.LittleEndian.PutUint16(blk, testHalves[rng.IntN(len(testHalves))])
			q = blk[2:]
		} else {
			binary.LittleEndian.PutUint32(blk, 0x3f800000-uint32(rng.IntN(3))<<23) // 1, 0.5, 0.25
			if rng.IntN(2) == 0 {
				blk[3] |= 0x80
			}
			q = blk[4 : 4+qkK]
		}
		switch mode {
		case "zero":
			clear(q)
		case "0x80", "max-products": // most negative
			for j := range q {
				q[j] = 0x80
			}
		case "0x7f":
			for j := range q {
				q[j] = 0x7f
			}
		default:
			for j := range q {
				q[j] = byte(rng.IntN(256))
			}
		}
		if typ == Q8_0 {
			for j := range q {
				if q[j] == 0x80 {
					q[j] = 0x81 // -127
				}
			}
			continue
		}
		for j := 0; j < qkK/16; j++ {
			var s int16
			for _, v := range q[16*j : 16*j+16] {
				s += int16(int8(v))
			}
			binary.LittleEndian.PutUint16(blk[4+qkK+2*j:], uint16(s))
		}
	}
	return b
}

func fillMode(rng *rand.Rand, b []byte, mode string) {
	var c byte
	switch mode {
	case "zero":
		c = 0
	case "0xff":
		c = 0xff
	case "0x80":
		c = 0x80
	case "0x7f":
		c = 0x7f
	case "max-products": // largest |q| for every type against -128/-127 activations
		c = 0x80 // Q8_0 -128; Q4_0 nibbles 0 (-8) and 8; Q6_K low bits 0
	default:
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		return
	}
	for i := range b {
		b[i] = c
	}
}

// TestAsmFloatDotsMatchGo holds the F16 and BF16 kernels against their Go
// twins: both sum exact float32 products in float64, so they agree to far
// better than float32 rounding. Weights are random finite bit patterns
// (subnormals included) or quantized realistic data.
func TestAsmFloatDotsMatchGo(t *testing.T) {
	if !haveAVX2FMA {
		t.Skip("CPU lacks AVX2, FMA or F16C")
	}
	rng := rand.New(rand.NewPCG(33, 34))
	for _, d := range []struct {
		typ       Type
		round     func(float32) float32
		finite    func(uint16) bool
		asm, twin func(w []byte, x []float32) float32
	}{
		{F16, func(v float32) float32 { return F16ToF32(F32ToF16(v)) },
			func(h uint16) bool { return h&0x7c00 != 0x7c00 }, dotF16_amd64, dotF16Go},
		{BF16, func(v float32) float32 { return BF16ToF32(F32ToBF16(v)) },
			func(h uint16) bool { return h&0x7f80 != 0x7f80 }, dotBF16_amd64, dotBF16Go},
	} {
		var ns []int
		for n := 0; n <= 40; n++ {
			ns = append(ns, n)
		}
		ns = append(ns, 255, 256, 257, 4096, 4097)
		for _, raw := range []bool{false, true} {
			for _, n := range ns {
				off := rng.IntN(8)
				var w []byte
				x := testData(rng, n)
				for i := range x {
					x[i] = d.round(x[i])
				}
				if raw {
					w = make([]byte, 2*n)
					for i := 0; i < n; i++ {
						h := uint16(rng.Uint32())
						for !d.finite(h) {
							h = uint16(rng.Uint32())
						}
						binary.LittleEndian.PutUint16(w[2*i:], h)
					}
				} else {
					w = encode(t, d.typ, testData(rng, n))
				}
				w = misaligned(w, off)
				got, want := d.asm(w, x), d.twin(w, x)
				_, mag := dot64(decode(t, d.typ, w, n), x)
				if math.Abs(float64(got)-float64(want)) > 1e-7*mag {
					t.Fatalf("%v, %d values, raw %v, offset %d: asm %v, Go %v", d.typ, n, raw, off, got, want)
				}
			}
		}
	}
}

// TestAsmQuantizeQ8_0 holds quantizeQ8_0_amd64 to quantizeQ8_0Acts byte for
// byte, guard bytes included, on realistic data and on blocks of halfway
// ties, zeros, subnormals, tiny and huge magnitudes, Inf and NaN.
func TestAsmQuantizeQ8_0(t *testing.T) {
	if !haveAVX2FMA {
		t.Skip("CPU lacks AVX2, FMA or F16C")
	}
	rng := rand.New(rand.NewPCG(35, 36))
	special := []func(b []float32){
		func(b []float32) { // amax 127: d = 1, and every x.5 a tie
			for i := range b {
				b[i] = float32(rng.IntN(254)-127) + 0.5
			}
			b[rng.IntN(32)] = 127
		},
		func(b []float32) { clear(b) },
		func(b []float32) {
			for i := range b {
				b[i] = float32(math.Copysign(0, -1))
			}
		},
		func(b []float32) { // subnormals: d rounds to 0
			for i := range b {
				b[i] = math.Float32frombits(uint32(rng.IntN(200)))
			}
		},
		func(b []float32) { // tiny: d subnormal, 127/amax overflows or nearly
			for i := range b {
				b[i] = float32(rng.NormFloat64()) * 1e-37 * float32(1+rng.IntN(40))
			}
		},
		func(b []float32) { // huge: d beyond the half range
			for i := range b {
				b[i] = float32(rng.NormFloat64()) * 1e37
			}
		},
		func(b []float32) { // 0.49999997 and friends
			for i := range b {
				b[i] = math.Float32frombits(0x3effffff+uint32(rng.IntN(3))) * float32(1-2*rng.IntN(2))
			}
			b[0] = 127
		},
		func(b []float32) { b[rng.IntN(32)] = float32(math.Inf(1 - 2*rng.IntN(2))) },
		func(b []float32) { b[rng.IntN(32)] = float32(math.NaN()) },
		func(b []float32) { // random bit patterns, finite or not
			for i := range b {
				b[i] = math.Float32frombits(rng.Uint32())
			}
		},
	}
	for _, nb := range []int{0, 1, 2, 3, 7, 16, 17, 64, 255, 256, 257} {
		for trial := 0; trial < 4; trial++ {
			x := testData(rng, nb*qk8_0)
			if trial > 0 {
				for b := 0; b < nb; b++ {
					if rng.IntN(3) == 0 {
						special[rng.IntN(len(special))](x[b*qk8_0 : (b+1)*qk8_0])
					}
				}
			}
			size := nb * q8_0Bytes
			got := make([]byte, size+8)
			for i := range got {
				got[i] = 0xa5
			}
			want := make([]byte, size)
			quantizeQ8_0_amd64(x, got[:size])
			quantizeQ8_0Acts(x, want)
			for i := range want {
				if got[i] != want[i] {
					b := i / q8_0Bytes
					t.Fatalf("%d blocks, trial %d: first difference at byte %d (block %d): %#02x, Go %#02x; block %v",
						nb, trial, i, b, got[i], want[i], x[b*qk8_0:(b+1)*qk8_0])
				}
			}
			for i := size; i < len(got); i++ {
				if got[i] != 0xa5 {
					t.Fatalf("%d blocks: wrote guard byte %d", nb, i)
				}
			}
		}
	}
}

func BenchmarkQuantizeQ8_0(b *testing.B) {
	if !haveAVX2FMA {
		b.Skip("CPU lacks AVX2, FMA or F16C")
	}
	x := testData(rand.New(rand.NewPCG(43, 44)), 4096)
	dst := make([]byte, 4096/qk8_0*q8_0Bytes)
	for _, impl := range []struct {
		name string
		f    func(x []float32, dst []byte)
	}{{"go", quantizeQ8_0Acts}, {"avx2", quantizeQ8_0_amd64}} {
		b.Run(impl.name, func(b *testing.B) {
			b.SetBytes(int64(4 * len(x)))
			for b.Loop() {
				impl.f(x, dst)
			}
		})
	}
}

func BenchmarkDotKernels(b *testing.B) {
	if !haveAVX2FMA {
		b.Skip("CPU lacks AVX2, FMA or F16C")
	}
	rng := rand.New(rand.NewPCG(41, 42))
	const n = 4096 // one row of a 4096-wide matrix, in L1/L2
	for _, d := range asmDots {
		w := encode(&testing.T{}, d.w, testData(rng, n))
		a := quantizeAct(&testing.T{}, d.act, testData(rng, n))
		for _, impl := range []struct {
			name string
			f    func(w, a []byte) float32
		}{{"go", d.twin}, {"avx2", d.asm}} {
			b.Run(fmt.Sprintf("%v/%s", d.w, impl.name), func(b *testing.B) {
				b.SetBytes(int64(len(w)))
				var s float32
				for b.Loop() {
					s += impl.f(w, a)
				}
				_ = s
			})
		}
	}
	x := testData(rng, n)
	for _, d := range []struct {
		typ       Type
		asm, twin func(w []byte, x []float32) float32
	}{{F16, dotF16_amd64, dotF16Go}, {BF16, dotBF16_amd64, dotBF16Go}} {
		w := encode(&testing.T{}, d.typ, testData(rng, n))
		for _, impl := range []struct {
			name string
			f    func(w []byte, x []float32) float32
		}{{"go", d.twin}, {"avx2", d.asm}} {
			b.Run(fmt.Sprintf("%v/%s", d.typ, impl.name), func(b *testing.B) {
				b.SetBytes(int64(len(w)))
				var s float32
				for b.Loop() {
					s += impl.f(w, x)
				}
				_ = s
			})
		}
	}
}
