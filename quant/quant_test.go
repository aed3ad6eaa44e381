package quant

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"shade/par"
)

// computedTypes are the types shade computes with, in id order: every
// test that loops over them covers a type the moment it is marked
// supported.
var computedTypes = func() (ts []Type) {
	for t := Type(0); t < 64; t++ {
		if t.Supported() {
			ts = append(ts, t)
		}
	}
	return ts
}()

// testData returns n values shaped like real weights and activations: a
// Gaussian whose scale changes every 32 values, with a few outliers and some
// special stretches (all zero, constant, all positive, all negative).
func testData(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	scale := 1.0
	for i := range x {
		if i%32 == 0 {
			scale = math.Exp(rng.NormFloat64() * 1.5)
		}
		x[i] = float32(rng.NormFloat64() * scale)
		if rng.IntN(100) == 0 {
			x[i] *= 8
		}
	}
	for i := 0; i+256 <= n; i += 1024 { // specials in some 256-blocks
		switch (i / 1024) % 4 {
		case 0:
			clear(x[i+32 : i+64])
		case 1:
			for j := i; j < i+32; j++ {
				x[j] = 0.75
			}
		case 2:
			for j := i; j < i+64; j++ {
				x[j] = abs32(x[j])
			}
		case 3:
			for j := i; j < i+256; j++ {
				x[j] = -abs32(x[j])
			}
		}
	}
	return x
}

func encode(t testing.TB, typ Type, x []float32) []byte {
	t.Helper()
	n, err := typ.RowBytes(len(x))
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, n)
	if err := Quantize(typ, x, b); err != nil {
		t.Fatal(err)
	}
	return b
}

func decode(t *testing.T, typ Type, b []byte, n int) []float32 {
	t.Helper()
	y := make([]float32, n)
	if err := Dequantize(typ, b, y); err != nil {
		t.Fatal(err)
	}
	return y
}

func absMax(x []float32) float32 {
	var m float32
	for _, v := range x {
		m = max(m, abs32(v))
	}
	return m
}

// roundTripBound is the largest error each type's quantizer may make on
// x[i], given the block around it.
// roundTripBound bounds the error of value i of x after encoding as typ and
// decoding; false for the types whose bounds their own files test
// (legacy_test.go, k35_test.go, k2iq_test.go).
func roundTripBound(typ Type, x []float32, i int) (float64, bool) {
	switch typ {
	case F32:
		return 0, true
	case F16:
		return math.Abs(float64(x[i]))*0x1p-11 + 0x1p-25, true
	case BF16:
		return math.Abs(float64(x[i])) * 0x1p-8, true
	case Q8_0:
		b := x[i/32*32 : i/32*32+32]
		return float64(absMax(b)) * (1.0/254 + 1.0/2048), true
	case Q4_0:
		// The opposite of the largest value can be off by a whole step d.
		b := x[i/32*32 : i/32*32+32]
		return float64(absMax(b)) / 8 * (1 + 1.0/1024), true
	case Q4_K:
		// Half a step of the sub-block's own scale (rounded up to the
		// super-block grid), plus the grid steps of scale and min.
		sub := x[i/32*32 : i/32*32+32]
		sup := x[i/256*256 : i/256*256+256]
		lo, hi := sub[0], sub[0]
		for _, v := range sub {
			lo, hi = min(lo, v), max(hi, v)
		}
		span := float64(hi - min(lo, 0))
		supSpan := float64(absMax(sup)) * 2
		return (span/15/2 + supSpan/15/63 + supSpan/63) * 1.01, true
	case Q6_K:
		// The opposite of the sub-block's largest value can be off by a
		// whole step; the int8 scale grid adds up to amax/256.
		sub := x[i/16*16 : i/16*16+16]
		sup := x[i/256*256 : i/256*256+256]
		return (float64(absMax(sub))/32 + float64(absMax(sup))/256) * 1.01, true
	}
	return 0, false
}

func TestRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	x := testData(rng, 4096)
	for _, typ := range computedTypes {
		t.Run(typ.String(), func(t *testing.T) {
			if _, ok := roundTripBound(typ, x, 0); !ok {
				t.Skipf("%v: bounded by its own file's round-trip test", typ)
			}
			y := decode(t, typ, encode(t, typ, x), len(x))
			var sumErr2, sumX2 float64
			for i := range x {
				e := math.Abs(float64(y[i]) - float64(x[i]))
				if b, _ := roundTripBound(typ, x, i); e > b {
					t.Fatalf("value %d: %v decoded as %v, error %g > bound %g", i, x[i], y[i], e, b)
				}
				sumErr2 += e * e
				sumX2 += float64(x[i]) * float64(x[i])
			}
			t.Logf("%v: relative RMS error %.2e", typ, math.Sqrt(sumErr2/sumX2))
		})
	}
}

func TestQuantizeZeros(t *testing.T) {
	x := make([]float32, 512)
	for _, typ := range computedTypes {
		y := decode(t, typ, encode(t, typ, x), len(x))
		for i, v := range y {
			if v != 0 {
				t.Fatalf("%v: zero input decodes to %v at %d", typ, v, i)
			}
		}
	}
}

// TestQuantizeReference checks the ggml reference quantizers on inputs whose
// encoding is known.
func TestQuantizeReference(t *testing.T) {
	// Q8_0: amax 127 gives d = 1, so q = roundf(x): ties go away from zero.
	x := make([]float32, 32)
	x[0] = 127
	x[1], x[2], x[3], x[4] = 2.5, -2.5, 0.5, -1.4
	b := encode(t, Q8_0, x)
	if d := f16At(b); d != 1 {
		t.Fatalf("Q8_0 d = %v, want 1", d)
	}
	want := []int8{127, 3, -3, 1, -1}
	for i, w := range want {
		if got := int8(b[2+i]); got != w {
			t.Errorf("Q8_0 q[%d] = %d, want %d", i, got, w)
		}
	}

	// Q4_0: the largest magnitude (-16) maps to q=0, d = -16/-8 = 2.
	x = make([]float32, 32)
	x[0] = -16
	x[1] = 16  // x/d + 8.5 = 16.5 -> 16, clamped to 15
	x[16] = 3  // 1.5 + 8.5 = 10
	x[17] = -1 // -0.5 + 8.5 = 8
	b = encode(t, Q4_0, x)
	if d := f16At(b); d != 2 {
		t.Fatalf("Q4_0 d = %v, want 2", d)
	}
	checks := []struct {
		byteIdx int
		want    byte
	}{{2 + 0, 0 | 10<<4}, {2 + 1, 15 | 8<<4}, {2 + 2, 8 | 8<<4}}
	for _, c := range checks {
		if b[c.byteIdx] != c.want {
			t.Errorf("Q4_0 byte %d = %#02x, want %#02x", c.byteIdx, b[c.byteIdx], c.want)
		}
	}
}

func putF16(b []byte, f float32) { binary.LittleEndian.PutUint16(b, F32ToF16(f)) }

