package quant

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"shade/par"
)

// legacyTypes are the types of legacy.go with the activations each pairs
// with and its dot twin.
var legacyTypes = []struct {
	w, act Type
	twin   func(w, a []byte) float32
}{
	{Q4_1, Q8_1, dotQ4_1Q8_1Go},
	{Q5_0, Q8_0, dotQ5_0Q8_0Go},
	{Q5_1, Q8_1, dotQ5_1Q8_1Go},
	{IQ4_NL, Q8_0, dotIQ4_NLQ8_0Go},
}

// legacyBound is the largest error Quantize of typ may make on x[i], given
// its block: half a step (a whole one for the end Q5_0 clamps, as Q4_0),
// plus the f16 rounding of the stored scale and offset.
func legacyBound(typ Type, x []float32, i int) float64 {
	b := x[i/32*32 : i/32*32+32]
	lo, hi := minMax(b)
	span, amax := float64(hi-lo), float64(absMax(b))
	const f16 = 0x1p-11
	switch typ {
	case Q4_1:
		return span/30*1.001 + (math.Abs(float64(lo))+span)*f16 + 0x1p-24
	case Q5_1:
		return span/62*1.001 + (math.Abs(float64(lo))+span)*f16 + 0x1p-24
	case Q5_0:
		return amax/16*(1+1.0/1024) + 0x1p-24
	case IQ4_NL:
		// Levels are at most 24 apart and the least-squares scale may
		// leave the largest value up to a few levels outside the grid.
		return amax / 6
	}
	panic(typ)
}

func TestLegacyRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	x := testData(rng, 8192)
	rms := map[Type]float64{}
	for _, typ := range []Type{Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL} {
		y := decode(t, typ, encode(t, typ, x), len(x))
		var e2, x2 float64
		for i := range x {
			e := math.Abs(float64(y[i]) - float64(x[i]))
			if typ != Q4_0 {
				if b := legacyBound(typ, x, i); e > b {
					t.Fatalf("%v value %d: %v decoded as %v, error %g > bound %g", typ, i, x[i], y[i], e, b)
				}
			}
			e2 += e * e
			x2 += float64(x[i]) * float64(x[i])
		}
		rms[typ] = math.Sqrt(e2 / x2)
		t.Logf("%v: relative RMS error %.3e", typ, rms[typ])
	}
	// More bits or better levels must show: 5 bits beat 4, an offset
	// beats none, and IQ4_NL's levels and scale search beat Q4_0's grid.
	for _, p := range [][2]Type{{Q5_0, Q4_0}, {Q5_1, Q4_1}, {IQ4_NL, Q4_0}, {Q5_0, Q4_1}} {
		if rms[p[0]] >= rms[p[1]] {
			t.Errorf("%v RMS error %.3e not below %v's %.3e", p[0], rms[p[0]], p[1], rms[p[1]])
		}
	}
}

// TestIQ4_NLScaleSearch checks that the scale search pays: the encoding
// Quantize picks has no larger x²-weighted squared error, block by block
// summed, than the levels nearest x/d at the first guess d = max/127.
func TestIQ4_NLScaleSearch(t *testing.T) {
	rng := rand.New(rand.NewPCG(43, 44))
	x := testData(rng, 8192)
	y := decode(t, IQ4_NL, encode(t, IQ4_NL, x), len(x))
	var searched, first float64
	better := 0
	for b := 0; b < len(x)/32; b++ {
		xb := x[32*b : 32*b+32]
		_, mx := signedMax(xb)
		var es, ef float64
		if mx != 0 {
			d := F16ToF32(F32ToF16(mx / 127))
			for j, v := range xb {
				q := float32(kvaluesIQ4NL[bestIndexIQ4(v/d)]) * d
				w := float64(v) * float64(v)
				ef += w * sq(float64(v)-float64(q))
				es += w * sq(float64(v)-float64(y[32*b+j]))
			}
		}
		if es < ef {
			better++
		}
		searched += es
		first += ef
	}
	if searched >= first || better == 0 {
		t.Errorf("weighted error with the search %.4g, at the first guess %.4g (%d blocks better)", searched, first, better)
	}
	t.Logf("weighted error %.4g vs %.4g at the first guess; %d of %d blocks better", searched, first, better, len(x)/32)
}

