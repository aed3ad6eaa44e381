//go:build arm64 && !noasm && gc

package quant

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"golang.org/x/sys/cpu"
)

// The arm64 kernels tested directly against their Go twins, whatever
// kernel sets kernels_arm64.go offers (run under qemu-aarch64-static -cpu
// max, or -cpu cortex-a53 for the Asimd variants alone).

// kVariants are the K-quant kernel variants this CPU can run.
func kVariants() []struct {
	name string
	set  int
} {
	out := []struct {
		name string
		set  int
	}{{"asimd", kSetAsimd}}
	if cpu.ARM64.HasASIMDDP {
		out = append(out, struct {
			name string
			set  int
		}{"dotprod", kSetDot})
	}
	return out
}

// TestKQuantKernelsNEON holds every generated K-quant kernel (1..4
// activation rows) bit for bit against the Go twins, for 1..9, 16 and 33
// super-blocks of realistic, random, extreme and non-finite data at
// misaligned offsets, with strided outputs.
func TestKQuantKernelsNEON(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	for _, vr := range kVariants() {
		for ti, typ := range []Type{Q4_K, Q6_K} {
			for _, kind := range []string{"quantized", "random", "max", "min", "nonfinite"} {
				for _, nb := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 33} {
					const acts, ys = kActsNEON, 5
					rb, arb := nb*typ.BlockBytes(), nb*q8_KBytes
					w := misaligned(kWeights(t, rng, typ, 1, nb, kind), rng.IntN(8))
					a := misaligned(kActRows(rng, acts, nb, kind), rng.IntN(8))
					want := make([]float32, acts)
					gemmKGo(typ, w, rb, 0, 1, a, arb, acts, want, 1)
					for c := 1; c <= acts; c++ {
						y := make([]float32, acts*ys)
						kquantKernels[vr.set][ti][c-1](&w[0], &a[0], arb, nb, &y[0], ys)
						for i := range y {
							if i%ys != 0 || i/ys >= c {
								if y[i] != 0 {
									t.Fatalf("%s %v C%d %s nb=%d: wrote y[%d]", vr.name, typ, c, kind, nb, i)
								}
								continue
							}
							if got, exp := y[i], want[i/ys]; !sameFloat(got, exp) {
								t.Fatalf("%s %v C%d %s nb=%d: activation %d = %v (%#x), Go twin %v (%#x)",
									vr.name, typ, c, kind, nb, i/ys, got, math.Float32bits(got), exp, math.Float32bits(exp))
							}
						}
					}
				}
			}
		}
	}
}

// TestKQuantDotsNEON holds the dot-product wrappers to the Go twins bit
// for bit, from 0 super-blocks up, on data of every kind.
func TestKQuantDotsNEON(t *testing.T) {
	rng := rand.New(rand.NewPCG(63, 64))
	dots := map[string][2]func(w, a []byte) float32{
		"asimd":   {dotQ4_KQ8_KAsimd, dotQ6_KQ8_KAsimd},
		"dotprod": {dotQ4_KQ8_KDot, dotQ6_KQ8_KDot},
	}
	for _, vr := range kVariants() {
		for ti, typ := range []Type{Q4_K, Q6_K} {
			twin := []func(w, a []byte) float32{dotQ4_KQ8_KGo, dotQ6_KQ8_KGo}[ti]
			for _, kind := range []string{"quantized", "random", "max", "min", "nonfinite"} {
				for _, nb := range []int{0, 1, 2, 3, 17, 40} {
					var w, a []byte
					if nb > 0 {
						w = misaligned(kWeights(t, rng, typ, 1, nb, kind), rng.IntN(8))
						a = misaligned(kActRows(rng, 1, nb, kind), rng.IntN(8))
					}
					if got, exp := dots[vr.name][ti](w, a), twin(w, a); !sameFloat(got, exp) {
						t.Fatalf("%s %v %s nb=%d: %v, Go twin %v", vr.name, typ, kind, nb, got, exp)
					}
				}
			}
		}
	}
}

