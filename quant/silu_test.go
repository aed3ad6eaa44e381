package quant

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
)

// siluEdges are activations at the exponential's edges: signed zeros,
// |n| = 126 and 127 (x near ±87.3 and ±88.0), overflow of e^x (88.38), the
// underflow to 0 (−103.97), |n| = 192 (±133.1), huge values, infinities,
// NaN, and subnormals.
var siluEdges = []float32{
	0, float32(math.Copysign(0, -1)), 1, -1, 87.3, -87.3, 87.4, -87.4,
	88, -88, 88.03, -88.03, 88.38, -88.38, 88.4, -88.4, 89, -89, 100, -100,
	103.97, -103.97, 104, -104, 133, -133, 133.5, -133.5, 1e30, -1e30,
	3e38, -3e38, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
	1e-30, -1e-30, 1e-40, -1e-40,
}

// siluInputs are activations of every magnitude a feed-forward block sees,
// then siluEdges.
func siluInputs(rng *rand.Rand, n int) []float32 {
	x := append([]float32(nil), siluEdges...)
	for len(x) < n {
		switch rng.IntN(4) {
		case 0:
			x = append(x, float32(rng.NormFloat64()))
		case 1:
			x = append(x, float32(rng.NormFloat64()*20))
		case 2:
			x = append(x, float32(rng.Float64()*300-150))
		default:
			x = append(x, float32(math.Ldexp(rng.Float64()-0.5, rng.IntN(20)-10)))
		}
	}
	return x
}

// siluGates are u values: mostly normal, some NaN and infinite.
func siluGates(rng *rand.Rand, n int) []float32 {
	u := make([]float32, n)
	for i := range u {
		switch rng.IntN(40) {
		case 0:
			u[i] = float32(math.NaN())
		case 1:
			u[i] = float32(math.Inf(1 - 2*rng.IntN(2)))
		default:
			u[i] = float32(rng.NormFloat64())
		}
	}
	return u
}

// bitsEq compares floats bit for bit, NaN payloads included.
func bitsEq(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }

// siluRef is SiLUMul over whole rows of length row, by the definition: the
// vector formula on each row's whole groups of eight, the scalar one after.
func siluRef(h, u []float32, row int) {
	vec := row &^ 7
	for r := 0; r < len(h); r += row {
		siluMulGo(h[r:r+vec], u[r:r+vec])
		siluMulTail(h[r+vec:r+row], u[r+vec:r+row])
	}
}

// forSets runs f with every kernel set this CPU has in use.
func forSets(t *testing.T, f func(t *testing.T)) {
	saved := k
	defer func() { k = saved }()
	for _, name := range KernelSets() {
		if err := UseKernels(name); err != nil {
			t.Fatal(err)
		}
		t.Run(name, f)
	}
}

// TestSiLUMulKernels: every kernel set's vector kernel gives siluMulGo's
// bits at every length to 40 and a long one, over every kind of input.
func TestSiLUMulKernels(t *testing.T) {
	forSets(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(5, 6))
		for _, n := range append([]int{1000, 1003}, func() []int {
			var ns []int
			for n := 0; n <= 40; n++ {
				ns = append(ns, n)
			}
			return ns
		}()...) {
			for range 4 {
				h := siluInputs(rng, max(n, len(siluEdges)))
				rng.Shuffle(len(h), func(i, j int) { h[i], h[j] = h[j], h[i] })
				h = h[:n]
				u := siluGates(rng, n)
				want := append([]float32(nil), h...)
				siluMulGo(want, u)
				got := append([]float32(nil), h...)
				k.siluMul(got, u)
				for i := range got {
					if !bitsEq(got[i], want[i]) {
						t.Fatalf("n=%d: silu(%g)·%g = %g (%#x), Go twin %g (%#x)", n, h[i], u[i], got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
					}
				}
			}
		}
	})
}

// TestSiLUMulRows: SiLUMul over a batch of rows gives siluRef's bits
// however the batch is cut into calls (mid-row, mid-group), for row
// lengths with and without a tail, on every kernel set.
func TestSiLUMulRows(t *testing.T) {
	forSets(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(9, 10))
		for _, row := range []int{1, 3, 7, 8, 9, 15, 16, 17, 23, 64, 69, 100, 1024, 1027} {
			for _, rows := range []int{1, 2, 5} {
				n := row * rows
				h := siluInputs(rng, max(n, len(siluEdges)))
				rng.Shuffle(len(h), func(i, j int) { h[i], h[j] = h[j], h[i] })
				h = h[:n]
				u := siluGates(rng, n)
				want := append([]float32(nil), h...)
				siluRef(want, u, row)
				for trial := range 6 {
					got := append([]float32(nil), h...)
					for lo := 0; lo < n; {
						hi := n
						if trial > 0 {
							hi = min(n, lo+1+rng.IntN(2*row+9))
						}
						SiLUMul(got[lo:hi], u[lo:hi], row, lo%row)
						lo = hi
					}
					for i := range got {
						if !bitsEq(got[i], want[i]) {
							t.Fatalf("row %d, %d rows, trial %d, i=%d: silu(%g)·%g = %g, reference %g", row, rows, trial, i, h[i], u[i], got[i], want[i])
						}
					}
				}
			}
		}
	})
}