func sq(v float64) float64 { return v * v }

func TestIQ4_NLIndex(t *testing.T) {
	for v := float32(-140); v <= 140; v += 0.25 {
		best := 0
		for i := range kvaluesIQ4NL {
			if abs32(v-float32(kvaluesIQ4NL[i])) <= abs32(v-float32(kvaluesIQ4NL[best])) {
				best = i // ties go to the upper level, as in ggml
			}
		}
		if got := int(bestIndexIQ4(v)); got != best {
			t.Fatalf("bestIndexIQ4(%v) = %d, want %d", v, got, best)
		}
	}
	if got := bestIndexIQ4(float32(math.NaN())); got != 15 {
		t.Errorf("bestIndexIQ4(NaN) = %d, want 15 (in range)", got)
	}
}

// TestLegacyQuantizeKnown checks the quantizers on blocks whose encoding
// follows from ggml's formulas by hand.
func TestLegacyQuantizeKnown(t *testing.T) {
	x := make([]float32, 32)
	t.Run("Q4_1", func(t *testing.T) {
		for j := range x {
			x[j] = float32(j%16) - 3 // min -3, max 12: d = 1, m = -3
		}
		b := encode(t, Q4_1, x)
		if d, m := f16At(b), f16At(b[2:]); d != 1 || m != -3 {
			t.Fatalf("d, m = %v, %v; want 1, -3", d, m)
		}
		for j := 0; j < 16; j++ {
			if want := byte(j) | byte(j)<<4; b[4+j] != want {
				t.Fatalf("byte %d = %#02x, want %#02x", 4+j, b[4+j], want)
			}
		}
	})
	t.Run("Q5_0", func(t *testing.T) {
		clear(x)
		x[0] = -16 // the largest magnitude: d = 1, q = 0
		x[1] = 15  // 31.5 -> 31
		x[2] = 16  // 32.5 -> 32, clamped to 31
		x[16] = 3  // 19.5 -> 19
		x[17] = -1 // 15.5 -> 15
		b := encode(t, Q5_0, x)
		if d := f16At(b); d != 1 {
			t.Fatalf("d = %v, want 1", d)
		}
		q := [32]byte{0, 31, 31, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16,
			19, 15, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16}
		checkQ5(t, b[2:6], b[6:22], q)
	})
	t.Run("Q5_1", func(t *testing.T) {
		for j := range x {
			x[j] = float32(j) * 0.5 // min 0, max 15.5: d = 0.5
		}
		b := encode(t, Q5_1, x)
		if d, m := f16At(b), f16At(b[2:]); d != 0.5 || m != 0 {
			t.Fatalf("d, m = %v, %v; want 0.5, 0", d, m)
		}
		var q [32]byte
		for j := range q {
			q[j] = byte(j)
		}
		checkQ5(t, b[4:8], b[8:24], q)
	})
	t.Run("IQ4_NL", func(t *testing.T) {
		// Values on the grid at scale 0.5: the search finds the scale and
		// the levels exactly, although the first guess (from the largest
		// magnitude, -63.5) has the wrong sign.
		for j := range x {
			x[j] = 0.5 * float32(kvaluesIQ4NL[(j*7)%16])
		}
		b := encode(t, IQ4_NL, x)
		if d := f16At(b); d != 0.5 {
			t.Fatalf("d = %v, want 0.5", d)
		}
		for j := 0; j < 16; j++ {
			if want := byte((j*7)%16) | byte(((j+16)*7)%16)<<4; b[2+j] != want {
				t.Fatalf("byte %d = %#02x, want %#02x", 2+j, b[2+j], want)
			}
		}
		clear(x)
		b = encode(t, IQ4_NL, x)
		for j := 2; j < len(b); j++ {
			if b[j] != 0x88 { // level 8 (1) is nearest 0 after 0*x
				t.Fatalf("zero block: byte %d = %#02x, want 0x88", j, b[j])
			}
		}
	})
}