// TestGemmKNEON holds gemmKNEON bit for bit against gemmKGo for batch
// sizes 1..33 and more, row ranges starting anywhere and outputs outside
// them untouched, as TestGemmKMatchesTwin does for the set in use.
func TestGemmKNEON(t *testing.T) {
	rng := rand.New(rand.NewPCG(65, 66))
	const rows, maxN = 21, 40
	for _, vr := range kVariants() {
		for _, typ := range []Type{Q4_K, Q6_K} {
			for _, kind := range []string{"quantized", "random", "nonfinite"} {
				for _, nb := range []int{1, 3, 8} {
					rb, arb := nb*typ.BlockBytes(), nb*q8_KBytes
					w := misaligned(kWeights(t, rng, typ, rows, nb, kind), rng.IntN(8))
					a := misaligned(kActRows(rng, maxN, nb, kind), rng.IntN(8))
					want := make([]float32, maxN*rows)
					gemmKGo(typ, w, rb, 0, rows, a, arb, maxN, want, rows)
					for n := 1; n <= maxN; n++ {
						lo := rng.IntN(rows)
						hi := lo + 1 + rng.IntN(rows-lo)
						if n%5 == 0 {
							lo, hi = 0, rows
						}
						i0 := rng.IntN(maxN - n + 1)
						y := make([]float32, n*rows)
						for e := range y {
							y[e] = float32(math.NaN())
						}
						gemmKNEON(vr.set, typ, w, rb, lo, hi, a[i0*arb:], arb, n, y, rows)
						for i := 0; i < n; i++ {
							for r := 0; r < rows; r++ {
								got, exp := y[i*rows+r], want[(i0+i)*rows+r]
								if r < lo || r >= hi {
									if !math.IsNaN(float64(got)) {
										t.Fatalf("%s %v n=%d rows [%d,%d): wrote y[%d][%d]", vr.name, typ, n, lo, hi, i, r)
									}
								} else if !sameFloat(got, exp) {
									t.Fatalf("%s %v %s nb=%d n=%d rows [%d,%d): y[%d][%d] = %v, Go twin %v",
										vr.name, typ, kind, nb, n, lo, hi, i, r, got, exp)
								}
							}
						}
					}
				}
			}
		}
	}
}

// TestQuantizeQ8_KNEON holds the arm64 Q8_K quantizer byte for byte to
// quantizeQ8_K on realistic data and on blocks with zeros, ties for the
// largest magnitude (one sign and both), NaNs (quiet and signalling),
// infinities, subnormals and huge values, from 0 to 9 blocks.
func TestQuantizeQ8_KNEON(t *testing.T) {
	rng := rand.New(rand.NewPCG(67, 68))
	specials := []float32{0, float32(math.Copysign(0, -1)), float32(math.NaN()), math.Float32frombits(0x7fa00001),
		math.Float32frombits(0xffc12345), float32(math.Inf(1)), float32(math.Inf(-1)), 1e-45, -3e-38, 1e-40,
		math.MaxFloat32, -math.MaxFloat32, 1, -1, 0.5}
	for nb := 0; nb <= 9; nb++ {
		for trial := 0; trial < 40; trial++ {
			x := testData(rng, nb*qkK)
			for b := 0; b < nb; b++ {
				blk := x[b*qkK : (b+1)*qkK]
				switch rng.IntN(7) {
				case 0:
					for i := 0; i < 1+rng.IntN(4); i++ {
						blk[rng.IntN(qkK)] = specials[rng.IntN(len(specials))]
					}
				case 1:
					clear(blk)
					if rng.IntN(2) == 0 {
						blk[rng.IntN(qkK)] = float32(math.NaN())
					}
				case 2: // the largest magnitude with both signs
					v := float32(rng.NormFloat64() * 4)
					blk[rng.IntN(qkK)], blk[rng.IntN(qkK)] = -v-10, v+10
				case 3: // the largest magnitude twice, one sign
					v := float32(rng.NormFloat64()*4) + 10
					if rng.IntN(2) == 0 {
						v = -v
					}
					blk[rng.IntN(qkK)], blk[rng.IntN(qkK)] = v, v
				case 4:
					for i := range blk {
						blk[i] = float32(rng.NormFloat64()) * 1e-39
					}
				}
			}
			want := make([]byte, nb*q8_KBytes)
			got := make([]byte, nb*q8_KBytes+8)
			for i := range got {
				got[i] = 0xa5
			}
			quantizeQ8_K(x, want)
			quantizeQ8_K_arm64(x, got[:nb*q8_KBytes])
			if !bytes.Equal(got[:nb*q8_KBytes], want) {
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("%d blocks, trial %d: byte %d (block %d, offset %d) = %#x, Go %#x", nb, trial, i, i/q8_KBytes, i%q8_KBytes, got[i], want[i])
					}
				}
			}
			for i := nb * q8_KBytes; i < len(got); i++ {
				if got[i] != 0xa5 {
					t.Fatalf("%d blocks: wrote guard byte %d", nb, i)
				}
			}
		}
	}
}

