package quant

// DotF32 returns Σ a[i]*b[i] over len(a) values (b must be at least as long).
func DotF32(a, b []float32) float32 { return k.dotF32(a, b) }

// dotF32FloatsGo sums in four float32 accumulators, like the SIMD lanes of
// ggml_vec_dot_f32, which also keeps the loop short of dependencies.
func dotF32FloatsGo(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}