// checkQ5 checks that the fifth bits qh and nibbles qs hold the 5-bit
// values q, laid out as ggml does.
func checkQ5(t *testing.T, qh, qs []byte, q [32]byte) {
	t.Helper()
	var h uint32
	for j := 0; j < 16; j++ {
		h |= uint32(q[j]>>4)<<j | uint32(q[j+16]>>4)<<(j+16)
		if want := q[j]&0xf | q[j+16]<<4; qs[j] != want {
			t.Fatalf("qs[%d] = %#02x, want %#02x", j, qs[j], want)
		}
	}
	if got := binary.LittleEndian.Uint32(qh); got != h {
		t.Fatalf("qh = %#08x, want %#08x", got, h)
	}
}

func TestLegacyDequantizeKnownBlocks(t *testing.T) {
	var q [32]byte
	for j := range q {
		q[j] = byte((j * 11) % 32)
	}
	var qs [16]byte
	var qh uint32
	for j := 0; j < 16; j++ {
		qs[j] = q[j]&0xf | q[j+16]<<4
		qh |= uint32(q[j]>>4)<<j | uint32(q[j+16]>>4)<<(j+16)
	}
	cases := []struct {
		typ  Type
		blk  func() []byte
		want func(j int) float32
	}{
		{Q4_1, func() []byte {
			b := make([]byte, 20)
			putF16(b, 0.25)
			putF16(b[2:], -1.5)
			copy(b[4:], qs[:])
			return b
		}, func(j int) float32 { return float32(q[j]&0xf)*0.25 - 1.5 }},
		{Q5_0, func() []byte {
			b := make([]byte, 22)
			putF16(b, -0.5)
			binary.LittleEndian.PutUint32(b[2:], qh)
			copy(b[6:], qs[:])
			return b
		}, func(j int) float32 { return float32(int(q[j])-16) * -0.5 }},
		{Q5_1, func() []byte {
			b := make([]byte, 24)
			putF16(b, 0.125)
			putF16(b[2:], 2)
			binary.LittleEndian.PutUint32(b[4:], qh)
			copy(b[8:], qs[:])
			return b
		}, func(j int) float32 { return float32(q[j])*0.125 + 2 }},
		{IQ4_NL, func() []byte {
			b := make([]byte, 18)
			putF16(b, 2)
			copy(b[2:], qs[:])
			return b
		}, func(j int) float32 { return 2 * float32(kvaluesIQ4NL[q[j]&0xf]) }},
	}
	for _, c := range cases {
		y := decode(t, c.typ, c.blk(), 32)
		for j := range y {
			if w := c.want(j); y[j] != w {
				t.Fatalf("%v: y[%d] = %v, want %v", c.typ, j, y[j], w)
			}
		}
	}
}

// decodeQ8_1 decodes Q8_1 activations and checks each block's s against
// d*Σq (within the f16 roundings of d and s).
func decodeQ8_1(t *testing.T, a []byte, n int) []float32 {
	t.Helper()
	y := make([]float32, n)
	for b := 0; b < n/32; b++ {
		x := a[b*q8_1Bytes:]
		d := f16At(x)
		var sum int
		for j := 0; j < 32; j++ {
			q := int8(x[4+j])
			sum += int(q)
			y[32*b+j] = float32(q) * d
		}
		s, want := float64(f16At(x[2:])), float64(d)*float64(sum)
		if math.Abs(s-want) > math.Abs(want)*0x1p-10+0x1p-24 {
			t.Fatalf("Q8_1 block %d: s = %v, d*Σq = %v", b, s, want)
		}
	}
	return y
}

