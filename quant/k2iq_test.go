package quant

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
)

// k2iqTypes are the weight types of k2iq.go with their Go twins and the
// relative RMS error their quantizers must stay under on testData (Q2_K
// measures 0.386 and IQ4_XS 0.115 there, Q4_K 0.09 and Q4_0 0.136 on
// like data; a level or a scale bit off does far worse).
var k2iqTypes = []struct {
	typ    Type
	twin   func(w, a []byte) float32
	maxRMS float64
}{
	{Q2_K, dotQ2_KQ8_KGo, 0.42},
	{IQ4_XS, dotIQ4_XSQ8_KGo, 0.13},
}

// levelsOf returns the values sub-block value i of block blk can decode to
// (every quant under its stored scale) and the sub-block length.
func levelsOf(typ Type, blk []byte, i int) []float32 {
	var out []float32
	switch typ {
	case Q2_K:
		sc := blk[i/16]
		d, dmin := f16At(blk[80:]), f16At(blk[82:])
		dl, ml := float32(d*float32(sc&0xf)), float32(dmin*float32(sc>>4))
		for q := 0; q < 4; q++ {
			out = append(out, float32(dl*float32(q))-ml)
		}
	case IQ4_XS:
		dl := f16At(blk[0:]) * float32(iq4XSScale(blk, i/32))
		for _, v := range kvaluesIQ4NL {
			out = append(out, dl*float32(v))
		}
	}
	return out
}

// TestK2IQRoundTrip quantizes realistic data and checks that every value
// decodes to the level nearest it under its block's stored scales (so only
// the choice of scales costs accuracy) and that the scale search keeps the
// relative RMS error under each type's limit.
func TestK2IQRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	x := testData(rng, 8192)
	for _, c := range k2iqTypes {
		t.Run(c.typ.String(), func(t *testing.T) {
			b := encode(t, c.typ, x)
			y := decode(t, c.typ, b, len(x))
			bs := c.typ.BlockBytes()
			var sumErr2, sumX2 float64
			for i := range x {
				e := math.Abs(float64(y[i]) - float64(x[i]))
				best := math.Inf(1)
				for _, v := range levelsOf(c.typ, b[i/qkK*bs:(i/qkK+1)*bs], i%qkK) {
					best = min(best, math.Abs(float64(v)-float64(x[i])))
				}
				// IQ4_XS picks levels under its scales before d is
				// rounded to f16 (as ggml does): allow that rounding.
				if e > best+math.Abs(float64(x[i]))*0x1p-10+1e-30 {
					t.Fatalf("value %d: %v decoded as %v (error %g), a level is %g away", i, x[i], y[i], e, best)
				}
				sumErr2 += e * e
				sumX2 += float64(x[i]) * float64(x[i])
			}
			rms := math.Sqrt(sumErr2 / sumX2)
			t.Logf("%v: relative RMS error %.3f", c.typ, rms)
			if rms > c.maxRMS {
				t.Errorf("%v: relative RMS error %.3f > %.3f", c.typ, rms, c.maxRMS)
			}
		})
	}
}

// TestK2IQQuantizeSpecial checks blocks that are all zero, constant, tiny
// or one-signed: they encode to finite scales and decode close.
func TestK2IQQuantizeSpecial(t *testing.T) {
	blocks := map[string]func(i int) float32{
		"zero":     func(int) float32 { return 0 },
		"constant": func(int) float32 { return 0.75 },
		"negative": func(i int) float32 { return -float32(i%37+1) / 8 },
		"positive": func(i int) float32 { return float32(i%29+1) / 8 },
		"tiny":     func(i int) float32 { return float32(i%5-2) * 1e-20 },
		"one":      func(i int) float32 { return float32(max(0, 1-i)) * 3 },
	}
	for _, c := range k2iqTypes {
		for name, f := range blocks {
			x := make([]float32, qkK)
			for i := range x {
				x[i] = f(i)
			}
			y := decode(t, c.typ, encode(t, c.typ, x), qkK)
			amax := float64(absMax(x))
			for i := range x {
				// A quarter of the block's range covers the 2-bit
				// grid's rounding of scale and min; groups below
				// ggml's 1e-15 may decode to zero.
				if e := math.Abs(float64(y[i]) - float64(x[i])); !(e <= amax/4+1e-15) {
					t.Errorf("%v %s: value %d = %v decoded as %v", c.typ, name, i, x[i], y[i])
					break
				}
			}
		}
	}
}

