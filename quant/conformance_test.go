package quant

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"testing"
)

// The conformance pack holds the same random llama-tiny weights quantized by
// llama.cpp to Q8_0, Q4_0, Q4_K_M and Q6_K. Decoding a tensor from two of
// these files must give nearly the same values; a wrong block layout gives
// unrelated ones. This is the check of our layouts against ggml's own bytes.

const conformanceDir = "../../shared/testdata/conformance/"

type rawTensor struct {
	typ  Type
	dims []uint64
	data []byte
}

// readGGUF is a minimal GGUF v2/v3 reader for this test only (the real
// reader lives in package gguf, which quant must not depend on).
func readGGUF(t *testing.T, path string) map[string]rawTensor {
	t.Helper()
	buf, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		t.Skipf("conformance file not present: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	r := &ggufReader{b: buf}
	if string(r.bytes(4)) != "GGUF" {
		t.Fatalf("%s: not a GGUF file", path)
	}
	if v := r.u32(); v < 2 {
		t.Fatalf("%s: GGUF version %d", path, v)
	}
	nTensors, nKV := r.u64(), r.u64()
	alignment := uint64(32)
	for i := uint64(0); i < nKV; i++ {
		key := r.str()
		typ := r.u32()
		if key == "general.alignment" && typ == 4 {
			alignment = uint64(r.u32())
			continue
		}
		r.skipValue(typ)
	}
	type info struct {
		name   string
		t      rawTensor
		offset uint64
	}
	infos := make([]info, nTensors)
	for i := range infos {
		infos[i].name = r.str()
		nd := r.u32()
		for d := uint32(0); d < nd; d++ {
			infos[i].t.dims = append(infos[i].t.dims, r.u64())
		}
		infos[i].t.typ = Type(r.u32())
		infos[i].offset = r.u64()
	}
	start := (uint64(r.off) + alignment - 1) / alignment * alignment
	out := map[string]rawTensor{}
	for _, in := range infos {
		n := uint64(1)
		for _, d := range in.t.dims {
			n *= d
		}
		size, err := in.t.typ.RowBytes(int(n))
		if err != nil {
			t.Fatalf("%s: tensor %s: %v", path, in.name, err)
		}
		o := start + in.offset
		in.t.data = buf[o : o+uint64(size)]
		out[in.name] = in.t
	}
	return out
}

type ggufReader struct {
	b   []byte
	off int
}

func (r *ggufReader) bytes(n int) []byte { r.off += n; return r.b[r.off-n : r.off] }
func (r *ggufReader) u32() uint32        { return binary.LittleEndian.Uint32(r.bytes(4)) }
func (r *ggufReader) u64() uint64        { return binary.LittleEndian.Uint64(r.bytes(8)) }
func (r *ggufReader) str() string        { return string(r.bytes(int(r.u64()))) }

func (r *ggufReader) skipValue(typ uint32) {
	sizes := map[uint32]int{0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
	switch typ {
	case 8:
		r.str()
	case 9:
		et, n := r.u32(), r.u64()
		for i := uint64(0); i < n; i++ {
			r.skipValue(et)
		}
	default:
		sz, ok := sizes[typ]
		if !ok {
			panic(fmt.Sprintf("gguf value type %d", typ))
		}
		r.bytes(sz)
	}
}

func TestLlamaCppLayouts(t *testing.T) {
	ref := readGGUF(t, conformanceDir+"llama-tiny-q8_0.gguf")
	files := []string{"llama-tiny-q4_0.gguf", "llama-tiny-q4_k_m.gguf", "llama-tiny-q6_k.gguf"}
	// Relative RMS difference from the Q8_0 decoding that each type may
	// show; unrelated values would give about 1.4.
	limit := map[Type]float64{Q8_0: 0.02, Q4_0: 0.2, Q4_K: 0.15, Q6_K: 0.05, F32: 0.02, F16: 0.02}
	seen := map[Type]bool{}
	for _, f := range files {
		other := readGGUF(t, conformanceDir+f)
		for name, o := range other {
			r, ok := ref[name]
			if !ok || !o.typ.Supported() || r.typ != Q8_0 {
				continue
			}
			n := len(r.data) / q8_0Bytes * qk8_0
			a := decode(t, Q8_0, r.data, n)
			b := decode(t, o.typ, o.data, n)
			var d2, a2 float64
			for i := range a {
				d := float64(a[i]) - float64(b[i])
				d2 += d * d
				a2 += float64(a[i]) * float64(a[i])
			}
			rel := math.Sqrt(d2 / a2)
			if rel > limit[o.typ] {
				t.Errorf("%s %s (%v): relative RMS difference from Q8_0 %.3f > %.3f", f, name, o.typ, rel, limit[o.typ])
			}
			if !seen[o.typ] {
				t.Logf("%s %s (%v): relative RMS difference from Q8_0 %.4f", f, name, o.typ, rel)
				seen[o.typ] = true
			}
		}
	}
	for _, typ := range []Type{Q4_0, Q4_K, Q6_K} {
		if !seen[typ] {
			t.Errorf("no %v tensor compared", typ)
		}
	}
}
