// Package libm computes the float32 exponential, sine and cosine exactly as
// glibc 2.36 does on x86-64 CPUs with FMA, bit for bit, in pure Go.
//
// llama.cpp's CPU reference, which shade's logits are held to, calls glibc's
// expf (the flash-attention softmax) and sinf/cosf (RoPE's angles); on an
// AVX2+FMA machine glibc's ifunc picks builds of the generic C
// (sysdeps/ieee754/flt-32, ARM's optimized-routines algorithms) compiled
// with -mfma, where GCC fuses every a*b+c into one rounding. float32 of
// math.Exp or math.Cos rounds differently for about 1% of inputs, and so
// does the same algorithm without fused multiply-adds, so shade has its own
// port: the same float64 steps, math.FMA exactly where glibc's FMA build
// fuses (read off its disassembly and confirmed over all 2^32 inputs, see
// docs/correctness.md), and every other product kept apart from any
// addition, so that no compiler (arm64's gc fuses x*y+z) fuses it.
//
// Special values are glibc's too, NaN payloads included: NaN in gives the
// quieted NaN out, sin and cos of ±Inf give x86's default NaN (0xffc00000).
// errno and floating-point exception flags are not modeled.
package libm
