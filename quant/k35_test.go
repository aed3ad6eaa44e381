package quant

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// k35Types are the types of k35.go.
var k35Types = []Type{Q3_K, Q5_K}

// k35Bound is the largest error the reference quantizer of typ may make on
// x[i]. The fits may clip the largest values of a sub-block to widen the
// grid for the rest, so the bound is in steps of the sub-block's range, not
// half a step: Q3_K has 8 levels on [-amax, amax] (step amax/4), Q5_K 32 on
// [min, max] (step span/31); each adds the 6-bit grid of its super-block
// scales.
func k35Bound(typ Type, x []float32, i int) float64 {
	sup := x[i/256*256 : i/256*256+256]
	switch typ {
	case Q3_K:
		sub := x[i/16*16 : i/16*16+16]
		return float64(absMax(sub))/4*1.5 + float64(absMax(sup))/32
	case Q5_K:
		sub := x[i/32*32 : i/32*32+32]
		lo, hi := sub[0], sub[0]
		for _, v := range sub {
			lo, hi = min(lo, v), max(hi, v)
		}
		span := float64(hi - min(lo, 0))
		return span/31*1.5 + 2*float64(absMax(sup))/63
	}
	panic(typ)
}

// TestK35RoundTrip bounds each value's error after quantizing and
// dequantizing, and the relative RMS error on testData (outliers included):
// about a sixth of the signal for 3 bits, a twenty-fifth for 5.
func TestK35RoundTrip(t *testing.T) {
	rms := map[Type]float64{Q3_K: 0.25, Q5_K: 0.06}
	for _, typ := range k35Types {
		for _, n := range []int{256, 512, 4096} {
			rng := rand.New(rand.NewPCG(uint64(n), 35))
			x := testData(rng, n)
			y := decode(t, typ, encode(t, typ, x), n)
			var e2, x2 float64
			for i := range x {
				e := math.Abs(float64(y[i]) - float64(x[i]))
				if b := k35Bound(typ, x, i); e > b {
					t.Fatalf("%v n=%d value %d: %v decoded as %v, error %g > %g", typ, n, i, x[i], y[i], e, b)
				}
				e2 += e * e
				x2 += float64(x[i]) * float64(x[i])
			}
			t.Logf("%v n=%d: relative RMS error %.3g", typ, n, math.Sqrt(e2/x2))
			if r := math.Sqrt(e2 / x2); r > rms[typ] {
				t.Errorf("%v n=%d: relative RMS error %.3g > %.3g", typ, n, r, rms[typ])
			}
		}
	}
}

// TestK35Zeros checks that zeros, and blocks of one repeated value, decode
// as such (a one-valued block is exactly representable in both types).
func TestK35Zeros(t *testing.T) {
	for _, typ := range k35Types {
		for _, c := range []float32{0, 1, -0.5, 3} {
			x := make([]float32, 512)
			for i := range x {
				x[i] = c
			}
			y := decode(t, typ, encode(t, typ, x), len(x))
			for i, v := range y {
				if math.Abs(float64(v-c)) > math.Abs(float64(c))*1e-3 {
					t.Fatalf("%v: %v decodes as %v at %d", typ, c, v, i)
				}
			}
		}
	}
}