// TestK2IQQuantizeNonFinite checks that blocks holding NaN or ±Inf encode
// without a panic and leave their neighbours' bytes alone.
func TestK2IQQuantizeNonFinite(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	bad := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))}
	for _, c := range k2iqTypes {
		for _, v := range bad {
			x := testData(rng, 3*qkK)
			x[qkK+rng.IntN(qkK)] = v
			b := encode(t, c.typ, x)
			bs := c.typ.BlockBytes()
			for _, blk := range []int{0, 2} {
				alone := encode(t, c.typ, x[blk*qkK:(blk+1)*qkK])
				if string(alone) != string(b[blk*bs:(blk+1)*bs]) {
					t.Errorf("%v with %v in block 1: block %d encoded differently", c.typ, v, blk)
				}
			}
			decode(t, c.typ, b, len(x))
		}
	}
}

// TestK2IQDequantizeKnown decodes hand-made blocks.
func TestK2IQDequantizeKnown(t *testing.T) {
	q2 := make([]byte, q2_KBytes)
	putF16(q2[80:], 0.5) // d
	putF16(q2[82:], 0.25)
	q2[0] = 0x46     // sub-block 0: scale 6, min 4 -> 3q - 1
	q2[15] = 0x0f    // sub-block 15: scale 15, min 0 -> 7.5q
	q2[16] = 0xe4    // values 0, 32, 64, 96: q = 0, 1, 2, 3
	q2[16+63] = 0xc0 // byte 32+31: values 128+31 (q 0) ... 128+96+31 (q 3)
	y := decode(t, Q2_K, q2, qkK)
	for i, want := range map[int]float32{0: -1, 1: -1, 15: -1, 32: 0, 64: 0, 96: 0, 159: 0, 240: 0, 255: 22.5} {
		if y[i] != want {
			t.Errorf("Q2_K value %d = %v, want %v", i, y[i], want)
		}
	}

	iq := make([]byte, iq4_XSBytes)
	putF16(iq[0:], 0.5)
	binary.LittleEndian.PutUint16(iq[2:], 0x3<<14|0x1<<2) // ib 7 high 3, ib 1 high 1
	iq[4] = 0x1f                                          // ib 0 low 15 (ls-32 = -17), ib 1 low 1 (ls = 17, -15)
	iq[7] = 0xf0                                          // ib 7 low 15: ls 63 -> 31
	iq[8] = 0xf0                                          // value 0 level 0 (-127), value 16 level 15 (113)
	iq[8+16] = 0x08                                       // value 32 level 8 (1), value 48 level 0
	iq[8+16*7+15] = 0x7f                                  // value 239 level 15, value 255 level 7 (-10)
	y = decode(t, IQ4_XS, iq, qkK)
	for i, want := range map[int]float32{0: 0.5 * -17 * -127, 16: 0.5 * -17 * 113, 32: 0.5 * -15 * 1,
		48: 0.5 * -15 * -127, 239: 0.5 * 31 * 113, 255: 0.5 * 31 * -10, 64: 0.5 * -32 * -127} {
		if y[i] != want {
			t.Errorf("IQ4_XS value %d = %v, want %v", i, y[i], want)
		}
	}
}

// rawK2IQ returns nb blocks of typ with random quant and scale bytes and
// finite f16 scales from testHalvesK2IQ.
func rawK2IQ(rng *rand.Rand, typ Type, nb int, fill int) []byte {
	bs := typ.BlockBytes()
	b := make([]byte, nb*bs)
	for i := range b {
		if fill < 0 {
			b[i] = byte(rng.IntN(256))
		} else {
			b[i] = byte(fill)
		}
	}
	for i := 0; i < nb; i++ {
		blk := b[i*bs:]
		h := testHalvesK2IQ[rng.IntN(len(testHalvesK2IQ))]
		switch typ {
		case Q2_K:
			binary.LittleEndian.PutUint16(blk[80:], h)
			binary.LittleEndian.PutUint16(blk[82:], testHalvesK2IQ[rng.IntN(len(testHalvesK2IQ))])
		case IQ4_XS:
			binary.LittleEndian.PutUint16(blk, h)
		}
	}
	return b
}

