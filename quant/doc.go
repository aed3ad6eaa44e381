// Package quant owns the tensor block formats of GGUF files (F32, F16, BF16,
// Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K,
// IQ4_XS): their sizes, dequantization, quantization, and the
// dot-product and matrix kernels the forward pass runs on them, plus the
// vector kernels between them (attention over an F16 cache and its online
// softmax, the SwiGLU activation). It knows nothing of models. Every kernel has a pure-Go reference twin that stays
// compiled under its own name; faster per-architecture kernels are chosen once
// at start-up and tested against it.
//
// The block layouts are ggml's, byte for byte; where the CPU has kernels for
// it (AVX2, AVX-VNNI or AVX-512 VNNI on amd64), Q4_0 and Q8_0 matrices are also
// repacked into row panels (panel.go), computed with the same bits: every
// Q4_0 and Q8_0 output is defined once, by gemmGo (gemm.go), whatever the
// kernel, layout, batch size or thread split.
//
// Kernels come in named sets (dispatch.go): "generic" (the pure-Go
// references) and those this CPU can run, worst to best ("avx2",
// "avxvnni", "avx512" on amd64). The best is used unless UseKernels or the environment variable
// SHADE_KERNELS names another; an invalid SHADE_KERNELS keeps the best and
// is reported by KernelsEnvError. KernelSets lists them and Kernels names
// the one in use. Matrix products follow
// llama.cpp's CPU backend: activations are first converted to the type each
// weight type's dot product pairs with (Q8_0 for Q4_0, Q8_0, Q5_0 and
// IQ4_NL weights, Q8_1 for Q4_1 and Q5_1, Q8_K for the K-quants and
// IQ4_XS, F16 for F16, BF16 for BF16), integer products are summed
// exactly within a block and scaled once per block in float32, so results
// land next to llama.cpp's.
//
// The entry points are Dequantize and Quantize for whole buffers, and Matrix
// with MatMul for the forward pass:
//
//	m, err := quant.NewMatrix(quant.Q4_K, rows, cols, data) // data from the mmap'd file
//	quant.MatMul(pool, m, x, n, y, &scratch)                // y[i*rows+r] = m row r · x row i
//
// MatMulShared does the products of several matrices with one input (a
// layer's query, key and value) in one pass, with MatMul's bits.
package quant
