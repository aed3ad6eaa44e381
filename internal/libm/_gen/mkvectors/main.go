// Command mkvectors writes testdata/glibc.bin, internal/libm's regression
// vectors: float32 inputs where shade's earlier ways differ from glibc
// (float32 of math.Exp, math.Sin, math.Cos; quant.Exp32's former Taylor
// series; glibc's algorithm without fused multiply-adds), inputs of the
// ranges shade uses (softmax arguments, RoPE angles), random bit patterns
// and special values, each with glibc's expf, sinf and cosf as the C
// helper _gen/glibcref.c computes them. From the module root, on x86-64
// with AVX2+FMA:
//
//	gcc -O2 -fno-builtin -o /tmp/glibcref internal/libm/_gen/glibcref.c -lm
//	go run ./internal/libm/_gen/mkvectors -glibcref /tmp/glibcref
//
// The file is records of four little-endian uint32: x, expf(x), sinf(x),
// cosf(x).
package main

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"log"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"

	"shade/internal/libm"
)

func main() {
	ref := flag.String("glibcref", "/tmp/glibcref", "the built _gen/glibcref.c")
	out := flag.String("o", "internal/libm/testdata/glibc.bin", "output file")
	per := flag.Int("n", 700, "inputs per kind of difference")
	flag.Parse()

	rng := rand.New(rand.NewPCG(2026, 12))
	seen := map[uint32]bool{}
	var xs []uint32
	add := func(x float32) {
		b := math.Float32bits(x)
		if !seen[b] {
			seen[b] = true
			xs = append(xs, b)
		}
	}
	// Inputs where f (an earlier way) differs from glibc's (libm's port,
	// which the exhaustive test holds equal to glibc), drawn by gen.
	collect := func(what string, gen func() float32, f, g func(float32) float32) {
		n, tries := 0, 0
		for ; n < *per && tries < 1e7; tries++ {
			x := gen()
			if a, b := f(x), g(x); math.Float32bits(a) != math.Float32bits(b) && !seen[math.Float32bits(x)] {
				add(x)
				n++
			}
		}
		fmt.Printf("%-24s %4d differing of %d tried\n", what, n, tries)
	}
	sweep := func(what string, lo, hi, step uint64, f, g func(float32) float32) {
		n := 0
		for b := lo; b < hi && n < *per; b += step {
			x := math.Float32frombits(uint32(b))
			if a, b := f(x), g(x); math.Float32bits(a) != math.Float32bits(b) && !seen[math.Float32bits(x)] {
				add(x)
				n++
			}
		}
		fmt.Printf("%-24s %4d differing\n", what, n)
	}
	softmax := func() float32 { return -float32(rng.ExpFloat64() * 8) }
	expRange := func() float32 { return float32(rng.Float64()*192 - 104) }
	// RoPE angles: position · base^(-2i/d), positions to 128k.
	rope := func() float32 {
		pos := float32(rng.IntN(131072))
		return pos * float32(math.Pow(10000, -rng.Float64()))
	}
	anyAngle := func() float32 { return math.Float32frombits(rng.Uint32()) }
	mathExp := func(x float32) float32 { return float32(math.Exp(float64(x))) }
	mathSin := func(x float32) float32 { return float32(math.Sin(float64(x))) }
	mathCos := func(x float32) float32 { return float32(math.Cos(float64(x))) }

	collect("softmax args: math.Exp", softmax, mathExp, libm.Expf)
	collect("exp range: math.Exp", expRange, mathExp, libm.Expf)
	collect("softmax args: old Exp32", softmax, taylorExp32, libm.Expf)
	// Fusing seldom changes the float32 result (a few times in 10^7
	// inputs), so these sweep every input where it can, |x| ≥ 1 for expf
	// and 2^-12 ≤ |x| < 120 for sin and cos (beyond, fusing is the same).
	sweep("exp x ≥ 1, no FMA", 0x3f800000, 0x42b17218, 1, expfNoFMA, libm.Expf)
	sweep("exp x ≤ -1, no FMA", 0xbf800000, 0xc2cff1b5, 1, expfNoFMA, libm.Expf)
	collect("RoPE angles: math.Sin", rope, mathSin, libm.Sinf)
	collect("RoPE angles: math.Cos", rope, mathCos, libm.Cosf)
	sweep("sin |x|<120, no FMA", 0x39800000, 0x42f00000, 1, sinfNoFMA, libm.Sinf)
	sweep("cos |x|<120, no FMA", 0x39800000, 0x42f00000, 1, cosfNoFMA, libm.Cosf)
	collect("any float: math.Sin", anyAngle, mathSin, libm.Sinf)
	collect("any float: math.Cos", anyAngle, mathCos, libm.Cosf)
	for range 1500 {
		add(math.Float32frombits(rng.Uint32()))
	}
	for range 500 {
		add(rope())
		add(softmax())
	}
	// Special values and a few ulps either side of every bound glibc
	// compares: expf's 88, overflow, underflow and least-subnormal bounds,
	// sin/cos's 2^-126, 2^-12, π/4 and 120, and the subnormal range.
	for _, b := range []uint32{0, 1, 0x7fffff, 0x800000, 0x42b00000, 0x42b17217, 0xc2cff1b4, 0xc2ce8ecf,
		0x39800000, 0x3f490fdb, 0x42f00000, 0x7f7fffff, 0x7f800000, 0x7fc00000, 0x3f800000, 0x40490fdb, 0x3fc90fdb} {
		for d := uint32(0); d < 6; d++ {
			for _, s := range []uint32{0, 0x80000000} {
				add(math.Float32frombits((b + d) | s))
				add(math.Float32frombits((b - d) | s))
			}
		}
	}
	for _, b := range []uint32{0x7f800001, 0x7fbfffff, 0x7fc00001, 0x7fffffff, 0xff800001, 0xffc00000, 0xffffffff} {
		add(math.Float32frombits(b))
	}
	slices.Sort(xs)

	var in bytes.Buffer
	for _, x := range xs {
		binary.Write(&in, binary.LittleEndian, x)
	}
	cmd := exec.Command(*ref, "eval")
	cmd.Stdin = &in
	cmd.Stderr = os.Stderr
	res, err := cmd.Output()
	if err != nil {
		log.Fatal(err)
	}
	if len(res) != 12*len(xs) {
		log.Fatalf("glibcref gave %d bytes for %d inputs", len(res), len(xs))
	}
	var buf bytes.Buffer
	for i, x := range xs {
		binary.Write(&buf, binary.LittleEndian, x)
		buf.Write(res[12*i : 12*i+12])
	}
	if err := os.WriteFile(*out, buf.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d vectors, %d bytes\n", len(xs), buf.Len())
}
