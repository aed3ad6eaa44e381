package gguf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"shade/quant"
)

const sharedDir = "../../shared/testdata"

func sharedFiles(t testing.TB) []string {
	t.Helper()
	var files []string
	for _, sub := range []string{"conformance", "tokenizer"} {
		m, _ := filepath.Glob(filepath.Join(sharedDir, sub, "*.gguf"))
		files = append(files, m...)
	}
	if len(files) == 0 {
		t.Skip("../shared/testdata not present: shared GGUF files are needed for this test")
	}
	return files
}

func TestOpenSharedFiles(t *testing.T) {
	for _, path := range sharedFiles(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			f, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.Meta.String("general.architecture"); err != nil {
				t.Errorf("general.architecture: %v", err)
			}
			for i := range f.Tensors {
				ti := &f.Tensors[i]
				if got := len(f.TensorData(ti)); uint64(got) != ti.Size {
					t.Errorf("%s: data %d bytes, want %d", ti.Name, got, ti.Size)
				}
			}
		})
	}
}

// buildFile writes a small file with one tensor of each float type.
func buildFile(t testing.TB) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := NewWriter(&buf)
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(w.Set("general.architecture", "llama"))
	must(w.Set("u8", uint8(7)))
	must(w.Set("i64", int64(-5)))
	must(w.Set("f64", 2.5))
	must(w.Set("flag", true))
	must(w.Set("names", []string{"a", "bé", ""}))
	must(w.Set("ints", []int32{1, -2, 3}))
	must(w.Set("floats", []float32{0.5, 1.5}))
	must(w.Set("nested", Value{Type: TypeArray, ElemType: TypeArray, V: []Value{
		{Type: TypeArray, ElemType: TypeUint16, V: []uint16{1, 2}},
	}}))
	must(w.AddTensor("a", quant.F32, 3, 2))
	must(w.AddTensor("b", quant.Q8_0, 32))
	must(w.WriteHeader())
	a := make([]byte, 24)
	for i := range a {
		a[i] = byte(i)
	}
	// Stream in odd-sized chunks across the tensor boundary.
	b := bytes.Repeat([]byte{9}, 34)
	all := append(a, b...)
	for len(all) > 0 {
		k := min(5, len(all))
		if _, err := w.Write(all[:k]); err != nil {
			t.Fatal(err)
		}
		all = all[k:]
	}
	must(w.Close())
	return buf.Bytes()
}

func TestWriteParseRoundTrip(t *testing.T) {
	data := buildFile(t)
	f, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := f.Meta.String("general.architecture"); s != "llama" {
		t.Errorf("architecture = %q", s)
	}
	if n, _ := f.Meta.Uint32("u8"); n != 7 {
		t.Errorf("u8 = %d", n)
	}
	if n, _ := f.Meta.Int("i64"); n != -5 {
		t.Errorf("i64 = %d", n)
	}
	if x, _ := f.Meta.Float32("f64"); x != 2.5 {
		t.Errorf("f64 = %v", x)
	}
	if b, _ := f.Meta.Bool("flag"); !b {
		t.Error("flag false")
	}
	if s, _ := f.Meta.Strings("names"); strings.Join(s, ",") != "a,bé," {
		t.Errorf("names = %q", s)
	}
	if s, _ := f.Meta.Int32s("ints"); len(s) != 3 || s[1] != -2 {
		t.Errorf("ints = %v", s)
	}
	if _, err := f.Meta.Strings("ints"); !errors.Is(err, ErrFormat) {
		t.Errorf("wrong type: err = %v", err)
	}
	if _, err := f.Meta.String("nope"); !errors.Is(err, ErrKeyNotFound) {
		t.Errorf("missing key: err = %v", err)
	}
	a, ok := f.Tensor("a")
	if !ok || a.Dims[0] != 3 || a.Dims[1] != 2 || a.Size != 24 {
		t.Fatalf("tensor a = %+v", a)
	}
	if d := f.TensorData(a); d[5] != 5 {
		t.Errorf("a data = %v", d)
	}
	b, _ := f.Tensor("b")
	if b.Offset%f.Alignment != 0 || f.TensorData(b)[33] != 9 {
		t.Errorf("b misplaced: %+v", b)
	}
}