// TestDequantizeKnownBlocks decodes hand-built blocks laid out as ggml
// documents them.
func TestDequantizeKnownBlocks(t *testing.T) {
	t.Run("Q4_0", func(t *testing.T) {
		b := make([]byte, 18)
		putF16(b, 0.5)
		for j := 0; j < 16; j++ {
			b[2+j] = byte(j) | byte(15-j)<<4
		}
		y := decode(t, Q4_0, b, 32)
		for j := 0; j < 16; j++ {
			if want := float32(j-8) * 0.5; y[j] != want {
				t.Fatalf("y[%d] = %v, want %v", j, y[j], want)
			}
			if want := float32(7-j) * 0.5; y[j+16] != want {
				t.Fatalf("y[%d] = %v, want %v", j+16, y[j+16], want)
			}
		}
	})
	t.Run("Q8_0", func(t *testing.T) {
		b := make([]byte, 34)
		putF16(b, 0.25)
		for j := 0; j < 32; j++ {
			b[2+j] = byte(int8(j*8 - 128))
		}
		y := decode(t, Q8_0, b, 32)
		for j := range y {
			if want := float32(j*8-128) * 0.25; y[j] != want {
				t.Fatalf("y[%d] = %v, want %v", j, y[j], want)
			}
		}
	})
	t.Run("Q4_K", func(t *testing.T) {
		// Scales and mins use all 6 bits, so sub-blocks 4-7 exercise the
		// high bits stored in the top of bytes 0-7.
		sc := [8]byte{1, 17, 33, 63, 5, 20, 47, 63}
		mn := [8]byte{0, 9, 31, 62, 3, 16, 35, 60}
		b := make([]byte, 144)
		putF16(b[0:], 1)
		putF16(b[2:], 0.5)
		p := b[4:16]
		for j := 0; j < 4; j++ {
			p[j] = sc[j] | (sc[j+4]>>4)<<6
			p[j+4] = mn[j] | (mn[j+4]>>4)<<6
			p[j+8] = sc[j+4]&0xf | (mn[j+4]&0xf)<<4
		}
		q := func(s, l int) byte { return byte((l + 3*s) % 16) }
		for s := 0; s < 8; s++ {
			for l := 0; l < 32; l++ {
				if s%2 == 0 {
					b[16+32*(s/2)+l] |= q(s, l)
				} else {
					b[16+32*(s/2)+l] |= q(s, l) << 4
				}
			}
		}
		y := decode(t, Q4_K, b, 256)
		for s := 0; s < 8; s++ {
			for l := 0; l < 32; l++ {
				want := float32(sc[s])*float32(q(s, l)) - 0.5*float32(mn[s])
				if got := y[32*s+l]; got != want {
					t.Fatalf("sub-block %d value %d = %v, want %v", s, l, got, want)
				}
			}
		}
		// The packing helper agrees with the hand packing.
		var packed [12]byte
		putScaleMinK4(&packed, &sc, &mn)
		if string(packed[:]) != string(p) {
			t.Fatalf("putScaleMinK4 = %x, hand-packed %x", packed, p)
		}
	})
	t.Run("Q6_K", func(t *testing.T) {
		var sc [16]int8
		for i := range sc {
			sc[i] = int8(i*17 - 128) // -128 .. 127
		}
		q := func(e int) byte { return byte(e*7+e/64) % 64 }
		b := make([]byte, 210)
		for h := 0; h < 2; h++ {
			for l := 0; l < 32; l++ {
				e := 128*h + l
				b[64*h+l] = q(e)&0xf | (q(e+64)&0xf)<<4
				b[64*h+l+32] = q(e+32)&0xf | (q(e+96)&0xf)<<4
				b[128+32*h+l] = q(e)>>4 | q(e+32)>>4<<2 | q(e+64)>>4<<4 | q(e+96)>>4<<6
			}
		}
		for i, s := range sc {
			b[192+i] = byte(s)
		}
		putF16(b[208:], 0.125)
		y := decode(t, Q6_K, b, 256)
		for e := range y {
			want := 0.125 * float32(sc[e/16]) * float32(int(q(e))-32)
			if y[e] != want {
				t.Fatalf("value %d = %v, want %v", e, y[e], want)
			}
		}
	})
	t.Run("floats", func(t *testing.T) {
		b := make([]byte, 8)
		binary.LittleEndian.PutUint32(b, math.Float32bits(1.5))
		binary.LittleEndian.PutUint32(b[4:], math.Float32bits(-2))
		if y := decode(t, F32, b, 2); y[0] != 1.5 || y[1] != -2 {
			t.Errorf("F32 = %v", y)
		}
		binary.LittleEndian.PutUint16(b, 0x3e00)     // 1.5
		binary.LittleEndian.PutUint16(b[2:], 0xc000) // -2
		if y := decode(t, F16, b, 2); y[0] != 1.5 || y[1] != -2 {
			t.Errorf("F16 = %v", y)
		}
		binary.LittleEndian.PutUint16(b, 0x3fc0)     // 1.5
		binary.LittleEndian.PutUint16(b[2:], 0xc000) // -2
		if y := decode(t, BF16, b, 2); y[0] != 1.5 || y[1] != -2 {
			t.Errorf("BF16 = %v", y)
		}
	})
}

