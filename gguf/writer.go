package gguf

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"

	"shade/quant"
)

// Writer writes a GGUF v3 file in one pass: metadata and the tensor table are
// declared first, then the header is written, then tensor data is streamed in
// declaration order through Write, so no tensor needs to be held whole.
type Writer struct {
	out       *bufio.Writer
	meta      Metadata
	tensors   []TensorInfo
	alignment uint64
	pos       uint64 // bytes written so far

	headerDone bool
	cur        int    // index of the tensor being written
	curDone    uint64 // bytes of it written
	dataStart  uint64
}

// NewWriter returns a Writer that writes to w.
func NewWriter(w io.Writer) *Writer {
	return &Writer{out: bufio.NewWriterSize(w, 1<<20), alignment: DefaultAlignment}
}

// Set records a metadata value. Accepted Go types: uint8, int8, uint16, int16,
// uint32, int32, uint64, int64, float32, float64, bool, string, and slices of
// those, and Value for anything else.
func (w *Writer) Set(key string, v any) error {
	if w.headerDone {
		return fmt.Errorf("gguf: Set(%q) after the header was written", key)
	}
	val, err := toValue(v)
	if err != nil {
		return fmt.Errorf("gguf: metadata %q: %w", key, err)
	}
	if key == "general.alignment" {
		a, ok := asInt64(val)
		if !ok || a <= 0 || a&(a-1) != 0 {
			return fmt.Errorf("gguf: general.alignment must be a power of two, got %v", v)
		}
		w.alignment = uint64(a)
	}
	if i, ok := w.meta.index[key]; ok {
		w.meta.KVs[i].Value = val
		return nil
	}
	w.meta.add(key, val)
	return nil
}

func toValue(v any) (Value, error) {
	switch x := v.(type) {
	case Value:
		return x, nil
	case uint8:
		return Value{Type: TypeUint8, V: x}, nil
	case int8:
		return Value{Type: TypeInt8, V: x}, nil
	case uint16:
		return Value{Type: TypeUint16, V: x}, nil
	case int16:
		return Value{Type: TypeInt16, V: x}, nil
	case uint32:
		return Value{Type: TypeUint32, V: x}, nil
	case int32:
		return Value{Type: TypeInt32, V: x}, nil
	case uint64:
		return Value{Type: TypeUint64, V: x}, nil
	case int64:
		return Value{Type: TypeInt64, V: x}, nil
	case float32:
		return Value{Type: TypeFloat32, V: x}, nil
	case float64:
		return Value{Type: TypeFloat64, V: x}, nil
	case bool:
		return Value{Type: TypeBool, V: x}, nil
	case string:
		return Value{Type: TypeString, V: x}, nil
	case []uint8:
		return Value{Type: TypeArray, ElemType: TypeUint8, V: x}, nil
	case []int8:
		return Value{Type: TypeArray, ElemType: TypeInt8, V: x}, nil
	case []uint16:
		return Value{Type: TypeArray, ElemType: TypeUint16, V: x}, nil
	case []int16:
		return Value{Type: TypeArray, ElemType: TypeInt16, V: x}, nil
	case []uint32:
		return Value{Type: TypeArray, ElemType: TypeUint32, V: x}, nil
	case []int32:
		return Value{Type: TypeArray, ElemType: TypeInt32, V: x}, nil
	case []uint64:
		return Value{Type: TypeArray, ElemType: TypeUint64, V: x}, nil
	case []int64:
		return Value{Type: TypeArray, ElemType: TypeInt64, V: x}, nil
	case []float32:
		return Value{Type: TypeArray, ElemType: TypeFloat32, V: x}, nil
	case []float64:
		return Value{Type: TypeArray, ElemType: TypeFloat64, V: x}, nil
	case []bool:
		return Value{Type: TypeArray, ElemType: TypeBool, V: x}, nil
	case []string:
		return Value{Type: TypeArray, ElemType: TypeString, V: x}, nil
	}
	return Value{}, fmt.Errorf("unsupported Go type %T", v)
}