// TestQuantizeQ8_1 checks that Q8_1 holds the d and quants of Q8_0 as
// activations are encoded (quantizeQ8_0Acts), and s.
func TestQuantizeQ8_1(t *testing.T) {
	rng := rand.New(rand.NewPCG(45, 46))
	for _, nb := range []int{0, 1, 2, 5, 33} {
		x := testData(rng, 32*nb)
		a1 := make([]byte, nb*q8_1Bytes+4)
		for i := range a1 {
			a1[i] = 0xa5
		}
		k.quantizeQ8_1(x, a1[:nb*q8_1Bytes])
		for i := nb * q8_1Bytes; i < len(a1); i++ {
			if a1[i] != 0xa5 {
				t.Fatalf("%d blocks: wrote guard byte %d", nb, i)
			}
		}
		a0 := make([]byte, nb*q8_0Bytes)
		quantizeQ8_0Acts(x, a0)
		for b := 0; b < nb; b++ {
			q1, q0 := a1[b*q8_1Bytes:(b+1)*q8_1Bytes], a0[b*q8_0Bytes:(b+1)*q8_0Bytes]
			if string(q1[:2]) != string(q0[:2]) || string(q1[4:]) != string(q0[2:]) {
				t.Fatalf("%d blocks: block %d differs from Q8_0's", nb, b)
			}
		}
		decodeQ8_1(t, a1, len(x))
	}
}

func legacyAct(t *testing.T, typ Type, x []float32) []byte {
	if typ == Q8_1 {
		b := make([]byte, len(x)/32*q8_1Bytes)
		genericKernels.quantizeQ8_1(x, b)
		return b
	}
	return quantizeAct(t, typ, x)
}

func legacyDecodeAct(t *testing.T, typ Type, a []byte, n int) []float32 {
	if typ == Q8_1 {
		return decodeQ8_1(t, a, n)
	}
	return decode(t, typ, a, n)
}

// offsetSlack is what the f16 rounding of Q8_1's s may add to a Q4_1 or
// Q5_1 dot beyond float32 rounding: |m*s| 2^-10 a block.
func offsetSlack(typ Type, w, a []byte) float64 {
	if typ != Q4_1 && typ != Q5_1 {
		return 0
	}
	var e float64
	wb := typ.BlockBytes()
	for b := 0; b < len(w)/wb; b++ {
		e += math.Abs(float64(f16At(w[b*wb+2:]))*float64(f16At(a[b*q8_1Bytes+2:]))) * 0x1p-10
	}
	return e
}

// TestLegacyDotTwins holds each Go twin against a float64 dot of the
// decoded weights and activations, for 0..17 and 64 blocks at misaligned
// offsets.
func TestLegacyDotTwins(t *testing.T) {
	rng := rand.New(rand.NewPCG(47, 48))
	for _, d := range legacyTypes {
		for _, nb := range []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 64} {
			off := rng.IntN(8)
			n := 32 * nb
			w := misaligned(encode(t, d.w, testData(rng, n)), off)
			a := misaligned(legacyAct(t, d.act, testData(rng, n)), 7-off)
			got := d.twin(w, a)
			want, mag := dot64(decode(t, d.w, w, n), legacyDecodeAct(t, d.act, a, n))
			if e := math.Abs(float64(got) - want); e > 1e-5*mag+offsetSlack(d.w, w, a)+1e-30 {
				t.Fatalf("%v x %v, %d blocks: twin %v, float64 %v (error %.3g, magnitude %.3g)", d.w, d.act, nb, got, want, e, mag)
			}
		}
	}
}

