package main

import "testing"

// TestEncodings checks each instruction form against its encoding, with
// operands that set distinct register fields. The words of the forms
// quant/_gen/arm64 also uses are its tests' (from LLVM's assembler); those
// of cmtst, tbl, fadd and movi #0x10 were worked out from the field
// layouts of the Arm Architecture Reference Manual, and the kernels' tests
// under qemu check them in use; those of addp, the vector fadd and scvtf,
// fmla by element, ext, faddp and fmadd are llvm-mc's (-triple=aarch64).
func TestEncodings(t *testing.T) {
	for _, tc := range []struct {
		got  inst
		text string
		want uint32
	}{
		{sdot(1, 2, 3), "sdot v1.4s, v2.16b, v3.16b", 0x4e839441},
		{smull8h(5, 0, 2), "smull v5.8h, v0.8b, v2.8b", 0x0e22c005},
		{smull28h(16, 1, 3), "smull2 v16.8h, v1.16b, v3.16b", 0x4e23c030},
		{saddlp4s(4, 5), "saddlp v4.4s, v5.8h", 0x4e6028a4},
		{sadalp4s(4, 16), "sadalp v4.4s, v16.8h", 0x4e606a04},
		{addv4s(4, 4), "addv s4, v4.4s", 0x4eb1b884},
		{and16b(20, 20, 24), "and v20.16b, v20.16b, v24.16b", 0x4e381e94},
		{eor16b(21, 21, 24), "eor v21.16b, v21.16b, v24.16b", 0x6e381eb5},
		{orr16b(11, 8, 8), "orr v11.16b, v8.16b, v8.16b", 0x4ea81d0b},
		{movi16b(24, 0x80), "movi v24.16b, #0x80", 0x4f04e418},
		{movi16b(30, 0xf), "movi v30.16b, #0xf", 0x4f00e5fe},
		{movi16b(25, 0x10), "movi v25.16b, #0x10", 0x4f00e619},
		{sub16b(1, 1, 31), "sub v1.16b, v1.16b, v31.16b", 0x6e3f8421},
		{ushr16b(20, 20, 4), "ushr v20.16b, v20.16b, #4", 0x6f0c0694},
		{cmtst16b(21, 22, 28), "cmtst v21.16b, v22.16b, v28.16b", 0x4e3c8ed5},
		{tbl16b(0, 29, 1), "tbl v0.16b, {v29.16b}, v1.16b", 0x4e0103a0},
		{scvtfS(4, 4), "scvtf s4, s4", 0x5e21d884},
		{fcvtSH(5, 5), "fcvt s5, h5", 0x1ee240a5},
		{fmovSW(5, 4), "fmov s5, w4", 0x1e270085},
		{fmulS(5, 5, 6), "fmul s5, s5, s6", 0x1e2608a5},
		{faddS(7, 7, 4), "fadd s7, s7, s4", 0x1e2428e7},
		{addp4s(4, 16, 17), "addp v4.4s, v16.4s, v17.4s", 0x4eb1be04},
		{scvtf4s(4, 5), "scvtf v4.4s, v5.4s", 0x4e21d8a4},
		{fmlaElem4s(6, 4, 20), "fmla v6.4s, v4.4s, v20.s[0]", 0x4f941086},
		{fadd4s(6, 7, 5), "fadd v6.4s, v7.4s, v5.4s", 0x4e25d4e6},
		{ext16b(7, 6, 5, 8), "ext v7.16b, v6.16b, v5.16b, #8", 0x6e0540c7},
		{faddp2s(6, 3), "faddp s6, v3.2s", 0x7e30d866},
		{fmaddS(7, 4, 20, 9), "fmadd s7, s4, s20, s9", 0x1f142487},
	} {
		if tc.got.text != tc.text || tc.got.word != tc.want {
			t.Errorf("%s = %#08x, want %q = %#08x", tc.got.text, tc.got.word, tc.text, tc.want)
		}
	}
}