// TestFloatDotsNEON holds the F16 and BF16 dots to their Go twins (both
// sum exact products in float64, so within far less than float32
// rounding) and the F32 dot to the Go one within float32 rounding of a
// different order, at every length to 40 and longer, misaligned, on
// realistic values and on random finite bit patterns.
func TestFloatDotsNEON(t *testing.T) {
	rng := rand.New(rand.NewPCG(69, 70))
	var ns []int
	for n := 0; n <= 40; n++ {
		ns = append(ns, n)
	}
	ns = append(ns, 255, 256, 257, 4096, 4097)
	for _, d := range []struct {
		typ       Type
		round     func(float32) float32
		finite    func(uint16) bool
		asm, twin func(w []byte, x []float32) float32
	}{
		{F16, func(v float32) float32 { return F16ToF32(F32ToF16(v)) },
			func(h uint16) bool { return h&0x7c00 != 0x7c00 }, dotF16_arm64, dotF16Go},
		{BF16, func(v float32) float32 { return BF16ToF32(F32ToBF16(v)) },
			func(h uint16) bool { return h&0x7f80 != 0x7f80 }, dotBF16_arm64, dotBF16Go},
	} {
		for _, raw := range []bool{false, true} {
			for _, n := range ns {
				x := testData(rng, n)
				for i := range x {
					x[i] = d.round(x[i])
				}
				var w []byte
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
				w = misaligned(w, rng.IntN(8))
				got, want := d.asm(w, x), d.twin(w, x)
				_, mag := dot64(decode(t, d.typ, w, n), x)
				if math.Abs(float64(got)-float64(want)) > 1e-7*mag {
					t.Fatalf("%v, %d values, raw %v: asm %v, Go %v", d.typ, n, raw, got, want)
				}
			}
		}
	}
	for _, n := range ns {
		a, b := testData(rng, n), testData(rng, n)
		got, want := dotF32_arm64(a, b), dotF32FloatsGo(a, b)
		ref, mag := dot64(a, b)
		if !closeDot(got, want, mag) || !closeDot(got, float32(ref), mag) {
			t.Fatalf("F32, %d values: asm %v, Go %v, float64 %v", n, got, want, ref)
		}
		if again := dotF32_arm64(misaligned4(a), b); math.Float32bits(again) != math.Float32bits(got) {
			t.Fatalf("F32, %d values: %v at another address, %v before", n, again, got)
		}
	}
}

// misaligned4 copies x to a fresh slice at another 4-byte offset mod 16.
func misaligned4(x []float32) []float32 {
	buf := make([]float32, len(x)+1)
	copy(buf[1:], x)
	return buf[1:]
}

