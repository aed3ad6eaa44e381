package main

import (
	"bytes"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestEncodings checks each instruction form the kernels use against its
// encoding in the Arm architecture (the words below are what LLVM's
// assembler, llvm-mc -triple=aarch64 -mattr=+dotprod,+i8mm, gives for the
// same text), with operands that set every register field to a distinct
// value and every index bit.
func TestEncodings(t *testing.T) {
	for _, tc := range []struct {
		got  inst
		text string
		want uint32
	}{
		{sdot(1, 2, 3), "sdot v1.4s, v2.16b, v3.16b", 0x4e839441},
		{sdotElem(9, 21, 19, 3), "sdot v9.4s, v21.16b, v19.4b[3]", 0x4fb3eaa9},
		{smmla(13, 29, 21), "smmla v13.4s, v29.16b, v21.16b", 0x4e95a7ad},
		{smull8h(5, 0, 2), "smull v5.8h, v0.8b, v2.8b", 0x0e22c005},
		{smull28h(16, 1, 3), "smull2 v16.8h, v1.16b, v3.16b", 0x4e23c030},
		{saddlp4s(4, 5), "saddlp v4.4s, v5.8h", 0x4e6028a4},
		{sadalp4s(4, 16), "sadalp v4.4s, v16.8h", 0x4e606a04},
		{addv4s(4, 4), "addv s4, v4.4s", 0x4eb1b884},
		{and16b(20, 20, 24), "and v20.16b, v20.16b, v24.16b", 0x4e381e94},
		{eor16b(21, 21, 24), "eor v21.16b, v21.16b, v24.16b", 0x6e381eb5},
		{mov16b(11, 8), "mov v11.16b, v8.16b", 0x4ea81d0b},
		{movi16b(24, 0x80), "movi v24.16b, #0x80", 0x4f04e418},
		{movi16b(30, 0xf), "movi v30.16b, #0xf", 0x4f00e5fe},
		{v3(0x6e208400, "sub", "16b", 1, 1, 31), "sub v1.16b, v1.16b, v31.16b", 0x6e3f8421},
		{ushr16b(20, 20, 4), "ushr v20.16b, v20.16b, #4", 0x6f0c0694},
		{dup4s(9, 26, 3), "dup v9.4s, v26.s[3]", 0x4e1c0749},
		{fabs4s(23, 7), "fabs v23.4s, v7.4s", 0x4ea0f8f7},
		{fmax4s(16, 16, 20), "fmax v16.4s, v16.4s, v20.4s", 0x4e34f610},
		{fmaxv4s(16, 16), "fmaxv s16, v16.4s", 0x6e30fa10},
		{fcvtns4s(7, 7), "fcvtns v7.4s, v7.4s", 0x4e21a8e7},
		{fcvtl4s(27, 31), "fcvtl v27.4s, v31.4h", 0x0e217bfb},
		{fcvtl24s(28, 31), "fcvtl2 v28.4s, v31.8h", 0x4e217bfc},
		{scvtf4s(29, 15), "scvtf v29.4s, v15.4s", 0x4e21d9fd},
		{scvtfS(4, 4), "scvtf s4, s4", 0x5e21d884},
		{fmulElem4s(30, 28, 25, 2), "fmul v30.4s, v28.4s, v25.s[2]", 0x4f999b9e},
		{fmul4s(16, 30, 21), "fmul v16.4s, v30.4s, v21.4s", 0x6e35dfd0},
		{fmla4s(7, 31, 16), "fmla v7.4s, v31.4s, v16.4s", 0x4e30cfe7},
		{fmulS(5, 5, 6), "fmul s5, s5, s6", 0x1e2608a5},
		{fdivS(18, 26, 16), "fdiv s18, s26, s16", 0x1e301b52},
		{fmaddS(7, 4, 5, 7), "fmadd s7, s4, s5, s7", 0x1f051c87},
		{fcvtSH(5, 5), "fcvt s5, h5", 0x1ee240a5},
		{fcvtHS(19, 17), "fcvt h19, s17", 0x1e23c233},
		{fmovSW(26, 4), "fmov s26, w4", 0x1e27009a},
		{fmovWS(9, 18), "fmov w9, s18", 0x1e260249},
		{zip1s(24, 22, 29), "zip1 v24.4s, v22.4s, v29.4s", 0x4e9d3ad8},
		{zip2s(25, 22, 29), "zip2 v25.4s, v22.4s, v29.4s", 0x4e9d7ad9},
		{zip1d(20, 16, 17), "zip1 v20.2d, v16.2d, v17.2d", 0x4ed13a14},
		{zip2d(21, 18, 19), "zip2 v21.2d, v18.2d, v19.2d", 0x4ed37a55},
		{uzp1s(17, 6, 7), "uzp1 v17.4s, v6.4s, v7.4s", 0x4e8718d1},
		{uzp2s(8, 26, 26), "uzp2 v8.4s, v26.4s, v26.4s", 0x4e9a5b48},
		{xtn4h(16, 0), "xtn v16.4h, v0.4s", 0x0e612810},
		{xtn28h(16, 1), "xtn2 v16.8h, v1.4s", 0x4e612830},
		{xtn8b(20, 16), "xtn v20.8b, v16.8h", 0x0e212a14},
		{xtn216b(21, 19), "xtn2 v21.16b, v19.8h", 0x4e212a75},
	} {
		if tc.got.text != tc.text || tc.got.word != tc.want {
			t.Errorf("%s = %#08x, want %q = %#08x", tc.got.text, tc.got.word, tc.text, tc.want)
		}
	}
}

// TestGeneratedWords assembles the comment of every WORD in the generated
// file with llvm-mc, when it is installed, and compares the encodings:
// every operand combination the kernels use, not only the table above.
func TestGeneratedWords(t *testing.T) {
	mc, err := exec.LookPath("llvm-mc")
	if err != nil {
		t.Skip("llvm-mc not installed")
	}
	re := regexp.MustCompile(`WORD \$0x([0-9a-f]{8}) // (.*)`)
	words := map[string]uint32{}
	var texts []string
	for _, m := range re.FindAllStringSubmatch(generate(), -1) {
		w, _ := strconv.ParseUint(m[1], 16, 32)
		if _, ok := words[m[2]]; !ok {
			texts = append(texts, m[2])
		}
		words[m[2]] = uint32(w)
	}
	cmd := exec.Command(mc, "-triple=aarch64", "-mattr=+dotprod,+i8mm", "-show-encoding")
	cmd.Stdin = strings.NewReader(strings.Join(texts, "\n") + "\n")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("llvm-mc: %v\n%s", err, out.String())
	}
	enc := regexp.MustCompile(`encoding: \[0x(..),0x(..),0x(..),0x(..)\]`)
	ms := enc.FindAllStringSubmatch(out.String(), -1)
	if len(ms) != len(texts) {
		t.Fatalf("llvm-mc encoded %d of %d instructions:\n%s", len(ms), len(texts), out.String())
	}
	for i, m := range ms {
		w, _ := strconv.ParseUint(m[4]+m[3]+m[2]+m[1], 16, 32)
		if uint32(w) != words[texts[i]] {
			t.Errorf("%s: generated %#08x, llvm-mc %#08x", texts[i], words[texts[i]], w)
		}
	}
	t.Logf("%d distinct instructions checked", len(texts))
}
