package gguf

import (
	"fmt"

	"shade/quant"
)

// fileTypeNames are llama.cpp's names of the values of general.file_type
// (its llama_ftype): which quantization a file's matrices mostly have, the
// name a user downloads it by ("Q4_K_M"). Values 4-6 were removed from
// llama.cpp and no longer written.
var fileTypeNames = map[uint32]string{
	0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1",
	10: "Q2_K", 11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M",
	16: "Q5_K_S", 17: "Q5_K_M", 18: "Q6_K", 19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S",
	22: "IQ3_XS", 23: "IQ3_XXS", 24: "IQ1_S", 25: "IQ4_NL", 26: "IQ3_S", 27: "IQ3_M",
	28: "IQ2_S", 29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M", 32: "BF16", 36: "TQ1_0",
	37: "TQ2_0", 38: "MXFP4_MOE",
}

// FileTypeName names a general.file_type value as llama.cpp does
// ("Q4_K_M"), or "file type N" for a value it does not know.
func FileTypeName(v uint32) string {
	if n, ok := fileTypeNames[v]; ok {
		return n
	}
	return fmt.Sprintf("file type %d", v)
}

// FileTypeFor is the general.file_type of a file whose matrices are all of
// type t, and false for a type no file type stands for. Where llama.cpp has
// several for one matrix type (Q4_K_S and Q4_K_M), it is the one with the
// fewest matrices of other types (the _S).
func FileTypeFor(t quant.Type) (uint32, bool) {
	switch t {
	case quant.F32:
		return 0, true
	case quant.F16:
		return 1, true
	case quant.Q4_0:
		return 2, true
	case quant.Q4_1:
		return 3, true
	case quant.Q8_0:
		return 7, true
	case quant.Q5_0:
		return 8, true
	case quant.Q5_1:
		return 9, true
	case quant.Q2_K:
		return 10, true
	case quant.Q3_K:
		return 11, true
	case quant.Q4_K:
		return 14, true
	case quant.Q5_K:
		return 16, true
	case quant.Q6_K:
		return 18, true
	case quant.IQ4_NL:
		return 25, true
	case quant.IQ4_XS:
		return 30, true
	case quant.BF16:
		return 32, true
	}
	return 0, false
}
