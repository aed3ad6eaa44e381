// glibcref prints glibc's expf, sinf and cosf for float32 inputs, as raw
// little-endian uint32 bits on stdout, for internal/libm's exhaustive test
// and vector file. It is C, so the go tool never builds it (the _gen
// directory is ignored); on an x86-64 machine with AVX2+FMA (glibc then
// picks its FMA builds of these functions, as llama.cpp's reference gets):
//
//	gcc -O2 -fno-builtin -o /tmp/glibcref internal/libm/_gen/glibcref.c -lm
//	LIBM_GLIBCREF=/tmp/glibcref go test ./internal/libm -run Exhaustive -timeout 1h -v
//
// Modes:
//
//	glibcref all expf|sinf|cosf  every input 0..2^32-1 in order, one result each
//	glibcref check-sincosf       compares sincosf with sinf and cosf over
//	                             every input, prints the mismatch count
//	glibcref eval                reads uint32 inputs on stdin, writes
//	                             expf, sinf, cosf of each
//
// -fno-builtin keeps GCC from folding or replacing the calls: each is a
// call into libm.so.
#define _GNU_SOURCE
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static float f(uint32_t u) { float x; memcpy(&x, &u, 4); return x; }
static uint32_t u(float x) { uint32_t v; memcpy(&v, &x, 4); return v; }

// Called through pointers so no compiler can evaluate them itself.
static float (*volatile pexpf)(float) = expf;
static float (*volatile psinf)(float) = sinf;
static float (*volatile pcosf)(float) = cosf;
static void (*volatile psincosf)(float, float *, float *) = sincosf;

int main(int argc, char **argv) {
	if (argc == 3 && !strcmp(argv[1], "all")) {
		float (*fn)(float) = !strcmp(argv[2], "expf") ? pexpf : !strcmp(argv[2], "sinf") ? psinf : !strcmp(argv[2], "cosf") ? pcosf : 0;
		if (!fn) { fprintf(stderr, "unknown function %s\n", argv[2]); return 2; }
		enum { chunk = 1 << 20 };
		static uint32_t buf[chunk];
		for (uint64_t base = 0; base < (1ull << 32); base += chunk) {
			for (uint32_t i = 0; i < chunk; i++) buf[i] = u(fn(f((uint32_t)(base + i))));
			if (fwrite(buf, 4, chunk, stdout) != chunk) return 1;
		}
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "check-sincosf")) {
		uint64_t bad = 0;
		for (uint64_t i = 0; i < (1ull << 32); i++) {
			float x = f((uint32_t)i), s, c;
			psincosf(x, &s, &c);
			if (u(s) != u(psinf(x)) || u(c) != u(pcosf(x))) bad++;
		}
		printf("sincosf differs from sinf/cosf on %llu of 2^32 inputs\n", (unsigned long long)bad);
		return bad != 0;
	}
	if (argc == 2 && !strcmp(argv[1], "eval")) {
		uint32_t x;
		while (fread(&x, 4, 1, stdin) == 1) {
			uint32_t out[3] = {u(pexpf(f(x))), u(psinf(f(x))), u(pcosf(f(x)))};
			if (fwrite(out, 4, 3, stdout) != 3) return 1;
		}
		return 0;
	}
	fprintf(stderr, "usage: glibcref all expf|sinf|cosf | check-sincosf | eval\n");
	return 2;
}