// TestLegacyMatMul checks MatMul and MatMulShared on the legacy types
// against the twins on the activations quantized by the generic quantizers:
// bit for bit, on every kernel set, pool and batch size, since the kernels
// are bit-identical to the twins. A float64 product with the activations'
// conversion error bounds the whole.
func TestLegacyMatMul(t *testing.T) {
	defer UseGeneric(false)
	rng := rand.New(rand.NewPCG(49, 50))
	p := par.New(3)
	defer p.Close()
	for _, set := range KernelSets() {
		if err := UseKernels(set); err != nil {
			t.Fatal(err)
		}
		var buf Scratch
		for _, d := range legacyTypes {
			for _, shape := range [][2]int{{7, 96}, {33, 256}} {
				rows, cols := shape[0], shape[1]
				m, err := NewMatrix(d.w, rows, cols, encode(t, d.w, testData(rng, rows*cols)))
				if err != nil {
					t.Fatal(err)
				}
				wd := decode(t, d.w, m.Data, rows*cols)
				for _, n := range []int{1, 3} {
					x := testData(rng, n*cols)
					for _, pool := range []*par.Pool{nil, p} {
						y := make([]float32, n*rows+1)
						y[n*rows] = 12345
						MatMul(pool, m, x, n, y, &buf)
						if y[n*rows] != 12345 {
							t.Fatalf("%s %v: MatMul wrote past n*rows", set, d.w)
						}
						for i := 0; i < n; i++ {
							xi := x[i*cols : (i+1)*cols]
							a := legacyAct(t, d.act, xi)
							for r := 0; r < rows; r++ {
								want := d.twin(m.Row(r), a)
								if got := y[i*rows+r]; math.Float32bits(got) != math.Float32bits(want) {
									t.Fatalf("%s %v %dx%d n=%d: y[%d][%d] = %v, twin %v", set, d.w, rows, cols, n, i, r, got, want)
								}
								wr := wd[r*cols : (r+1)*cols]
								ref, mag := dot64(wr, xi)
								var bound float64
								for e := range wr {
									b := xi[e/32*32 : e/32*32+32]
									bound += math.Abs(float64(wr[e])) * float64(absMax(b)) * (1.0/254 + 1.0/2048)
								}
								if math.Abs(float64(want)-ref) > bound+1e-5*mag {
									t.Fatalf("%s %v: y[%d][%d] = %v, float64 %v ± %.3g", set, d.w, i, r, want, ref, bound)
								}
							}
						}
					}
				}
			}
		}
		// Q4_1 and Q5_1 share Q8_1 activations, Q5_0 and IQ4_NL Q8_0
		// ones: one pass must give each matrix MatMul's bits.
		for _, pair := range [][2]Type{{Q4_1, Q5_1}, {Q5_0, IQ4_NL}, {Q4_1, Q5_0}} {
			rows, cols, n := 9, 128, 2
			var ms []Matrix
			var want [][]float32
			x := testData(rng, n*cols)
			for _, typ := range pair {
				m, err := NewMatrix(typ, rows, cols, encode(t, typ, testData(rng, rows*cols)))
				if err != nil {
					t.Fatal(err)
				}
				y := make([]float32, n*rows)
				MatMul(p, m, x, n, y, &buf)
				ms, want = append(ms, m), append(want, y)
			}
			ys := [][]float32{make([]float32, n*rows), make([]float32, n*rows)}
			MatMulShared(p, ms, x, n, ys, &buf)
			for e := range ys {
				for i := range ys[e] {
					if math.Float32bits(ys[e][i]) != math.Float32bits(want[e][i]) {
						t.Fatalf("%s MatMulShared %v: output %d of %v = %v, MatMul %v", set, pair, i, pair[e], ys[e][i], want[e][i])
					}
				}
			}
		}
	}
}

// TestLegacyBadInput checks that wrong sizes are errors and that
// non-finite values encode without a panic.
func TestLegacyBadInput(t *testing.T) {
	for _, d := range legacyTypes {
		if err := Quantize(d.w, make([]float32, 31), make([]byte, 64)); err == nil {
			t.Errorf("%v: Quantize of 31 values did not fail", d.w)
		}
		if err := Quantize(d.w, make([]float32, 32), make([]byte, d.w.BlockBytes()-1)); err == nil {
			t.Errorf("%v: Quantize into a short buffer did not fail", d.w)
		}
		if err := Dequantize(d.w, make([]byte, d.w.BlockBytes()-1), make([]float32, 32)); err == nil {
			t.Errorf("%v: Dequantize of a short buffer did not fail", d.w)
		}
		if _, err := NewMatrix(d.w, 2, 32, make([]byte, 2*d.w.BlockBytes()-1)); err == nil {
			t.Errorf("%v: NewMatrix on a short buffer did not fail", d.w)
		}
		x := make([]float32, 96)
		x[3], x[40], x[70] = float32(math.Inf(1)), float32(math.NaN()), -float32(math.Inf(1))
		x[71] = math.MaxFloat32
		b := make([]byte, 3*d.w.BlockBytes())
		if err := Quantize(d.w, x, b); err != nil {
			t.Fatalf("%v: %v", d.w, err)
		}
		if err := Dequantize(d.w, b, x); err != nil {
			t.Fatalf("%v: %v", d.w, err)
		}
	}
}

