package libm

import (
	"bufio"
	"encoding/binary"
	"io"
	"math"
	"os"
	"os/exec"
	"testing"
)

// TestExhaustive compares Expf, Sinf, Cosf and Sincosf with glibc over all
// 2^32 float32 inputs, bit for bit (NaN payloads included). It needs the
// C helper in _gen/glibcref.c built (see its comment) and named by
// LIBM_GLIBCREF; it takes a few minutes per function.
func TestExhaustive(t *testing.T) {
	ref := os.Getenv("LIBM_GLIBCREF")
	if ref == "" {
		t.Skip("LIBM_GLIBCREF (the built _gen/glibcref.c) not set")
	}
	funcs := []struct {
		name string
		fn   func(float32) float32
	}{
		{"expf", Expf},
		{"sinf", Sinf},
		{"cosf", Cosf},
	}
	for _, f := range funcs {
		t.Run(f.name, func(t *testing.T) {
			cmd := exec.Command(ref, "all", f.name)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			r := bufio.NewReaderSize(out, 1<<22)
			buf := make([]byte, 1<<22)
			var bad uint64
			for base := uint64(0); base < 1<<32; base += uint64(len(buf) / 4) {
				if _, err := io.ReadFull(r, buf); err != nil {
					t.Fatalf("reading glibc's %s at %#x: %v", f.name, base, err)
				}
				for i := 0; i < len(buf)/4; i++ {
					xb := uint32(base) + uint32(i)
					want := binary.LittleEndian.Uint32(buf[4*i:])
					got := math.Float32bits(f.fn(math.Float32frombits(xb)))
					if got != want {
						if bad < 10 {
							t.Errorf("%s(%#08x = %g) = %#08x, glibc %#08x", f.name, xb, math.Float32frombits(xb), got, want)
						}
						bad++
					}
				}
			}
			if err := cmd.Wait(); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %d mismatches over 2^32 inputs", f.name, bad)
		})
	}
	t.Run("sincosf", func(t *testing.T) {
		var bad uint64
		for i := uint64(0); i < 1<<32; i++ {
			x := math.Float32frombits(uint32(i))
			s, c := Sincosf(x)
			if math.Float32bits(s) != math.Float32bits(Sinf(x)) || math.Float32bits(c) != math.Float32bits(Cosf(x)) {
				if bad < 10 {
					t.Errorf("Sincosf(%#08x) = %v, %v; Sinf, Cosf %v, %v", uint32(i), s, c, Sinf(x), Cosf(x))
				}
				bad++
			}
		}
		t.Logf("sincosf: %d mismatches with Sinf/Cosf over 2^32 inputs", bad)
	})
}