// Finite f16 scales: 1 (integer sums), a negative, small and large ones and
// a subnormal.
var testHalvesK2IQ = []uint16{0x3c00, 0xb800, 0x2e66, 0x1400, 0x5640, 0x0001, 0x8123}

// rawQ8K returns nb Q8_K blocks with quants random or all fill (-128 ..
// 127), a power-of-two scale of either sign and matching bsums.
func rawQ8K(rng *rand.Rand, nb int, fill int) []byte {
	b := make([]byte, nb*q8_KBytes)
	for i := 0; i < nb; i++ {
		blk := b[i*q8_KBytes:]
		binary.LittleEndian.PutUint32(blk, 0x3f800000-uint32(rng.IntN(3))<<23|uint32(rng.IntN(2))<<31)
		q := blk[4 : 4+qkK]
		for j := range q {
			if fill < -128 {
				q[j] = byte(rng.IntN(256))
			} else {
				q[j] = byte(int8(fill))
			}
		}
		for j := 0; j < 16; j++ {
			var s int16
			for _, v := range q[16*j : 16*j+16] {
				s += int16(int8(v))
			}
			binary.LittleEndian.PutUint16(blk[4+qkK+2*j:], uint16(s))
		}
	}
	return b
}

// k2iqDotCases are weight and activation rows for the dot tests: quantized
// realistic data and raw blocks (random, all-zero, all-0xff bytes against
// random, -128 and 127 activations) for 0..17 and 64 blocks.
func k2iqDotCases(t *testing.T, rng *rand.Rand, typ Type) (names []string, ws, as [][]byte) {
	counts := []int{64}
	for nb := 0; nb <= 17; nb++ {
		counts = append(counts, nb)
	}
	for _, nb := range counts {
		n := nb * qkK
		names = append(names, fmt.Sprintf("quantized %d blocks", nb))
		ws = append(ws, encode(t, typ, testData(rng, n)))
		as = append(as, quantizeAct(t, Q8_K, testData(rng, n)))
		for _, wf := range []int{-1, 0, 0xff} {
			for _, af := range []int{-129, -128, 127} {
				names = append(names, fmt.Sprintf("raw %d blocks, weights %d, activations %d", nb, wf, af))
				ws = append(ws, rawK2IQ(rng, typ, nb, wf))
				as = append(as, rawQ8K(rng, nb, af))
			}
		}
	}
	return names, ws, as
}

// TestK2IQDotTwins holds each Go twin against a float64 dot of the decoded
// weights and activations: they differ only by the float32 rounding of the
// per-super-block scaling.
func TestK2IQDotTwins(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, c := range k2iqTypes {
		names, ws, as := k2iqDotCases(t, rng, c.typ)
		for i := range names {
			n := len(ws[i]) / c.typ.BlockBytes() * qkK
			want, mag := dot64(decode(t, c.typ, ws[i], n), dequantizeQ8_K(t, as[i], n))
			got := c.twin(ws[i], as[i])
			if e := math.Abs(float64(got) - want); !(e <= 1e-6*mag) {
				t.Errorf("%v %s: twin %v, float64 %v (magnitude %g)", c.typ, names[i], got, want, mag)
			}
		}
	}
}

// TestK2IQMatMul checks that MatMul on every kernel set gives each output
// bit for bit the Go twin on the row and the Q8_K activations, whatever the
// number of activation rows (the amd64 sets run them batched on gemmK,
// arm64's per row).
func TestK2IQMatMul(t *testing.T) {
	defer UseGeneric(false)
	rng := rand.New(rand.NewPCG(9, 10))
	const rows, cols = 37, 512
	for _, c := range k2iqTypes {
		w := encode(t, c.typ, testData(rng, rows*cols))
		m, err := NewMatrix(c.typ, rows, cols, w)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{1, 3, 9, 16, 17, 33} {
			x := testData(rng, n*cols)
			a := quantizeAct(t, Q8_K, x)
			arb := cols / qkK * q8_KBytes
			for _, set := range KernelSets() {
				if err := UseKernels(set); err != nil {
					t.Fatal(err)
				}
				y := make([]float32, n*rows)
				MatMul(nil, m, x, n, y, nil)
				for i := 0; i < n; i++ {
					for r := 0; r < rows; r++ {
						want := c.twin(m.Row(r), a[i*arb:(i+1)*arb])
						if math.Float32bits(y[i*rows+r]) != math.Float32bits(want) {
							t.Fatalf("%v %s n=%d: output (%d, %d) = %v, twin %v", c.typ, set, n, r, i, y[i*rows+r], want)
						}
					}
				}
			}
		}
	}
}