func TestSizeErrors(t *testing.T) {
	cases := []struct {
		name    string
		err     error
		mention string
	}{
		{"short src", Dequantize(Q4_K, make([]byte, 143), make([]float32, 256)), "Q4_K"},
		{"partial block", Dequantize(Q4_0, make([]byte, 100), make([]float32, 33)), "Q4_0"},
		{"unsupported", Dequantize(IQ1_S, make([]byte, 50), make([]float32, 256)), "IQ1_S"},
		{"unknown", Dequantize(Type(99), nil, nil), "type(99)"},
		{"short dst", Quantize(Q6_K, make([]float32, 256), make([]byte, 209)), "Q6_K"},
		{"quantize partial", Quantize(Q8_0, make([]float32, 31), make([]byte, 100)), "Q8_0"},
		{"quantize unsupported", Quantize(IQ2_XS, make([]float32, 256), make([]byte, 1000)), "IQ2_XS"},
	}
	for _, c := range cases {
		if c.err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		if !strings.Contains(c.err.Error(), c.mention) || !strings.HasPrefix(c.err.Error(), "quant: ") {
			t.Errorf("%s: error %q does not name %s", c.name, c.err, c.mention)
		}
	}
	if err := Dequantize(IQ1_S, nil, nil); !errors.Is(err, ErrUnsupported) {
		t.Errorf("unsupported type error %v is not ErrUnsupported", err)
	}
	// Extra bytes are fine.
	if err := Dequantize(Q8_0, make([]byte, 40), make([]float32, 32)); err != nil {
		t.Errorf("extra source bytes: %v", err)
	}

	if _, err := NewMatrix(Q4_K, 2, 255, make([]byte, 1000)); err == nil {
		t.Error("NewMatrix accepted 255 columns of Q4_K")
	}
	if _, err := NewMatrix(Q4_0, 3, 64, make([]byte, 3*36-1)); err == nil {
		t.Error("NewMatrix accepted a short buffer")
	}
	if _, err := NewMatrix(IQ2_XXS, 1, 256, make([]byte, 100)); !errors.Is(err, ErrUnsupported) {
		t.Errorf("NewMatrix(IQ2_XXS) error %v is not ErrUnsupported", err)
	}
	m, err := NewMatrix(Q4_0, 3, 64, make([]byte, 3*36+5))
	if err != nil || len(m.Data) != 3*36 || len(m.Row(2)) != 36 {
		t.Errorf("NewMatrix(Q4_0, 3, 64): %v, %d bytes", err, len(m.Data))
	}
}

// dequantizeQ8_K decodes Q8_K activations, checking their bsums on the way.
func dequantizeQ8_K(t *testing.T, b []byte, n int) []float32 {
	y := make([]float32, n)
	for blk := 0; blk < n/qkK; blk++ {
		x := b[blk*q8_KBytes:]
		d := f32At(x)
		for j := 0; j < 16; j++ {
			var sum int
			for i := 0; i < 16; i++ {
				sum += int(int8(x[4+16*j+i]))
			}
			if bs := int(int16(le16(x[4+qkK+2*j:]))); bs != sum {
				t.Fatalf("Q8_K block %d bsums[%d] = %d, want %d", blk, j, bs, sum)
			}
		}
		for i := 0; i < qkK; i++ {
			y[blk*qkK+i] = d * float32(int8(x[4+i]))
		}
	}
	return y
}

func TestQuantizeQ8_K(t *testing.T) {
	x := make([]float32, 256)
	x[0], x[1], x[2], x[3] = 2, -1, 0.5, 1.0/127 // max is +2: iscale = -63.5
	b := make([]byte, q8_KBytes)
	quantizeQ8_K(x, b)
	if d := f32At(b); d != float32(1/(-127.0/2)) {
		t.Errorf("d = %v, want %v", d, 1/(-127.0/2))
	}
	// -127, 63.5 -> 64 (ties to even), -31.75 -> -32, -0.5 -> 0 (ties to even)
	want := []int8{-127, 64, -32, 0}
	for i, w := range want {
		if got := int8(b[4+i]); got != w {
			t.Errorf("q[%d] = %d, want %d", i, got, w)
		}
	}
	dequantizeQ8_K(t, b, 256)
}