// TestF16HelpersNEON holds MadF16, ScaleF16 and ToF16's kernels to the Go
// definitions bit for bit at every length to 70, with values that
// overflow to infinity and round to subnormals.
func TestF16HelpersNEON(t *testing.T) {
	rng := rand.New(rand.NewPCG(71, 72))
	for n := 0; n <= 70; n++ {
		src := make([]float32, n)
		v := make([]uint16, n)
		acc := make([]float32, n)
		for i := range src {
			src[i] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(12)-6)))
			v[i] = F32ToF16(float32(rng.NormFloat64() * 100))
			acc[i] = f16Table[F32ToF16(float32(rng.NormFloat64()))]
		}
		if n > 3 {
			src[0], src[1], src[2] = 65520, 1e-8, -65519
		}
		want, got := make([]uint16, n+1), make([]uint16, n+1)
		want[n], got[n] = 0xbeef, 0xbeef
		toF16Go(want[:n], src)
		toF16_arm64(got[:n], src)
		for i := range want {
			if want[i] != got[i] {
				t.Fatalf("toF16 n=%d: index %d = %#x, want %#x (of %v)", n, i, got[i], want[i], src[min(i, n-1)])
			}
		}
		for _, s := range []float32{float32(rng.Float64()), 700, 1e-6} {
			wa, ga := append([]float32(nil), acc...), append([]float32(nil), acc...)
			madF16Go(wa, v, s)
			madF16_arm64(ga, v, s)
			scaleF16Go(wa, s)
			scaleF16_arm64(ga, s)
			for i := range wa {
				if math.Float32bits(wa[i]) != math.Float32bits(ga[i]) {
					t.Fatalf("madF16/scaleF16 n=%d s=%v: index %d = %v, want %v", n, s, i, ga[i], wa[i])
				}
			}
		}
	}
}

// TestSiLUMulNEON holds the SiLU·mul kernel to siluMulGo bit for bit at
// every length to 40 and a long one.
func TestSiLUMulNEON(t *testing.T) {
	rng := rand.New(rand.NewPCG(73, 74))
	for _, n := range append([]int{1000}, func() []int {
		var ns []int
		for n := 0; n <= 40; n++ {
			ns = append(ns, n)
		}
		return ns
	}()...) {
		h := siluInputs(rng, max(n, 18))[:n]
		rng.Shuffle(len(h), func(i, j int) { h[i], h[j] = h[j], h[i] })
		u := make([]float32, n)
		for i := range u {
			u[i] = float32(rng.NormFloat64())
		}
		want := append([]float32(nil), h...)
		siluMulGo(want, u)
		got := append([]float32(nil), h...)
		siluMul_arm64(got, u)
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("n=%d: silu(%g)·%g = %g, Go %g", n, h[i], u[i], got[i], want[i])
			}
		}
	}
}