func BenchmarkLegacyQuantize(b *testing.B) {
	rng := rand.New(rand.NewPCG(51, 52))
	x := testData(rng, 4096)
	for _, d := range legacyTypes {
		b.Run(d.w.String(), func(b *testing.B) {
			size, _ := d.w.RowBytes(len(x))
			dst := make([]byte, size)
			b.SetBytes(int64(4 * len(x)))
			for b.Loop() {
				Quantize(d.w, x, dst)
			}
		})
	}
}

func BenchmarkLegacyMatMul(b *testing.B) {
	const rows, cols = 1024, 2048
	rng := rand.New(rand.NewPCG(53, 54))
	wf := testData(rng, rows*cols)
	for _, d := range legacyTypes {
		data := encode(b, d.w, wf)
		m, _ := NewMatrix(d.w, rows, cols, data)
		b.Run(fmt.Sprintf("%v/n=1", d.w), func(b *testing.B) {
			x := testData(rng, cols)
			y := make([]float32, rows)
			var buf Scratch
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				MatMul(nil, m, x, 1, y, &buf)
			}
		})
	}
}

// legacyEntries reads each legacy-type dot kernel out of a kernel set, in
// legacyTypes' order.
func legacyEntries(s *kernelSet) []func(w, a []byte) float32 {
	return []func(w, a []byte) float32{s.dotQ4_1Q8_1, s.dotQ5_0Q8_0, s.dotQ5_1Q8_1, s.dotIQ4_NLQ8_0}
}

// legacyHalves are finite f16 scales, offsets and sums for raw blocks: 1
// (integer sums), negatives, the largest half, subnormals and -0.
var legacyHalves = []uint16{0x3c00, 0xb800, 0x2e66, 0x1400, 0x5640, 0x7bff, 0xfbff, 0x0001, 0x8123, 0x8000}

// legacyRaw returns nb blocks of typ (a weight type, Q8_0 or Q8_1) whose
// quant bytes are random or all one byte (every byte value is valid for
// the kernels, activations at -128 included) and whose f16 fields are
// drawn from legacyHalves.
func legacyRaw(rng *rand.Rand, typ Type, nb int, mode string) []byte {
	bs := typ.BlockBytes()
	b := make([]byte, nb*bs)
	switch mode {
	case "random":
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
	default: // a byte, as "0x80"
		var c byte
		fmt.Sscanf(mode, "0x%x", &c)
		for i := range b {
			b[i] = c
		}
	}
	halves := 1 // d
	if typ == Q4_1 || typ == Q5_1 || typ == Q8_1 {
		halves = 2 // d and m, or d and s
	}
	for i := 0; i < nb; i++ {
		for h := 0; h < halves; h++ {
			binary.LittleEndian.PutUint16(b[i*bs+2*h:], legacyHalves[rng.IntN(len(legacyHalves))])
		}
	}
	return b
}