// TestK35Layout builds blocks bit by bit from chosen levels and scales and
// checks that dequantization reads each value from where ggml's layout puts
// it (the comment on q3_KBytes), independently of the quantizers.
func TestK35Layout(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 35))
	for iter := 0; iter < 20; iter++ {
		// Q3_K: levels 0..7, scales 0..63 (stored), d = 1.
		var q [qkK]uint8
		var sc [16]uint8
		for i := range q {
			q[i] = uint8(rng.IntN(8))
		}
		for j := range sc {
			sc[j] = uint8(rng.IntN(64))
		}
		var b [q3_KBytes]byte
		for i, v := range q {
			if v&4 != 0 {
				b[i%32] |= 1 << (i / 32)
			}
			b[32+32*(i/128)+i%32] |= (v & 3) << (2 * ((i % 128) / 32))
		}
		for j, s := range sc {
			b[96+j%8] |= (s & 0xf) << (4 * (j / 8))
			b[96+8+j%4] |= (s >> 4) << (2 * (j / 4))
		}
		binary.LittleEndian.PutUint16(b[108:], 0x3c00)
		y := make([]float32, qkK)
		dequantizeQ3_K(b[:], y)
		for i := range y {
			if want := float32((int(sc[i/16]) - 32) * (int(q[i]) - 4)); y[i] != want {
				t.Fatalf("Q3_K value %d: %v, want %v", i, y[i], want)
			}
		}

		// Q5_K: levels 0..31, scales and mins 0..63, d = 1, dmin = 0.5.
		var ls, lm [8]uint8
		for j := range ls {
			ls[j], lm[j] = uint8(rng.IntN(64)), uint8(rng.IntN(64))
		}
		var c [q5_KBytes]byte
		binary.LittleEndian.PutUint16(c[0:], 0x3c00)
		binary.LittleEndian.PutUint16(c[2:], 0x3800)
		putScaleMinK4((*[kScaleSize]byte)(c[4:]), &ls, &lm)
		for i := range q {
			v := uint8(rng.IntN(32))
			q[i] = v
			c[16+i%32] |= (v >> 4) << (i / 32)
			c[48+32*(i/64)+i%32] |= (v & 0xf) << (4 * ((i % 64) / 32))
		}
		dequantizeQ5_K(c[:], y)
		for i := range y {
			if want := float32(int(ls[i/32])*int(q[i])) - 0.5*float32(lm[i/32]); y[i] != want {
				t.Fatalf("Q5_K value %d: %v, want %v", i, y[i], want)
			}
		}
	}
}

// TestK35DotTwins checks the Go twins against a float64 dot of the
// dequantized weights and the dequantized Q8_K activations, over 0..9 and
// 16, 17 super-blocks of quantized and of raw random blocks (any bytes with
// finite f16 scales): only the float32 scaling per super-block separates
// the two.
func TestK35DotTwins(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 35))
	twins := map[Type]func(w, a []byte) float32{Q3_K: dotQ3_KQ8_KGo, Q5_K: dotQ5_KQ8_KGo}
	for _, typ := range k35Types {
		for _, nb := range []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 17} {
			for _, mode := range []string{"quantized", "random", "0xff", "0x80"} {
				n := nb * qkK
				var w, a []byte
				if mode == "quantized" {
					w = encode(t, typ, testData(rng, n))
					a = quantizeAct(t, Q8_K, testData(rng, n))
				} else {
					w = k35RawWeights(rng, typ, nb, mode)
					a = k35RawActs(rng, nb, mode)
				}
				got := twins[typ](w, a)
				want, mag := dot64(decode(t, typ, w, n), decodeAct(t, Q8_K, a, n))
				if math.Abs(float64(got)-want) > 1e-5*mag+1e-30 {
					t.Errorf("%v %s %d blocks: twin %v, float64 %v (magnitude %g)", typ, mode, nb, got, want, mag)
				}
			}
		}
	}
}

// k35Halves are finite f16 block scales for raw blocks: 1, negatives, a
// subnormal.
var k35Halves = []uint16{0x3c00, 0xb800, 0x2e66, 0x1400, 0x5640, 0x0001, 0x8123}

// k35Fill fills b with random bytes or, for modes "0xff" and "0x80", that
// byte (every level at its top, or Q3_K scales of -32 and low levels 0).
func k35Fill(rng *rand.Rand, b []byte, mode string) {
	for i := range b {
		switch mode {
		case "0xff":
			b[i] = 0xff
		case "0x80":
			b[i] = 0x80
		default:
			b[i] = byte(rng.IntN(256))
		}
	}
}