// TestArm64HooksFillSets applies the hooks to stand-ins for the sets
// kernels_arm64.go defines (copies of the generic set under their names),
// checks that each set gets this file's kernels of the right variant, and
// that MatMul on Q4_K and Q6_K with each set gives the bits of the generic
// set one row at a time, for batches of 1 to 10 and 17.
func TestArm64HooksFillSets(t *testing.T) {
	saved := k
	defer func() { k = saved }()
	rng := rand.New(rand.NewPCG(75, 76))
	same := func(f, g any) bool { return reflect.ValueOf(f).Pointer() == reflect.ValueOf(g).Pointer() }
	for _, name := range []string{"asimd", "dotprod", "i8mm", "avx2"} {
		s := genericKernels
		s.name = name
		for _, h := range archHooks {
			h(&s)
		}
		if name == "avx2" { // not an arm64 set: left alone
			if s.gemmK != nil || !same(s.siluMul, genericKernels.siluMul) || !same(s.dotF16, genericKernels.dotF16) {
				t.Errorf("the hooks changed set %s", name)
			}
			continue
		}
		dot4, dot6 := any(dotQ4_KQ8_KDot), any(dotQ6_KQ8_KDot)
		if name == "asimd" {
			dot4, dot6 = dotQ4_KQ8_KAsimd, dotQ6_KQ8_KAsimd
		}
		for what, ok := range map[string]bool{
			"gemmK":        s.gemmK != nil,
			"dotQ4_KQ8_K":  same(s.dotQ4_KQ8_K, dot4),
			"dotQ6_KQ8_K":  same(s.dotQ6_KQ8_K, dot6),
			"quantizeQ8_K": same(s.quantizeQ8_K, quantizeQ8_K_arm64),
			"dotF16":       same(s.dotF16, dotF16_arm64),
			"dotBF16":      same(s.dotBF16, dotBF16_arm64),
			"dotF32":       same(s.dotF32, dotF32_arm64),
			"madF16":       same(s.madF16, madF16_arm64),
			"scaleF16":     same(s.scaleF16, scaleF16_arm64),
			"toF16":        same(s.toF16, toF16_arm64),
			"siluMul":      same(s.siluMul, siluMul_arm64),
		} {
			if !ok {
				t.Errorf("set %s: %s is not this file's kernel", name, what)
			}
		}
		if name != "asimd" && !cpu.ARM64.HasASIMDDP {
			continue // SDOT would fault
		}
		var buf Scratch
		for _, typ := range []Type{Q4_K, Q6_K} {
			const rows, cols, maxN = 13, 512, 17
			m, err := NewMatrix(typ, rows, cols, encode(t, typ, testData(rng, rows*cols)))
			if err != nil {
				t.Fatal(err)
			}
			x := testData(rng, maxN*cols)
			k = &genericKernels
			want := make([]float32, maxN*rows)
			for i := 0; i < maxN; i++ {
				MatMul(nil, m, x[i*cols:(i+1)*cols], 1, want[i*rows:(i+1)*rows], &buf)
			}
			k = &s
			for _, n := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 17} {
				y := make([]float32, n*rows)
				MatMul(nil, m, x[:n*cols], n, y, &buf)
				for e, v := range y {
					if math.Float32bits(v) != math.Float32bits(want[e]) {
						t.Fatalf("set %s %v n=%d: y[%d][%d] = %v, generic one row at a time %v", name, typ, n, e/rows, e%rows, v, want[e])
					}
				}
			}
		}
	}
}

// TestF16RunsNEON holds the multi-row attention kernels to the Go loops
// bit for bit: head sizes 32..256 (and sizes the kernels refuse), 1..4
// queries, 1..40 key rows with strides beyond the row.
func TestF16RunsNEON(t *testing.T) {
	rng := rand.New(rand.NewPCG(79, 80))
	half := func(n int, scale float64) []uint16 {
		h := make([]uint16, n)
		for i := range h {
			h[i] = F32ToF16(float32(rng.NormFloat64() * scale))
		}
		return h
	}
	for _, hd := range []int{8, 24, 32, 64, 96, 128, 256} {
		for _, nq := range []int{1, 2, 4} {
			for _, count := range []int{1, 2, 7, 40} {
				stride := hd + rng.IntN(3)*8
				keys := half((count-1)*stride+hd, 1)
				q := make([]float32, nq*hd)
				for i := range q {
					q[i] = f16Table[F32ToF16(float32(rng.NormFloat64()))]
				}
				const ldo = 45
				out := make([]float32, nq*ldo)
				ok := scoresF16_arm64(out, ldo, q, hd, keys, stride, count, nil)
				if ok != (hd%32 == 0) {
					t.Fatalf("scores hd=%d: took it %v", hd, ok)
				}
				if ok {
					for i := 0; i < nq; i++ {
						for j := 0; j < count; j++ {
							want := scoreF16Go(q[i*hd:(i+1)*hd], keys[j*stride:j*stride+hd])
							if got := out[i*ldo+j]; math.Float32bits(got) != math.Float32bits(want) {
								t.Fatalf("scores hd=%d nq=%d count=%d: [%d][%d] = %v, want %v", hd, nq, count, i, j, got, want)
							}
						}
					}
				}
				acc := make([]float32, hd)
				for i := range acc {
					acc[i] = f16Table[F32ToF16(float32(rng.NormFloat64()))]
				}
				w := make([]float32, count)
				for i := range w {
					w[i] = float32(rng.Float64())
				}
				v := half((count-1)*stride+hd, 10)
				want := append([]float32(nil), acc...)
				for j, s := range w {
					madF16Go(want, v[j*stride:j*stride+hd], s)
				}
				if !madsF16_arm64(acc, v, stride, w) {
					t.Fatalf("mads hd=%d refused", hd)
				}
				for i := range acc {
					if math.Float32bits(acc[i]) != math.Float32bits(want[i]) {
						t.Fatalf("mads hd=%d count=%d: index %d = %v, want %v", hd, count, i, acc[i], want[i])
					}
				}
			}
		}
	}
}