// TestLegacyKernelsMatchGo holds the legacy-type kernels of every
// per-architecture set this CPU runs to their Go twins, bit for bit:
// quantized data, random and extreme raw blocks (all nibbles and fifth
// bits 0 or 1, activations at -128 and 127), 0..17 and 255..257 blocks at
// misaligned offsets.
func TestLegacyKernelsMatchGo(t *testing.T) {
	if len(archSets) == 0 {
		t.Skip("no per-architecture kernel set on this CPU")
	}
	rng := rand.New(rand.NewPCG(61, 62))
	var counts []int
	for nb := 0; nb <= 17; nb++ {
		counts = append(counts, nb)
	}
	counts = append(counts, 255, 256, 257)
	modes := [][2]string{ // weights, activations
		{"quantized", "quantized"}, {"random", "random"}, {"0x00", "0x00"}, {"0xff", "0x80"},
		{"0xff", "0x7f"}, {"0x80", "0x80"}, {"0x7f", "0x81"}, {"0x00", "0x80"},
	}
	for _, set := range archSets {
		for i, kern := range legacyEntries(&set) {
			d := legacyTypes[i]
			for _, mode := range modes {
				for _, nb := range counts {
					off := rng.IntN(8)
					var w, a []byte
					if mode[0] == "quantized" {
						w = encode(t, d.w, testData(rng, 32*nb))
						a = legacyAct(t, d.act, testData(rng, 32*nb))
					} else {
						w, a = legacyRaw(rng, d.w, nb, mode[0]), legacyRaw(rng, d.act, nb, mode[1])
					}
					w, a = misaligned(w, off), misaligned(a, 7-off)
					got, want := kern(w, a), d.twin(w, a)
					if math.Float32bits(got) == math.Float32bits(want) {
						continue
					}
					wb, ab := d.w.BlockBytes(), d.act.BlockBytes()
					for b := 0; b < nb; b++ {
						bw, ba := w[b*wb:(b+1)*wb], a[b*ab:(b+1)*ab]
						if g, x := kern(bw, ba), d.twin(bw, ba); math.Float32bits(g) != math.Float32bits(x) {
							t.Fatalf("%s %v, %v, %d blocks, offset %d: kernel %v, Go %v; block %d alone: kernel %v, Go %v",
								set.name, d.w, mode, nb, off, got, want, b, g, x)
						}
					}
					t.Fatalf("%s %v, %v, %d blocks, offset %d: kernel %v, Go %v (every block alone agrees)",
						set.name, d.w, mode, nb, off, got, want)
				}
			}
		}
	}
}

// BenchmarkLegacyDots times each set's legacy-type kernels, the twins
// among them ("generic"), on one row of a 4096-wide matrix (in L1/L2).
func BenchmarkLegacyDots(b *testing.B) {
	rng := rand.New(rand.NewPCG(63, 64))
	const n = 4096
	sets := append([]kernelSet{genericKernels}, archSets...)
	for i, d := range legacyTypes {
		w := encode(b, d.w, testData(rng, n))
		a := legacyAct(&testing.T{}, d.act, testData(rng, n))
		for _, set := range sets {
			f := legacyEntries(&set)[i]
			b.Run(fmt.Sprintf("%v/%s", d.w, set.name), func(b *testing.B) {
				b.SetBytes(int64(len(w)))
				var s float32
				for b.Loop() {
					s += f(w, a)
				}
				_ = s
			})
		}
	}
}

// legacyBlock encodes one weight block of typ from its scale d and offset m
// (f16 bits; m only for Q4_1 and Q5_1) and its 32 decoded integers: the
// values (Q4_1 0..15, Q5_0 -16..15, Q5_1 0..31) or IQ4_NL's level indices.
func legacyBlock(typ Type, d, m uint16, q [32]int) []byte {
	b := make([]byte, typ.BlockBytes())
	binary.LittleEndian.PutUint16(b, d)
	qs, qhAt := b[2:], -1
	switch typ {
	case Q4_1:
		binary.LittleEndian.PutUint16(b[2:], m)
		qs = b[4:]
	case Q5_0:
		qs, qhAt = b[6:], 2
	case Q5_1:
		binary.LittleEndian.PutUint16(b[2:], m)
		qs, qhAt = b[8:], 4
	}
	var qh uint32
	for j := 0; j < 16; j++ {
		lo, hi := q[j], q[j+16]
		if typ == Q5_0 {
			lo, hi = lo+16, hi+16
		}
		qs[j] = byte(lo&0xf | hi&0xf<<4)
		qh |= uint32(lo>>4&1)<<j | uint32(hi>>4&1)<<(j+16)
	}
	if qhAt >= 0 {
		binary.LittleEndian.PutUint32(b[qhAt:], qh)
	}
	return b
}

// actBlock encodes one Q8_0 or Q8_1 block (s only for Q8_1).
func actBlock(typ Type, d, s uint16, y [32]int8) []byte {
	b := make([]byte, typ.BlockBytes())
	binary.LittleEndian.PutUint16(b, d)
	qs := b[2:]
	if typ == Q8_1 {
		binary.LittleEndian.PutUint16(b[2:], s)
		qs = b[4:]
	}
	for j, v := range y {
		qs[j] = byte(v)
	}
	return b
}