// CopyMeta copies every metadata entry of m (for example a vocab file's
// tokenizer keys) whose key has the given prefix.
func (w *Writer) CopyMeta(m *Metadata, prefix string) error {
	for _, kv := range m.KVs {
		if len(kv.Key) >= len(prefix) && kv.Key[:len(prefix)] == prefix {
			if err := w.Set(kv.Key, kv.Value); err != nil {
				return err
			}
		}
	}
	return nil
}

// AddTensor declares a tensor. dims are in ggml order (row length first).
func (w *Writer) AddTensor(name string, t quant.Type, dims ...uint64) error {
	if w.headerDone {
		return fmt.Errorf("gguf: AddTensor(%q) after the header was written", name)
	}
	if !t.Known() {
		return fmt.Errorf("gguf: tensor %q: unknown type %v", name, t)
	}
	if len(dims) == 0 || len(dims) > maxDims {
		return fmt.Errorf("gguf: tensor %q: %d dimensions", name, len(dims))
	}
	elems := uint64(1)
	for _, d := range dims {
		if d == 0 {
			return fmt.Errorf("gguf: tensor %q: zero dimension", name)
		}
		elems *= d
	}
	if dims[0]%uint64(t.BlockSize()) != 0 {
		return fmt.Errorf("gguf: tensor %q: row of %d is not a multiple of the %v block size", name, dims[0], t)
	}
	for _, ti := range w.tensors {
		if ti.Name == name {
			return fmt.Errorf("gguf: duplicate tensor %q", name)
		}
	}
	w.tensors = append(w.tensors, TensorInfo{
		Name: name, Type: t, Dims: append([]uint64(nil), dims...),
		Size: elems / uint64(t.BlockSize()) * uint64(t.BlockBytes()),
	})
	return nil
}

// WriteHeader writes the header, metadata and tensor table, fixing every
// tensor's offset.
func (w *Writer) WriteHeader() error {
	if w.headerDone {
		return fmt.Errorf("gguf: header already written")
	}
	w.headerDone = true
	var off uint64
	for i := range w.tensors {
		w.tensors[i].Offset = off
		off = alignUp(off+w.tensors[i].Size, w.alignment)
	}
	w.raw([]byte(Magic))
	w.u32(3)
	w.u64(uint64(len(w.tensors)))
	w.u64(uint64(len(w.meta.KVs)))
	for _, kv := range w.meta.KVs {
		w.str(kv.Key)
		w.u32(uint32(kv.Value.Type))
		if err := w.value(kv.Value); err != nil {
			return fmt.Errorf("gguf: metadata %q: %w", kv.Key, err)
		}
	}
	for _, ti := range w.tensors {
		w.str(ti.Name)
		w.u32(uint32(len(ti.Dims)))
		for _, d := range ti.Dims {
			w.u64(d)
		}
		w.u32(uint32(ti.Type))
		w.u64(ti.Offset)
	}
	w.pad()
	w.dataStart = w.pos
	return w.flushErr()
}

// Write streams tensor data: the bytes of the declared tensors, in order,
// back to back. Alignment padding is inserted by the Writer.
func (w *Writer) Write(p []byte) (int, error) {
	if !w.headerDone {
		return 0, fmt.Errorf("gguf: tensor data written before the header")
	}
	n := 0
	for len(p) > 0 {
		if w.cur >= len(w.tensors) {
			return n, fmt.Errorf("gguf: %d bytes of tensor data past the last tensor", len(p))
		}
		ti := &w.tensors[w.cur]
		k := min(uint64(len(p)), ti.Size-w.curDone)
		w.raw(p[:k])
		n += int(k)
		p = p[k:]
		w.curDone += k
		if w.curDone == ti.Size {
			w.cur++
			w.curDone = 0
			if w.cur < len(w.tensors) {
				w.pad()
			}
		}
	}
	return n, w.flushErr()
}