// TestK2IQGemmKClaims checks which sets take Q2_K and IQ4_XS to gemmK:
// every amd64 set (batched kernels in k2iqg_amd64.s), no arm64 set (their
// gemmK has no such kernels; MatMul runs the per-row dots), never the
// generic set.
func TestK2IQGemmKClaims(t *testing.T) {
	if genericKernels.hasGemmK(Q2_K) || genericKernels.hasGemmK(IQ4_XS) {
		t.Error("the generic set claims Q2_K or IQ4_XS for gemmK")
	}
	for _, s := range archSets {
		for _, typ := range []Type{Q2_K, IQ4_XS} {
			if got, want := s.hasGemmK(typ), runtime.GOARCH == "amd64"; got != want {
				t.Errorf("%s (%s): hasGemmK(%v) = %v, want %v", s.name, runtime.GOARCH, typ, got, want)
			}
		}
	}
}

// TestK2IQKernelsMatchTwins holds every kernel set's Q2_K and IQ4_XS dot
// kernels bit for bit to the Go twins on the cases of TestK2IQDotTwins, at
// misaligned offsets.
func TestK2IQKernelsMatchTwins(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	sets := append([]kernelSet{genericKernels}, archSets...)
	for _, c := range k2iqTypes {
		names, ws, as := k2iqDotCases(t, rng, c.typ)
		for _, s := range sets {
			kern := s.dotQ2_KQ8_K
			if c.typ == IQ4_XS {
				kern = s.dotIQ4_XSQ8_K
			}
			for i := range names {
				off := rng.IntN(8)
				w, a := misaligned(ws[i], off), misaligned(as[i], 7-off)
				got, want := kern(w, a), c.twin(w, a)
				if math.Float32bits(got) != math.Float32bits(want) {
					t.Fatalf("%v %s, %s, offset %d: kernel %v, twin %v", c.typ, s.name, names[i], off, got, want)
				}
			}
		}
	}
}

// BenchmarkK2IQDot times one 4096-wide row on each set's Q2_K and IQ4_XS
// dots, with Q4_K's for scale.
func BenchmarkK2IQDot(b *testing.B) {
	rng := rand.New(rand.NewPCG(13, 14))
	const cols = 4096
	sets := append([]kernelSet{genericKernels}, archSets...)
	for _, typ := range []Type{Q2_K, IQ4_XS, Q4_K} {
		w := encode(b, typ, testData(rng, cols))
		a := make([]byte, cols/qkK*q8_KBytes)
		quantizeQ8_K(testData(rng, cols), a)
		for _, s := range sets {
			kern := map[Type]func(w, a []byte) float32{Q2_K: s.dotQ2_KQ8_K, IQ4_XS: s.dotIQ4_XSQ8_K, Q4_K: s.dotQ4_KQ8_K}[typ]
			b.Run(fmt.Sprintf("%v/%s", typ, s.name), func(b *testing.B) {
				b.SetBytes(int64(len(w)))
				var sink float32
				for b.Loop() {
					sink += kern(w, a)
				}
				_ = sink
			})
		}
	}
}

// BenchmarkK2IQMatMul times MatMul on a 2048×2048 matrix of each type with
// the kernel set in use, one and 16 activation rows, Q4_K for scale.
func BenchmarkK2IQMatMul(b *testing.B) {
	const rows, cols = 2048, 2048
	rng := rand.New(rand.NewPCG(15, 16))
	wf := testData(rng, rows*cols)
	for _, typ := range []Type{Q2_K, IQ4_XS, Q4_K} {
		data := encode(b, typ, wf)
		m, _ := NewMatrix(typ, rows, cols, data)
		for _, n := range []int{1, 16} {
			b.Run(fmt.Sprintf("%v/n=%d", typ, n), func(b *testing.B) {
				x := testData(rng, n*cols)
				y := make([]float32, n*rows)
				var buf Scratch
				b.SetBytes(int64(len(data)))
				for b.Loop() {
					MatMul(nil, m, x, n, y, &buf)
				}
			})
		}
	}
}

