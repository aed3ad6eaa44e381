//go:build amd64 && !noasm && gc

package quant

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// legacyAsm pairs each legacy-type kernel of legacy_amd64.s with its twin
// and its entry in a kernel set.
var legacyAsm = []struct {
	w, act    Type
	asm, twin func(w, a []byte) float32
	entry     func(s *kernelSet) func(w, a []byte) float32
}{
	{Q4_1, Q8_1, dotQ4_1Q8_1_amd64, dotQ4_1Q8_1Go, func(s *kernelSet) func(w, a []byte) float32 { return s.dotQ4_1Q8_1 }},
	{Q5_0, Q8_0, dotQ5_0Q8_0_amd64, dotQ5_0Q8_0Go, func(s *kernelSet) func(w, a []byte) float32 { return s.dotQ5_0Q8_0 }},
	{Q5_1, Q8_1, dotQ5_1Q8_1_amd64, dotQ5_1Q8_1Go, func(s *kernelSet) func(w, a []byte) float32 { return s.dotQ5_1Q8_1 }},
	{IQ4_NL, Q8_0, dotIQ4_NLQ8_0_amd64, dotIQ4_NLQ8_0Go, func(s *kernelSet) func(w, a []byte) float32 { return s.dotIQ4_NLQ8_0 }},
}

// legacyHalves are finite f16 scales, offsets and sums for raw blocks: 1
// (integer sums), negatives, the largest half, subnormals and -0.
var legacyHalves = []uint16{0x3c00, 0xb800, 0x2e66, 0x1400, 0x5640, 0x7bff, 0xfbff, 0x0001, 0x8123, 0x8000}

// legacyRaw returns nb blocks of typ (a weight type, Q8_0 or Q8_1) whose
// quant bytes are random or all one byte (every byte value is valid for
// these kernels, activations at -128 included) and whose f16 fields are
// drawn from legacyHalves.
func legacyRaw(rng *rand.Rand, typ Type, nb int, mode string) []byte {
	bs := typ.BlockBytes()
	b := make([]byte, nb*bs)
	fillMode(rng, b, mode)
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

// TestLegacyAsmMatchesGo holds the legacy-type kernels, as every amd64 set
// this CPU runs holds them, to their Go twins bit for bit: quantized data,
// random and extreme raw blocks, 0..17 and 255..257 blocks at misaligned
// offsets.
func TestLegacyAsmMatchesGo(t *testing.T) {
	if !haveAVX2FMA {
		t.Skip("CPU lacks AVX2, FMA or F16C")
	}
	if len(archSets) == 0 {
		t.Fatal("AVX2 but no amd64 kernel set")
	}
	rng := rand.New(rand.NewPCG(61, 62))
	var counts []int
	for nb := 0; nb <= 17; nb++ {
		counts = append(counts, nb)
	}
	counts = append(counts, 255, 256, 257)
	modes := []string{"quantized", "random", "zero", "0xff", "0x80", "0x7f", "max-products"}
	for _, set := range archSets {
		for _, d := range legacyAsm {
			kern := d.entry(&set)
			if kern == nil {
				t.Fatalf("%s: no %v kernel", set.name, d.w)
			}
			for _, mode := range modes {
				for _, nb := range counts {
					off := rng.IntN(8)
					var w, a []byte
					if mode == "quantized" {
						n := 32 * nb
						w = encode(t, d.w, testData(rng, n))
						a = legacyAct(t, d.act, testData(rng, n))
					} else {
						w = legacyRaw(rng, d.w, nb, mode)
						amode := mode
						if mode == "max-products" {
							amode = "0x80" // -128 against the largest weights
						}
						a = legacyRaw(rng, d.act, nb, amode)
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
							t.Fatalf("%s %v, %s, %d blocks, offset %d: asm %v, Go %v; block %d alone: asm %v, Go %v",
								set.name, d.w, mode, nb, off, got, want, b, g, x)
						}
					}
					t.Fatalf("%s %v, %s, %d blocks, offset %d: asm %v, Go %v (every block alone agrees)",
						set.name, d.w, mode, nb, off, got, want)
				}
			}
		}
	}
}

// BenchmarkLegacyDots times each kernel against its twin on one row of a
// 4096-wide matrix (in L1/L2).
func BenchmarkLegacyDots(b *testing.B) {
	if !haveAVX2FMA {
		b.Skip("CPU lacks AVX2, FMA or F16C")
	}
	rng := rand.New(rand.NewPCG(63, 64))
	const n = 4096
	for _, d := range legacyAsm {
		w := encode(b, d.w, testData(rng, n))
		a := legacyAct(&testing.T{}, d.act, testData(rng, n))
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
}