// le helpers for building hostile files by hand.
func u32(x uint32) []byte { return binary.LittleEndian.AppendUint32(nil, x) }
func u64(x uint64) []byte { return binary.LittleEndian.AppendUint64(nil, x) }
func gstr(s string) []byte {
	return append(u64(uint64(len(s))), s...)
}
func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func TestMalformed(t *testing.T) {
	good := buildFile(t)
	header := func(nt, nkv uint64) []byte { return cat([]byte("GGUF"), u32(3), u64(nt), u64(nkv)) }
	tensor := func(name string, typ uint32, off uint64, dims ...uint64) []byte {
		b := cat(gstr(name), u32(uint32(len(dims))))
		for _, d := range dims {
			b = append(b, u64(d)...)
		}
		return cat(b, u32(typ), u64(off))
	}
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "magic"},
		{"bad magic", []byte("GGML\x03\x00\x00\x00"), "bad magic"},
		{"version 1", cat([]byte("GGUF"), u32(1), u64(0), u64(0)), "unsupported version"},
		{"truncated header", good[:12], "truncated"},
		{"truncated metadata", good[:60], "cannot fit"},
		{"truncated tensor data", good[:len(good)-10], "past end of file"},
		{"absurd tensor count", header(1<<62, 0), "cannot fit"},
		{"absurd kv count", header(0, 1<<62), "cannot fit"},
		{"absurd string length", cat(header(0, 1), u64(1<<60), make([]byte, 16)), "truncated"},
		{"absurd array length", cat(header(0, 1), gstr("k"), u32(uint32(TypeArray)), u32(uint32(TypeUint32)), u64(1<<61)), "cannot fit"},
		{"unknown value type", cat(header(0, 1), gstr("k"), u32(99), u64(0)), "unknown value type"},
		{"unknown array type", cat(header(0, 1), gstr("k"), u32(uint32(TypeArray)), u32(77), u64(0)), "unknown element type"},
		{"bad bool", cat(header(0, 1), gstr("k"), u32(uint32(TypeBool)), []byte{5}), "bool"},
		{"alignment wrong type", cat(header(0, 1), gstr("general.alignment"), u32(uint32(TypeString)), gstr("x")), "general.alignment"},
		{"alignment not pow2", cat(header(0, 1), gstr("general.alignment"), u32(uint32(TypeUint32)), u32(3)), "power of two"},
		{"unknown tensor type", cat(header(1, 0), tensor("w", 200, 0, 32)), "unknown type id 200"},
		{"too many dims", cat(header(1, 0), tensor("w", 0, 0, 1, 1, 1, 1, 1)), "dimensions"},
		{"zero dim", cat(header(1, 0), tensor("w", 0, 0, 0)), "zero"},
		{"overflowing dims", cat(header(1, 0), tensor("w", 0, 0, 1<<40, 1<<40)), "overflows"},
		{"row not whole blocks", cat(header(1, 0), tensor("w", uint32(quant.Q4_0), 0, 33)), "block size"},
		{"offset past end", cat(header(1, 0), tensor("w", 0, 1<<40, 8)), "past end of file"},
		{"misaligned offset", cat(header(1, 0), tensor("w", 0, 4, 1), make([]byte, 64)), "alignment"},
		{"duplicate tensor", cat(header(2, 0), tensor("w", 0, 0, 1), tensor("w", 0, 32, 1), make([]byte, 128)), "duplicate tensor"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse(tc.data)
			if err == nil {
				t.Fatalf("parsed without error: %d tensors", len(f.Tensors))
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not mention %q", err, tc.want)
			}
		})
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(filepath.Join(dir, "missing.gguf")); err == nil {
		t.Error("missing file opened")
	}
	p := filepath.Join(dir, "trunc.gguf")
	os.WriteFile(p, buildFile(t)[:40], 0o644)
	_, err := Open(p)
	if err == nil || !strings.Contains(err.Error(), p) {
		t.Errorf("truncated file: err = %v (want the path in it)", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(buildFile(f))
	if m, _ := filepath.Glob(filepath.Join(sharedDir, "conformance", "stories260K.gguf")); len(m) > 0 {
		if b, err := os.ReadFile(m[0]); err == nil {
			f.Add(b[:4096])
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse(data)
		if err != nil {
			return
		}
		for i := range file.Tensors {
			_ = file.TensorData(&file.Tensors[i])
		}
	})
}