// TestLegacyDotOrder pins the float order legacy.go documents, in the twins
// and in the kernels of every per-architecture set this CPU runs, on blocks
// whose results tell it from its neighbours:
//
//   - lanes: block 1 puts 2^30 in lane 0, block 2 48 in each of two other
//     lanes. With lanes 4 and 5, hsum8 adds one 48 to lane 0's 2^30 (it
//     rounds back to 2^30, whose ulp is 128) and then the other: 2^30,
//     where a single running sum (IQ4_NL's order) adds the block's 96 at
//     once: 2^30+128. With lanes 5 and 7, hsum8 adds the two 48s together
//     first: 2^30+128, where a lane-by-lane sum gives 2^30.
//   - fused: block 1 adds d*s, block 2 d*(-s), with d*s not a float32;
//     a fused step leaves round(d*s) - d*s, an unfused one 0.
func TestLegacyDotOrder(t *testing.T) {
	sets := append([]kernelSet{genericKernels}, archSets...)
	for _, set := range sets {
		testLegacyDotOrder(t, set.name, legacyEntries(&set))
	}
}

func testLegacyDotOrder(t *testing.T, set string, dots []func(w, a []byte) float32) {
	one := uint16(0x3c00)
	for i, d := range legacyTypes {
		dot := dots[i]
		unit := 1 // the value 1 and the largest value
		top := 15
		if d.w == Q5_1 {
			top = 31
		}
		if d.w == IQ4_NL {
			unit, top = 8, 15 // kvaluesIQ4NL[8] = 1, [15] = 113
		}
		zero := 0
		if d.w == IQ4_NL {
			zero = 8 // no level is 0: the activations are, instead
		}
		blocks := func(q0, q1 [32]int, y0, y1 [32]int8, d0, d1 uint16) (w, a []byte) {
			w = append(legacyBlock(d.w, d0, 0, q0), legacyBlock(d.w, d1, 0, q1)...)
			a = append(actBlock(d.act, d0, 0, y0), actBlock(d.act, d1, 0, y1)...)
			return w, a
		}
		fill := func(v int) (q [32]int) {
			for i := range q {
				q[i] = v
			}
			return q
		}
		// lanes: block 1 puts 2^30 in lane 0, block 2 48 in each of two
		// other lanes.
		for _, c := range []struct {
			l1, l2       int
			lanes, whole float32
		}{{4, 5, 1 << 30, 1<<30 + 128}, {5, 7, 1<<30 + 128, 1<<30 + 128}} {
			q0, q1 := fill(zero), fill(zero)
			var y0, y1 [32]int8
			q0[0], y0[0] = unit, 1
			q1[4*c.l1], y1[4*c.l1] = unit, 48
			q1[4*c.l2], y1[4*c.l2] = unit, 48
			w, a := blocks(q0, q1, y0, y1, 0x7800, one) // 2^15 * 2^15 = 2^30
			want := c.lanes
			if d.w == IQ4_NL {
				want = c.whole
			}
			if got := dot(w, a); got != want {
				t.Errorf("%s %v lanes 0, %d, %d: %v, want %v", set, d.w, c.l1, c.l2, got, want)
			}
		}
		// fused
		q0, q1 := fill(zero), fill(zero)
		var y0, y1 [32]int8
		q0[0], y0[0] = top, 127
		q1[0], y1[0] = top, -127
		w, a := blocks(q0, q1, y0, y1, 0x3c01, 0x3c01)
		level := float64(top)
		if d.w == IQ4_NL {
			level = float64(kvaluesIQ4NL[top])
		}
		sc := float64(f16At(w[0:])) * float64(f16At(a[0:]))
		p := sc * level * 127 // exact in float64
		if float64(float32(p)) == p {
			t.Fatalf("%v fused: d*s = %v is a float32", d.w, p)
		}
		if got, want := dot(w, a), float32(float64(float32(p))-p); got != want || want == 0 {
			t.Errorf("%s %v fused: %v, want %v", set, d.w, got, want)
		}
	}
}