// activationOf returns what a dot kernel for weight type typ sees of x: the
// activations converted as MatMul converts them, decoded back to float32.
func activationOf(t *testing.T, typ Type, x []float32) []float32 {
	a := activationFor(typ)
	switch a.typ {
	case Q8_0:
		b := make([]byte, len(x)/32*34)
		k.quantizeQ8_0(x, b)
		return decode(t, Q8_0, b, len(x))
	case Q8_K:
		b := make([]byte, len(x)/256*q8_KBytes)
		k.quantizeQ8_K(x, b)
		return dequantizeQ8_K(t, b, len(x))
	case Q8_1: // Q8_0's d and quants, with the sum s between them
		b := make([]byte, len(x)/32*q8_1Bytes)
		k.quantizeQ8_1(x, b)
		y := make([]float32, len(x))
		for i := range y {
			blk := b[i/32*q8_1Bytes:]
			y[i] = f16At(blk) * float32(int8(blk[4+i%32]))
		}
		return y
	}
	return decode(t, a.typ, encode(t, a.typ, x), len(x))
}

// dot64 returns Σ w*x in float64 and Σ |w*x|.
func dot64(w, x []float32) (dot, mag float64) {
	for i := range w {
		p := float64(w[i]) * float64(x[i])
		dot += p
		mag += math.Abs(p)
	}
	return dot, mag
}

// TestDotKernels checks each kernel against a float64 dot of what it should
// compute: dequantized weights times converted activations. Only float32
// rounding in the per-block scaling separates the two.
func TestDotKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, typ := range computedTypes {
		for _, cols := range []int{256, 512, 4096} {
			w := testData(rng, cols)
			x := testData(rng, cols)
			wb := encode(t, typ, w)
			wd := decode(t, typ, wb, cols)
			xa := activationOf(t, typ, x)
			want, mag := dot64(wd, xa)
			want += q8_1SumCorrection(typ, wb, x)

			m, err := NewMatrix(typ, 1, cols, wb)
			if err != nil {
				t.Fatal(err)
			}
			y := make([]float32, 1)
			MatMul(nil, m, x, 1, y, nil)
			if e := math.Abs(float64(y[0]) - want); e > 1e-5*mag+1e-30 {
				t.Errorf("%v cols=%d: kernel %v, float64 %v, error %.3g of magnitude %.3g", typ, cols, y[0], want, e, mag)
			}
		}
	}
}

// q8_1SumCorrection is what the weights' minima m add to a Q4_1 or Q5_1
// dot beyond Σ w·x over the decoded activations: the kernels multiply m by
// the half-precision sum s a Q8_1 block stores, not by d·Σq.
func q8_1SumCorrection(typ Type, wb []byte, x []float32) float64 {
	if activationFor(typ).typ != Q8_1 {
		return 0
	}
	a := make([]byte, len(x)/32*q8_1Bytes)
	k.quantizeQ8_1(x, a)
	var c float64
	for b := 0; b < len(x)/32; b++ {
		blk := a[b*q8_1Bytes:]
		var sum int
		for _, q := range blk[4:q8_1Bytes] {
			sum += int(int8(q))
		}
		m := float64(f16At(wb[b*typ.BlockBytes()+2:]))
		c += m * (float64(f16At(blk[2:])) - float64(f16At(blk))*float64(sum))
	}
	return c
}

// activationBound is the largest error the activation conversion for weight
// type typ may make on x[i].
func activationBound(typ Type, x []float32, i int) float64 {
	switch activationFor(typ).typ {
	case Q8_0:
		b := x[i/32*32 : i/32*32+32]
		return float64(absMax(b)) * (1.0/254 + 1.0/2048)
	case Q8_K:
		b := x[i/256*256 : i/256*256+256]
		return float64(absMax(b)) / 254 * (1 + 1e-5)
	case Q8_1:
		// Q8_0's, plus a share of the half-precision sum s that carries
		// the weights' minimum.
		b := x[i/32*32 : i/32*32+32]
		return float64(absMax(b)) * (1.0/254 + 1.0/512)
	case F16:
		return math.Abs(float64(x[i]))*0x1p-11 + 0x1p-25
	case BF16:
		return math.Abs(float64(x[i])) * 0x1p-8
	}
	return 0
}

