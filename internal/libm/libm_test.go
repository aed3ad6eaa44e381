package libm

import (
	"encoding/binary"
	"math"
	"os"
	"testing"
)

// TestGlibcVectors checks every vector of testdata/glibc.bin (written by
// _gen/mkvectors with glibc 2.36's FMA builds): inputs where float32 of
// math.Exp/Sin/Cos, quant.Exp32's former series or an unfused evaluation
// differ from glibc, softmax arguments and RoPE angles, random and special
// inputs, with glibc's expf, sinf and cosf bits, NaN payloads included.
func TestGlibcVectors(t *testing.T) {
	data, err := os.ReadFile("testdata/glibc.bin")
	if err != nil {
		t.Fatal(err)
	}
	if len(data)%16 != 0 || len(data) == 0 {
		t.Fatalf("testdata/glibc.bin: %d bytes, not whole records of 16", len(data))
	}
	var bad, mathDiff int
	for i := 0; i < len(data); i += 16 {
		xb := binary.LittleEndian.Uint32(data[i:])
		x := math.Float32frombits(xb)
		want := [3]uint32{binary.LittleEndian.Uint32(data[i+4:]), binary.LittleEndian.Uint32(data[i+8:]), binary.LittleEndian.Uint32(data[i+12:])}
		s, c := Sincosf(x)
		for _, got := range [...]struct {
			name string
			v    float32
			want uint32
		}{{"Expf", Expf(x), want[0]}, {"Sinf", Sinf(x), want[1]}, {"Cosf", Cosf(x), want[2]}, {"Sincosf's sin", s, want[1]}, {"Sincosf's cos", c, want[2]}} {
			if math.Float32bits(got.v) != got.want {
				if bad++; bad <= 20 {
					t.Errorf("%s(%#08x = %g) = %#08x, glibc %#08x", got.name, xb, x, math.Float32bits(got.v), got.want)
				}
			}
		}
		if math.Float32bits(float32(math.Cos(float64(x)))) != want[2] && !math.IsNaN(float64(x)) {
			mathDiff++
		}
	}
	if bad > 0 {
		t.Fatalf("%d mismatches", bad)
	}
	// The file must keep what it is for: inputs that tell glibc's rounding
	// from float64 math's.
	if mathDiff < 100 {
		t.Errorf("only %d vectors where float32(math.Cos) differs from glibc", mathDiff)
	}
	t.Logf("%d vectors, %d where float32(math.Cos) differs", len(data)/16, mathDiff)
}

// TestSpecial pins glibc's special values.
func TestSpecial(t *testing.T) {
	const nan, qnan = 0xffc00000, 0x7fc00001
	for _, tc := range []struct {
		x             uint32
		exp, sin, cos uint32
	}{
		{0x00000000, 0x3f800000, 0x00000000, 0x3f800000},
		{0x80000000, 0x3f800000, 0x80000000, 0x3f800000},
		{0x00000001, 0x3f800000, 0x00000001, 0x3f800000}, // least subnormal
		{0x7f800000, 0x7f800000, nan, nan},               // +Inf
		{0xff800000, 0x00000000, nan, nan},               // -Inf
		{0x7f800001, qnan, qnan, qnan},                   // a signalling NaN comes back quiet
		{0xffc00000, nan, nan, nan},
	} {
		x := math.Float32frombits(tc.x)
		for _, f := range []struct {
			name string
			got  float32
			want uint32
		}{{"Expf", Expf(x), tc.exp}, {"Sinf", Sinf(x), tc.sin}, {"Cosf", Cosf(x), tc.cos}} {
			if math.Float32bits(f.got) != f.want {
				t.Errorf("%s(%#08x) = %#08x, want %#08x", f.name, tc.x, math.Float32bits(f.got), f.want)
			}
		}
	}
}

// FuzzLibm: no input panics, NaN gives NaN, Inf gives NaN for sin and cos,
// results stay in range, and Sincosf is Sinf and Cosf.
func FuzzLibm(f *testing.F) {
	for _, b := range []uint32{0, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0x42b17218, 0xc2cff1b4, 0x42f00000, 0x7f7fffff, 0x3f490fdb} {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b uint32) {
		x := math.Float32frombits(b)
		e, s, c := Expf(x), Sinf(x), Cosf(x)
		ss, cc := Sincosf(x)
		if math.Float32bits(ss) != math.Float32bits(s) || math.Float32bits(cc) != math.Float32bits(c) {
			t.Fatalf("Sincosf(%#08x) = %v, %v; Sinf, Cosf %v, %v", b, ss, cc, s, c)
		}
		isNaN := func(v float32) bool { return v != v }
		switch {
		case isNaN(x):
			if !isNaN(e) || !isNaN(s) || !isNaN(c) {
				t.Fatalf("NaN %#08x gives %v, %v, %v", b, e, s, c)
			}
		case math.IsInf(float64(x), 0):
			if !isNaN(s) || !isNaN(c) {
				t.Fatalf("sin, cos of %v: %v, %v", x, s, c)
			}
		default:
			if isNaN(e) || e < 0 || isNaN(s) || isNaN(c) || s < -1 || s > 1 || c < -1 || c > 1 {
				t.Fatalf("%#08x: exp %v sin %v cos %v", b, e, s, c)
			}
		}
	})
}