// TestSiLUMulPinned holds the vector formula to values of llama.cpp's
// haswell library (ggml_vec_swiglu_f32 of libggml-cpu-haswell.so, called
// from C on groups of eight with g = 1): both branches of its exponential,
// overflow, underflow, the huge and infinite inputs. (The default NaN of
// -Inf/+Inf is x86's; on arm64 the twin gives arm64's.)
func TestSiLUMulPinned(t *testing.T) {
	for _, c := range []struct{ x, want uint32 }{
		{0x3f800000, 0x3f3b26a8}, // 1
		{0xbf800000, 0xbe89b2b0}, // -1
		{0x40a00000, 0x409eeddc}, // 5
		{0xc0a00000, 0xbd0911d1}, // -5
		{0x42ae0000, 0x42ae0000}, // 87: e^-87 vanishes beside 1
		{0x42b00000, 0x42b00000}, // 88: n = -127, s1·s2
		{0x42b0c28f, 0x42b0c28f}, // 88.38
		{0x7149f2ca, 0x7149f2ca}, // 1e30: |n| > 192, s1·s1 = 0
		{0x7f800000, 0x7f800000}, // +Inf
		{0xc2ae0000, 0x83f39e20}, // -87: n = 126
		{0xc2af0000, 0x83949c5e}, // -87.5: n = 127, s1·s2
		{0xc2af3333, 0x83869f5b}, // -87.6
		{0xc2b00000, 0x83354ddc}, // -88
		{0xc2b0c28f, 0x82f90b98}, // -88.38, the largest e^x short of +Inf
		{0xc2b40000, 0x80000000}, // -90: e^90 = +Inf
		{0xc3060000, 0x80000000}, // -134: |n| > 192, s1·s1 = +Inf
		{0xf149f2ca, 0x80000000}, // -1e30
		{0xff800000, 0xffc00000}, // -Inf: -Inf/+Inf, x86's default NaN
		{0x80000000, 0x80000000}, // -0
		{0x00000001, 0x00000000}, // the smallest subnormal
		{0x7fc00000, 0x7fc00000}, // NaN
	} {
		h, u := []float32{math.Float32frombits(c.x)}, []float32{1}
		siluMulGo(h, u)
		got := math.Float32bits(h[0])
		if c.want == 0xffc00000 && runtime.GOARCH != "amd64" {
			c.want = 0x7fc00000
		}
		if got != c.want {
			t.Errorf("silu(%g) = %#08x (%g), llama.cpp %#08x (%g)", math.Float32frombits(c.x), got, h[0], c.want, math.Float32frombits(c.want))
		}
	}
}

// TestExpAVX2Accuracy holds expAVX2 within 2 ulp of e^x on the normal
// range, and exact at 0 and the overflow and underflow ends; and silu
// within 4 ulp of its float64 value.
func TestExpAVX2Accuracy(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for range 200000 {
		x := float32(rng.Float64()*175 - 87)
		got, want := float64(expAVX2(x)), math.Exp(float64(x))
		if ulps := math.Abs(got-want) / ulp32(want); ulps > 2 {
			t.Fatalf("expAVX2(%g) = %g, e^x = %g: %.1f ulp", x, got, want, ulps)
		}
	}
	for x, want := range map[float32]float32{0: 1, 89: float32(math.Inf(1)), 1e30: float32(math.Inf(1)), -104: 0, -1e30: 0} {
		if got := expAVX2(x); !bitsEq(got, want) {
			t.Errorf("expAVX2(%g) = %g, want %g", x, got, want)
		}
	}
	h := siluInputs(rng, 100000)[len(siluEdges):]
	u := make([]float32, len(h))
	for i := range u {
		u[i] = 1
	}
	want := make([]float64, len(h))
	for i, g := range h {
		want[i] = float64(g) / (1 + math.Exp(-float64(g)))
	}
	h0 := append([]float32(nil), h...)
	siluMulGo(h, u)
	for i, w := range want {
		if math.Exp(-float64(h0[i])) > math.MaxFloat32 {
			// e^-h overflows to +Inf, and h/+Inf is 0 where silu is
			// below 6e-37 in magnitude (llama.cpp's too).
			if h[i] != 0 || math.Abs(w) > 6e-37 {
				t.Fatalf("silu(%g) = %g, want %g", h0[i], h[i], w)
			}
			continue
		}
		if ulps := math.Abs(float64(h[i])-w) / ulp32(w); ulps > 4 {
			t.Fatalf("silu(%g) = %g, want %g: %.1f ulp", h0[i], h[i], w, ulps)
		}
	}
}

// ulp32 is the spacing of float32 values near x.
func ulp32(x float64) float64 {
	f := float32(math.Abs(x))
	return float64(math.Float32frombits(math.Float32bits(f)+1) - f)
}

func TestSiLUMulPanics(t *testing.T) {
	for _, c := range [][2]int{{0, 0}, {8, -1}, {8, 8}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("row %d, pos %d: no panic", c[0], c[1])
				}
			}()
			SiLUMul(make([]float32, 4), make([]float32, 4), c[0], c[1])
		}()
	}
}

func BenchmarkSiLUMul(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	h := make([]float32, 8192)
	for i := range h {
		h[i] = float32(rng.NormFloat64() * 3)
	}
	u := make([]float32, len(h))
	w := make([]float32, len(h))
	b.SetBytes(int64(8 * len(h)))
	for b.Loop() {
		copy(w, h)
		SiLUMul(w, u, len(w), 0)
	}
}