// TestMatMul compares MatMul with a float64 product of the dequantized
// weights and the unconverted activations. Each output may differ by what
// converting the activations can cost (Σ|w|·bound) plus float32 rounding.
func TestMatMul(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	pools := map[string]*par.Pool{"nil": nil, "1": par.New(1), "3": par.New(3)}
	defer func() {
		for _, p := range pools {
			p.Close()
		}
	}()
	var buf Scratch // shared across calls and sizes, as the model will
	for _, typ := range computedTypes {
		cols := 96
		if typ.BlockSize() == 256 {
			cols = 512
		}
		rowCounts, maxN := []int{1, 7, 33, 67}, 5
		if testing.Short() {
			rowCounts, maxN = []int{7, 33}, 3
		}
		for _, rows := range rowCounts {
			wf := testData(rng, rows*cols)
			m, err := NewMatrix(typ, rows, cols, encode(t, typ, wf))
			if err != nil {
				t.Fatal(err)
			}
			wd := decode(t, typ, m.Data, rows*cols)
			for n := 1; n <= maxN; n++ {
				x := testData(rng, n*cols)
				for name, p := range pools {
					y := make([]float32, n*rows+1)
					y[n*rows] = 12345 // guard past the output
					MatMul(p, m, x, n, y, &buf)
					if y[n*rows] != 12345 {
						t.Fatalf("%v: MatMul wrote past n*rows", typ)
					}
					for i := 0; i < n; i++ {
						xi := x[i*cols : (i+1)*cols]
						for r := 0; r < rows; r++ {
							wr := wd[r*cols : (r+1)*cols]
							want, mag := dot64(wr, xi)
							var bound float64
							for e := range wr {
								bound += math.Abs(float64(wr[e])) * activationBound(typ, xi, e)
							}
							bound += 1e-5 * mag
							if got := float64(y[i*rows+r]); math.Abs(got-want) > bound {
								t.Fatalf("%v %dx%d n=%d pool=%s: y[%d][%d] = %v, want %v ± %.3g",
									typ, rows, cols, n, name, i, r, got, want, bound)
							}
						}
					}
				}
			}
		}
	}
}

func TestMatMulDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector drops sync.Pool items at random: allocation counts mean nothing under it")
	}
	rng := rand.New(rand.NewPCG(7, 8))
	p := par.New(2)
	defer p.Close()
	for _, typ := range computedTypes {
		m, err := NewMatrix(typ, 64, 256, encode(t, typ, testData(rng, 64*256)))
		if err != nil {
			t.Fatal(err)
		}
		x := testData(rng, 3*256)
		y := make([]float32, 3*64)
		var buf Scratch
		MatMul(p, m, x, 3, y, &buf)
		if a := testing.AllocsPerRun(20, func() { MatMul(p, m, x, 3, y, &buf) }); a != 0 {
			t.Errorf("%v: MatMul allocates %v times per call", typ, a)
		}
	}
}

func TestDequantizeRow(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, typ := range computedTypes {
		w := testData(rng, 3*256)
		m, err := NewMatrix(typ, 3, 256, encode(t, typ, w))
		if err != nil {
			t.Fatal(err)
		}
		all := decode(t, typ, m.Data, 3*256)
		row := make([]float32, 256)
		m.DequantizeRow(1, row)
		for i := range row {
			if row[i] != all[256+i] {
				t.Fatalf("%v: row 1 value %d = %v, want %v", typ, i, row[i], all[256+i])
			}
		}
	}
}

func TestVec(t *testing.T) {
	for _, n := range []int{0, 1, 3, 4, 5, 17, 33, 257} {
		a := make([]float32, n)
		b := make([]float32, n)
		var want float64
		for i := range a {
			a[i], b[i] = float32(i%7)-3, float32(i%5)*0.5
			want += float64(a[i]) * float64(b[i])
		}
		if got := DotF32(a, b); math.Abs(float64(got)-want) > 1e-4 {
			t.Errorf("DotF32 n=%d = %v, want %v", n, got, want)
		}
	}
}