// Close checks that all tensor data was written and flushes.
func (w *Writer) Close() error {
	if !w.headerDone {
		if err := w.WriteHeader(); err != nil {
			return err
		}
	}
	if w.cur < len(w.tensors) {
		return fmt.Errorf("gguf: tensor %q: data incomplete (%d of %d bytes)", w.tensors[w.cur].Name, w.curDone, w.tensors[w.cur].Size)
	}
	return w.out.Flush()
}

func (w *Writer) flushErr() error {
	// bufio keeps the first error; surface it without forcing a flush.
	if _, err := w.out.Write(nil); err != nil {
		return err
	}
	return nil
}

func (w *Writer) raw(p []byte) {
	w.out.Write(p)
	w.pos += uint64(len(p))
}

func (w *Writer) pad() {
	var zeros [64]byte
	for n := alignUp(w.pos, w.alignment) - w.pos; n > 0; {
		k := min(n, uint64(len(zeros)))
		w.raw(zeros[:k])
		n -= k
	}
}

func (w *Writer) u32(x uint32) { w.raw(binary.LittleEndian.AppendUint32(nil, x)) }
func (w *Writer) u64(x uint64) { w.raw(binary.LittleEndian.AppendUint64(nil, x)) }
func (w *Writer) str(s string) { w.u64(uint64(len(s))); w.raw([]byte(s)) }

func (w *Writer) value(v Value) error {
	switch x := v.V.(type) {
	case uint8:
		w.raw([]byte{x})
	case int8:
		w.raw([]byte{byte(x)})
	case bool:
		if x {
			w.raw([]byte{1})
		} else {
			w.raw([]byte{0})
		}
	case uint16:
		w.raw(binary.LittleEndian.AppendUint16(nil, x))
	case int16:
		w.raw(binary.LittleEndian.AppendUint16(nil, uint16(x)))
	case uint32:
		w.u32(x)
	case int32:
		w.u32(uint32(x))
	case float32:
		w.u32(math.Float32bits(x))
	case uint64:
		w.u64(x)
	case int64:
		w.u64(uint64(x))
	case float64:
		w.u64(math.Float64bits(x))
	case string:
		w.str(x)
	default:
		if v.Type != TypeArray {
			return fmt.Errorf("value of type %T does not match tag %v", v.V, v.Type)
		}
		w.u32(uint32(v.ElemType))
		n := arrayLen(v.V)
		w.u64(uint64(n))
		return w.arrayElems(v)
	}
	return nil
}

func (w *Writer) arrayElems(v Value) error {
	switch s := v.V.(type) {
	case []Value:
		for _, e := range s {
			if err := w.value(e); err != nil {
				return err
			}
		}
		return nil
	case []string:
		for _, e := range s {
			w.str(e)
		}
		return nil
	}
	// Scalars: reuse value() per element via reflection-free switches.
	var err error
	each := func(x any) {
		if err == nil {
			err = w.value(Value{V: x})
		}
	}
	switch s := v.V.(type) {
	case []uint8:
		w.raw(s)
	case []int8:
		for _, e := range s {
			each(e)
		}
	case []bool:
		for _, e := range s {
			each(e)
		}
	case []uint16:
		for _, e := range s {
			each(e)
		}
	case []int16:
		for _, e := range s {
			each(e)
		}
	case []uint32:
		for _, e := range s {
			w.u32(e)
		}
	case []int32:
		for _, e := range s {
			w.u32(uint32(e))
		}
	case []float32:
		for _, e := range s {
			w.u32(math.Float32bits(e))
		}
	case []uint64:
		for _, e := range s {
			w.u64(e)
		}
	case []int64:
		for _, e := range s {
			w.u64(uint64(e))
		}
	case []float64:
		for _, e := range s {
			w.u64(math.Float64bits(e))
		}
	default:
		return fmt.Errorf("array of %T", v.V)
	}
	return err
}