// BenchmarkKQuantNEON runs each generated K-quant kernel alone on one row
// of 8 super-blocks (2048 columns) in L1, against 1 and 4 activation rows:
// ns per (row, activation row) super-block is the kernel's compute cost
// without the memory's. Run it on the phone (the emulator says nothing
// about speed).
func BenchmarkKQuantNEON(b *testing.B) {
	rng := rand.New(rand.NewPCG(81, 82))
	const nb = 8
	for _, vr := range kVariants() {
		for ti, typ := range []Type{Q4_K, Q6_K} {
			w := kWeights(b, rng, typ, 1, nb, "quantized")
			a := kActRows(rng, kActsNEON, nb, "quantized")
			y := make([]float32, kActsNEON)
			for _, c := range []int{1, kActsNEON} {
				f := kquantKernels[vr.set][ti][c-1]
				b.Run(fmt.Sprintf("%s/%v/C%d", vr.name, typ, c), func(b *testing.B) {
					for b.Loop() {
						f(&w[0], &a[0], nb*q8_KBytes, nb, &y[0], 1)
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(nb*c), "ns/pair-block")
				})
			}
		}
	}
}

// BenchmarkNEONVsGo times the arm64 quantizer and float kernels against
// their Go twins on 4096 values, alternating.
func BenchmarkNEONVsGo(b *testing.B) {
	rng := rand.New(rand.NewPCG(83, 84))
	const n = 4096
	x, u := testData(rng, n), testData(rng, n)
	w16 := encode(b, F16, testData(rng, n))
	wbf := encode(b, BF16, testData(rng, n))
	q8k := make([]byte, n/qkK*q8_KBytes)
	h := make([]float32, n)
	v := make([]uint16, n)
	for i := range v {
		v[i] = F32ToF16(x[i])
	}
	for _, c := range []struct {
		name      string
		neon, ref func()
	}{
		{"quantizeQ8_K", func() { quantizeQ8_K_arm64(x, q8k) }, func() { quantizeQ8_K(x, q8k) }},
		{"dotF16", func() { dotF16_arm64(w16, x) }, func() { dotF16Go(w16, x) }},
		{"dotBF16", func() { dotBF16_arm64(wbf, x) }, func() { dotBF16Go(wbf, x) }},
		{"dotF32", func() { dotF32_arm64(x, u) }, func() { dotF32FloatsGo(x, u) }},
		{"madF16", func() { madF16_arm64(h, v, 0.5) }, func() { madF16Go(h, v, 0.5) }},
		{"siluMul", func() { copy(h, x); siluMul_arm64(h, u) }, func() { copy(h, x); siluMulGo(h, u) }},
	} {
		for _, impl := range []struct {
			name string
			f    func()
		}{{"go", c.ref}, {"neon", c.neon}} {
			b.Run(c.name+"/"+impl.name, func(b *testing.B) {
				b.SetBytes(4 * n)
				for b.Loop() {
					impl.f()
				}
			})
		}
	}
}
