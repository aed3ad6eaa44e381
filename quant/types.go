package quant

import "fmt"

// Type is a ggml tensor element type, numbered as in GGUF files.
type Type uint32

// The ggml type ids. Only some are computed on (see Supported); the others are
// known so that files holding them can be inspected and rejected by name.
const (
	F32     Type = 0
	F16     Type = 1
	Q4_0    Type = 2
	Q4_1    Type = 3
	Q5_0    Type = 6
	Q5_1    Type = 7
	Q8_0    Type = 8
	Q8_1    Type = 9
	Q2_K    Type = 10
	Q3_K    Type = 11
	Q4_K    Type = 12
	Q5_K    Type = 13
	Q6_K    Type = 14
	Q8_K    Type = 15
	IQ2_XXS Type = 16
	IQ2_XS  Type = 17
	IQ3_XXS Type = 18
	IQ1_S   Type = 19
	IQ4_NL  Type = 20
	IQ3_S   Type = 21
	IQ2_S   Type = 22
	IQ4_XS  Type = 23
	I8      Type = 24
	I16     Type = 25
	I32     Type = 26
	I64     Type = 27
	F64     Type = 28
	IQ1_M   Type = 29
	BF16    Type = 30
	TQ1_0   Type = 34
	TQ2_0   Type = 35
	MXFP4   Type = 39
)

type typeInfo struct {
	name       string
	blockSize  int // elements per block
	blockBytes int // bytes per block
	supported  bool
}

var typeTable = map[Type]typeInfo{
	F32:     {"F32", 1, 4, true},
	F16:     {"F16", 1, 2, true},
	Q4_0:    {"Q4_0", 32, 18, true},
	Q4_1:    {"Q4_1", 32, 20, true},
	Q5_0:    {"Q5_0", 32, 22, true},
	Q5_1:    {"Q5_1", 32, 24, true},
	Q8_0:    {"Q8_0", 32, 34, true},
	Q8_1:    {"Q8_1", 32, 36, false},
	Q2_K:    {"Q2_K", 256, 84, true},
	Q3_K:    {"Q3_K", 256, 110, true},
	Q4_K:    {"Q4_K", 256, 144, true},
	Q5_K:    {"Q5_K", 256, 176, true},
	Q6_K:    {"Q6_K", 256, 210, true},
	Q8_K:    {"Q8_K", 256, 292, false},
	IQ2_XXS: {"IQ2_XXS", 256, 66, false},
	IQ2_XS:  {"IQ2_XS", 256, 74, false},
	IQ3_XXS: {"IQ3_XXS", 256, 98, false},
	IQ1_S:   {"IQ1_S", 256, 50, false},
	IQ4_NL:  {"IQ4_NL", 32, 18, true},
	IQ3_S:   {"IQ3_S", 256, 110, false},
	IQ2_S:   {"IQ2_S", 256, 82, false},
	IQ4_XS:  {"IQ4_XS", 256, 136, true},
	I8:      {"I8", 1, 1, false},
	I16:     {"I16", 1, 2, false},
	I32:     {"I32", 1, 4, false},
	I64:     {"I64", 1, 8, false},
	F64:     {"F64", 1, 8, false},
	IQ1_M:   {"IQ1_M", 256, 56, false},
	BF16:    {"BF16", 1, 2, true},
	TQ1_0:   {"TQ1_0", 256, 54, false},
	TQ2_0:   {"TQ2_0", 256, 66, false},
	MXFP4:   {"MXFP4", 32, 17, false},
}

// typeInfos is typeTable indexed by id, for lookups on hot paths.
var typeInfos = func() (a [64]typeInfo) {
	for t, ti := range typeTable {
		a[t] = ti
	}
	return a
}()

// info returns t's table entry, or the zero entry for an unknown id.
func (t Type) info() typeInfo {
	if uint64(t) < uint64(len(typeInfos)) {
		return typeInfos[t]
	}
	return typeInfo{}
}

// Known reports whether t is a ggml type id this package can size.
func (t Type) Known() bool { return t.info().blockSize != 0 }

// Supported reports whether shade can compute with tensors of type t.
func (t Type) Supported() bool { return t.info().supported }

func (t Type) String() string {
	if ti, ok := typeTable[t]; ok {
		return ti.name
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// BlockSize is the number of elements in one block of t (1 for float types);
// 0 for unknown types.
func (t Type) BlockSize() int { return t.info().blockSize }

// BlockBytes is the encoded size of one block of t; 0 for unknown types.
func (t Type) BlockBytes() int { return t.info().blockBytes }

// RowBytes returns the encoded size of n elements of type t. n must be a
// multiple of the block size.
func (t Type) RowBytes(n int) (int, error) {
	ti, ok := typeTable[t]
	if !ok {
		return 0, fmt.Errorf("quant: unknown tensor type %d", uint32(t))
	}
	if n < 0 || n%ti.blockSize != 0 {
		return 0, fmt.Errorf("quant: %d elements is not a whole number of %s blocks of %d", n, ti.name, ti.blockSize)
	}
	return n / ti.blockSize * ti.blockBytes, nil
}

// ParseType maps a type name such as "Q4_0" (case-insensitive) to its Type.
func ParseType(name string) (Type, error) {
	for t, ti := range typeTable {
		if equalFold(ti.name, name) {
			return t, nil
		}
	}
	return 0, fmt.Errorf("quant: unknown type name %q", name)
}

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'a' <= x && x <= 'z' {
			x -= 'a' - 'A'
		}
		if 'a' <= y && y <= 'z' {
			y -= 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