// TestK2IQLlamaCppLayouts checks the block layouts against llama.cpp's own
// bytes: the types pack holds one set of random weights quantized by
// llama.cpp to each type, so a Q2_K or IQ4_XS tensor must decode close to
// the same tensor in another type of known layout (Q4_K), or in the other
// of the two; a wrong layout gives unrelated values (about 1.4).
func TestK2IQLlamaCppLayouts(t *testing.T) {
	dir := conformanceDir + "types/"
	files := map[Type]map[string]rawTensor{
		Q2_K:   readGGUF(t, dir+"types-tiny-q2_k.gguf"),
		IQ4_XS: readGGUF(t, dir+"types-tiny-iq4_xs.gguf"),
		Q4_K:   readGGUF(t, dir+"types-tiny-q3_k_m.gguf"),
	}
	// Relative RMS differences each pair may show: about 0.31 (Q2_K's
	// own error) and 0.10 measured.
	pairs := []struct {
		a, b  Type
		limit float64
	}{{Q2_K, IQ4_XS, 0.36}, {IQ4_XS, Q4_K, 0.13}}
	for _, p := range pairs {
		compared := 0
		for name, ta := range files[p.a] {
			tb, ok := files[p.b][name]
			if !ok || ta.typ != p.a || tb.typ != p.b {
				continue
			}
			n := len(ta.data) / ta.typ.BlockBytes() * qkK
			x, y := decode(t, p.a, ta.data, n), decode(t, p.b, tb.data, n)
			var d2, y2 float64
			for i := range x {
				d := float64(x[i]) - float64(y[i])
				d2 += d * d
				y2 += float64(y[i]) * float64(y[i])
			}
			if rel := math.Sqrt(d2 / y2); rel > p.limit {
				t.Errorf("%s: %v and %v differ by %.3f relative RMS > %.2f", name, p.a, p.b, rel, p.limit)
			} else if compared == 0 {
				t.Logf("%s: %v and %v differ by %.4f relative RMS", name, p.a, p.b, rel)
			}
			compared++
		}
		if compared == 0 {
			t.Errorf("no tensor is %v in one file and %v in the other", p.a, p.b)
		}
	}
}

// TestK2IQRequantizeLlamaCpp decodes llama.cpp's Q2_K and IQ4_XS blocks and
// quantizes them again: values already on a block's grid mostly lead back
// to the same bytes (measured: 4326 of 4352 Q2_K blocks, 6310 of 6656
// IQ4_XS blocks) when the scale grids, their rounding and the packing are
// ggml's. Grid values are found with or without the scale search, so this
// does not check the search (TestK2IQRoundTrip's error limits do, loosely).
func TestK2IQRequantizeLlamaCpp(t *testing.T) {
	dir := conformanceDir + "types/"
	for _, c := range []struct {
		file string
		typ  Type
		min  float64
	}{{"types-tiny-q2_k.gguf", Q2_K, 0.98}, {"types-tiny-iq4_xs.gguf", IQ4_XS, 0.92}} {
		same, all := 0, 0
		for _, o := range readGGUF(t, dir+c.file) {
			if o.typ != c.typ {
				continue
			}
			n := len(o.data) / c.typ.BlockBytes() * qkK
			b := encode(t, c.typ, decode(t, c.typ, o.data, n))
			bs := c.typ.BlockBytes()
			for i := 0; i < len(b); i += bs {
				all++
				if string(b[i:i+bs]) == string(o.data[i:i+bs]) {
					same++
				}
			}
		}
		t.Logf("%v: %d of %d blocks requantize to llama.cpp's bytes", c.typ, same, all)
		if all == 0 || float64(same) < c.min*float64(all) {
			t.Errorf("%v: %d of %d blocks requantize to llama.cpp's bytes, want %.0f%%", c.typ, same, all, 100*c.min)
		}
	}
}