// k35RawWeights returns nb blocks of typ whose bytes k35Fill chose, with
// finite f16 scales.
func k35RawWeights(rng *rand.Rand, typ Type, nb int, mode string) []byte {
	bs := typ.BlockBytes()
	b := make([]byte, nb*bs)
	k35Fill(rng, b, mode)
	for i := 0; i < nb; i++ {
		blk := b[i*bs : (i+1)*bs]
		switch typ {
		case Q3_K:
			binary.LittleEndian.PutUint16(blk[108:], k35Halves[rng.IntN(len(k35Halves))])
		case Q5_K:
			binary.LittleEndian.PutUint16(blk, k35Halves[rng.IntN(len(k35Halves))])
			binary.LittleEndian.PutUint16(blk[2:], k35Halves[rng.IntN(len(k35Halves))])
		}
	}
	return b
}

// k35RawActs returns nb Q8_K blocks whose quants k35Fill chose (-128
// included), with scales ±1, ±0.5, ±0.25 and matching bsums.
func k35RawActs(rng *rand.Rand, nb int, mode string) []byte {
	b := make([]byte, nb*q8_KBytes)
	for i := 0; i < nb; i++ {
		blk := b[i*q8_KBytes : (i+1)*q8_KBytes]
		binary.LittleEndian.PutUint32(blk, 0x3f800000-uint32(rng.IntN(3))<<23|uint32(rng.IntN(2))<<31)
		q := blk[4 : 4+qkK]
		k35Fill(rng, q, mode)
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

// TestK35MatMul checks MatMul on Q3_K and Q5_K, with every kernel set this
// CPU has and batches of 1..9 rows, against the per-row Go twin: the same
// bits whatever the set and the batch.
func TestK35MatMul(t *testing.T) {
	defer UseGeneric(false)
	rng := rand.New(rand.NewPCG(11, 35))
	for _, typ := range k35Types {
		for _, shape := range [][2]int{{1, 256}, {7, 512}, {33, 768}, {64, 1024}} {
			rows, cols := shape[0], shape[1]
			wb := encode(t, typ, testData(rng, rows*cols))
			m, err := NewMatrix(typ, rows, cols, wb)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range []int{1, 2, 5, 9} {
				x := testData(rng, n*cols)
				want := make([]float32, n*rows)
				a := make([]byte, q8_KBytes*cols/qkK)
				rb, _ := typ.RowBytes(cols)
				for i := 0; i < n; i++ {
					quantizeQ8_K(x[i*cols:(i+1)*cols], a)
					for r := 0; r < rows; r++ {
						want[i*rows+r] = map[Type]func(w, a []byte) float32{Q3_K: dotQ3_KQ8_KGo, Q5_K: dotQ5_KQ8_KGo}[typ](wb[r*rb:(r+1)*rb], a)
					}
				}
				for _, set := range KernelSets() {
					if err := UseKernels(set); err != nil {
						t.Fatal(err)
					}
					y := make([]float32, n*rows)
					MatMul(nil, m, x, n, y, nil)
					for i := range y {
						if math.Float32bits(y[i]) != math.Float32bits(want[i]) {
							t.Fatalf("%v %dx%d n=%d set %s: output %d = %v, twin %v", typ, rows, cols, n, set, i, y[i], want[i])
						}
					}
				}
			}
		}
	}
}

// TestK35QuantizeNoPanic feeds the quantizers non-finite and extreme
// values: Quantize must return, and finite outputs stay finite.
func TestK35QuantizeNoPanic(t *testing.T) {
	for _, typ := range k35Types {
		for _, v := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), math.MaxFloat32, -math.MaxFloat32, 1e-40} {
			x := make([]float32, 256)
			for i := range x {
				x[i] = float32(i%7) - 3
			}
			x[17] = v
			b := make([]byte, typ.BlockBytes())
			if err := Quantize(typ, x, b); err != nil {
				t.Fatal(fmt.Errorf("%v %v: %w", typ, v, err))
			}
		}
	}
}
