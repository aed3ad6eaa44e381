//go:build arm64 && !noasm && gc

package quant

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/cpu"
)

// TestArchKernelsInUse checks that the sets follow the CPU's features
// (under qemu, -cpu cortex-a53 has no dotprod and cortex-a76 no i8mm) and
// that the best is the default.
func TestArchKernelsInUse(t *testing.T) {
	want := []string{"generic"}
	if haveASIMD {
		want = append(want, "asimd")
	}
	if haveDotProd {
		want = append(want, "dotprod")
	}
	if haveI8MM {
		want = append(want, "i8mm")
	}
	if got := strings.Join(KernelSets(), ","); got != strings.Join(want, ",") {
		t.Errorf("KernelSets() = %s, want %s (CPU %v)", got, strings.Join(want, ","), fmt.Sprintf("%+v", cpu.ARM64))
	}
	if os.Getenv(KernelsEnv) == "" && !strings.HasPrefix(Kernels(), want[len(want)-1]) {
		t.Errorf("Kernels() = %q, want the best set %s", Kernels(), want[len(want)-1])
	}
	t.Logf("kernel sets %v, CPU %v", KernelSets(), fmt.Sprintf("%+v", cpu.ARM64))
}

// armHalves are f16 block scales: ones, powers of two, odd mantissas,
// negatives and a subnormal.
var armHalves = []uint16{0x3c00, 0xb800, 0x2e66, 0x1400, 0x5640, 0x0001, 0x8123}

// armWeights returns nb Q4_0 or Q8_0 blocks of random or extreme bytes
// (every nibble 0 or 15, int8 -128 or 127) with finite f16 scales.
func armWeights(rng *rand.Rand, typ Type, nb int, mode int) []byte {
	bs := typ.BlockBytes()
	b := make([]byte, nb*bs)
	for i := range b {
		switch mode {
		case 0:
			b[i] = byte(rng.Uint32())
		case 1:
			b[i] = 0x80
		case 2:
			b[i] = 0x7f
		default:
			b[i] = 0xff
		}
	}
	for i := 0; i < nb; i++ {
		binary.LittleEndian.PutUint16(b[i*bs:], armHalves[rng.IntN(len(armHalves))])
	}
	return b
}

// armActs returns nb Q8_0 activation blocks within ±127, random or at the
// ends, with finite scales.
func armActs(rng *rand.Rand, nb int, mode int) []byte {
	b := make([]byte, nb*q8_0Bytes)
	for i := 0; i < nb; i++ {
		blk := b[i*q8_0Bytes : (i+1)*q8_0Bytes]
		binary.LittleEndian.PutUint16(blk, armHalves[rng.IntN(len(armHalves))])
		for j := 2; j < q8_0Bytes; j++ {
			switch mode {
			case 0:
				blk[j] = byte(int8(rng.IntN(255) - 127))
			case 1:
				blk[j] = 0x81 // -127
			default:
				blk[j] = 127
			}
		}
	}
	return b
}

// TestAsmDotsMatchGo holds every arm64 dot kernel bit for bit against its
// Go twin (as gc compiles it for arm64), on quantized data and on raw
// extreme blocks, for 1..17 and 255..257 blocks at misaligned offsets.
func TestAsmDotsMatchGo(t *testing.T) {
	if !haveASIMD {
		t.Skip("no ASIMD")
	}
	type kern struct {
		name string
		typ  Type
		asm  func(w, a []byte) float32
		twin func(w, a []byte) float32
		ok   bool
	}
	kerns := []kern{
		{"Q8_0 asimd", Q8_0, dotQ8_0Q8_0_arm64ASIMD, dotQ8_0Q8_0Go, true},
		{"Q4_0 asimd", Q4_0, dotQ4_0Q8_0_arm64ASIMD, dotQ4_0Q8_0Go, true},
		{"Q8_0 sdot", Q8_0, dotQ8_0Q8_0_arm64SDOT, dotQ8_0Q8_0Go, haveDotProd},
		{"Q4_0 sdot", Q4_0, dotQ4_0Q8_0_arm64SDOT, dotQ4_0Q8_0Go, haveDotProd},
	}
	rng := rand.New(rand.NewPCG(51, 52))
	sizes := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 255, 256, 257}
	for _, kn := range kerns {
		if !kn.ok {
			continue
		}
		for _, nb := range sizes {
			for mode := 0; mode < 5; mode++ {
				var w, a []byte
				if mode == 4 { // quantized realistic data
					x := testData(rng, nb*32)
					w = make([]byte, nb*kn.typ.BlockBytes())
					if err := Quantize(kn.typ, x, w); err != nil {
						t.Fatal(err)
					}
					a = make([]byte, nb*q8_0Bytes)
					quantizeQ8_0(testData(rng, nb*32), a)
				} else {
					w, a = armWeights(rng, kn.typ, nb, mode), armActs(rng, nb, mode%3)
				}
				off := rng.IntN(7)
				w = misaligned(w, off)
				a = misaligned(a, 6-off)
				got, want := kn.asm(w, a), kn.twin(w, a)
				if math.Float32bits(got) != math.Float32bits(want) {
					t.Fatalf("%s, %d blocks, mode %d: %v (%#x), Go %v (%#x)", kn.name, nb, mode, got, math.Float32bits(got), want, math.Float32bits(want))
				}
			}
		}
	}
}

// TestAsmQuantizeQ8_0 holds the arm64 quantizer byte for byte against
// quantizeQ8_0Acts on ordinary blocks and on ties, zeros, subnormals, blocks
// for which 127/amax overflows, huge, infinite and NaN values and random bit
// patterns, and checks it writes nothing past the blocks.
func TestAsmQuantizeQ8_0(t *testing.T) {
	if !haveASIMD {
		t.Skip("no ASIMD")
	}
	rng := rand.New(rand.NewPCG(53, 54))
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
		func(b []float32) { // subnormals: d rounds to 0 or 1/d overflows
			for i := range b {
				b[i] = math.Float32frombits(uint32(rng.IntN(200)))
			}
		},
		func(b []float32) { // tiny: d subnormal, 1/d overflows or nearly
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
		for trial := 0; trial < 6; trial++ {
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
			quantizeQ8_0_arm64(x, got[:size])
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
