// Package quant owns the tensor block formats of GGUF files (F32, F16, BF16,
// Q8_0, Q4_0, Q4_K, Q6_K): their sizes, dequantization, quantization, and the
// dot-product and matrix kernels the forward pass runs on them. It knows
// nothing of models. Every kernel has a pure-Go reference twin that stays
// compiled under its own name; faster per-architecture kernels are chosen once
// at start-up and tested against it.
package quant