func TestUseGeneric(t *testing.T) {
	defer UseGeneric(false)
	UseGeneric(true)
	if Kernels() != "generic" {
		t.Errorf("Kernels() = %q after UseGeneric(true)", Kernels())
	}
}

func ExampleMatMul() {
	// A 2x32 Q8_0 matrix times one activation row.
	w := make([]float32, 2*32)
	for i := range w {
		w[i] = float32(i%32) / 32
	}
	data := make([]byte, 2*34)
	if err := Quantize(Q8_0, w, data); err != nil {
		panic(err)
	}
	m, err := NewMatrix(Q8_0, 2, 32, data)
	if err != nil {
		panic(err)
	}
	x := make([]float32, 32)
	x[31] = 1
	y := make([]float32, 2)
	MatMul(nil, m, x, 1, y, nil)
	fmt.Printf("%.2f %.2f\n", y[0], y[1])
	// Output: 0.97 0.97
}

func BenchmarkMatMul(b *testing.B) {
	const rows, cols = 2048, 2048
	rng := rand.New(rand.NewPCG(11, 12))
	wf := testData(rng, rows*cols)
	p := par.New(0)
	defer p.Close()
	for _, typ := range computedTypes {
		data := encode(b, typ, wf)
		size := len(data)
		m, _ := NewMatrix(typ, rows, cols, data)
		for _, n := range []int{1, 16} {
			b.Run(fmt.Sprintf("%v/n=%d", typ, n), func(b *testing.B) {
				x := testData(rng, n*cols)
				y := make([]float32, n*rows)
				var buf Scratch
				b.SetBytes(int64(size)) // GB/s of weights swept
				for b.Loop() {
					MatMul(p, m, x, n, y, &buf)
				}
			})
		}
	}
}

func BenchmarkQuantize(b *testing.B) {
	rng := rand.New(rand.NewPCG(13, 14))
	x := testData(rng, 4096)
	for _, typ := range computedTypes {
		b.Run(typ.String(), func(b *testing.B) {
			size, _ := typ.RowBytes(len(x))
			dst := make([]byte, size)
			b.SetBytes(int64(4 * len(x))) // float32 input consumed
			for b.Loop() {
				Quantize(typ, x, dst)
			}
		})
	}
}

// TestQuantizeQ8_0Rounding pins the two Q8_0 encoders apart: weights as
// llama.cpp's reference quantizer writes them (ties away from zero, x/d),
// activations as its x86 CPU backend encodes them before a dot product
// (ties to even, x·127/amax).
func TestQuantizeQ8_0Rounding(t *testing.T) {
	x := make([]float32, 32)
	x[0] = 127 // amax 127: d = 1, so x.5 values are ties
	x[1], x[2], x[3], x[4] = 0.5, 1.5, -2.5, 3.25
	weights, acts := make([]byte, q8_0Bytes), make([]byte, q8_0Bytes)
	quantizeQ8_0(x, weights)
	quantizeQ8_0Acts(x, acts)
	for i, want := range []struct{ w, a int8 }{{127, 127}, {1, 0}, {2, 2}, {-3, -2}, {3, 3}} {
		if w, a := int8(weights[2+i]), int8(acts[2+i]); w != want.w || a != want.a {
			t.Errorf("x[%d] = %g: weight quant %d (want %d), activation quant %d (want %d)", i, x[i], w, want.w, a, want.a)
		}
	}
	if le16(weights) != le16(acts) {
		t.Errorf("d differs: %#04x against %#04x", le16(weights), le16(acts))
	}
	// 127/amax overflows: the quants are zero and d a zero half.
	tiny := make([]float32, 32)
	tiny[5] = 1e-38
	quantizeQ8_0Acts(tiny, acts)
	for i, b := range acts {
		if b != 0 {
			t.Errorf("amax 1e-38: byte %d is %#02x", i, b)
		}
	}
}
