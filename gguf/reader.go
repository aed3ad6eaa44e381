package gguf

import (
	"encoding/binary"
	"fmt"
	"math"
	"unicode/utf8"

	"shade/quant"
)

// maxDims is ggml's GGML_MAX_DIMS.
const maxDims = 4

// maxArrayDepth bounds nesting of arrays of arrays.
const maxArrayDepth = 4

// cursor reads little-endian values from b, checking every bound.
type cursor struct {
	b   []byte
	off uint64
	err error
}

func (c *cursor) fail(format string, args ...any) {
	if c.err == nil {
		c.err = fmt.Errorf("gguf: at offset %#x: %s: %w", c.off, fmt.Sprintf(format, args...), ErrFormat)
	}
}

func (c *cursor) remaining() uint64 {
	if c.off >= uint64(len(c.b)) {
		return 0
	}
	return uint64(len(c.b)) - c.off
}

func (c *cursor) take(n uint64, what string) []byte {
	if c.err != nil {
		return nil
	}
	if n > c.remaining() {
		c.fail("%s needs %d bytes, only %d left (file truncated?)", what, n, c.remaining())
		return nil
	}
	p := c.b[c.off : c.off+n]
	c.off += n
	return p
}

func (c *cursor) u8(what string) uint8 {
	p := c.take(1, what)
	if p == nil {
		return 0
	}
	return p[0]
}

func (c *cursor) u16(what string) uint16 {
	p := c.take(2, what)
	if p == nil {
		return 0
	}
	return binary.LittleEndian.Uint16(p)
}

func (c *cursor) u32(what string) uint32 {
	p := c.take(4, what)
	if p == nil {
		return 0
	}
	return binary.LittleEndian.Uint32(p)
}

func (c *cursor) u64(what string) uint64 {
	p := c.take(8, what)
	if p == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(p)
}

func (c *cursor) str(what string) string {
	n := c.u64(what + " length")
	p := c.take(n, what)
	if p == nil {
		return ""
	}
	return string(p)
}

// count reads an element count and checks that count elements of at least
// minSize bytes each fit in what is left of the file.
func (c *cursor) count(what string, minSize uint64) uint64 {
	n := c.u64(what)
	if c.err != nil {
		return 0
	}
	if minSize > 0 && n > c.remaining()/minSize {
		c.fail("%s = %d cannot fit in the %d bytes left", what, n, c.remaining())
		return 0
	}
	return n
}

// Parse parses a whole GGUF file held in data. The returned File refers to
// data for tensor contents; data must outlive it.
func Parse(data []byte) (*File, error) {
	c := &cursor{b: data}
	magic := c.take(4, "magic")
	if c.err != nil {
		return nil, c.err
	}
	if string(magic) != Magic {
		return nil, fmt.Errorf("gguf: bad magic %q, want %q (not a GGUF file): %w", magic, Magic, ErrFormat)
	}
	f := &File{Size: uint64(len(data)), data: data, tensors: make(map[string]int)}
	f.Version = c.u32("version")
	if c.err == nil && (f.Version < 2 || f.Version > 3) {
		return nil, fmt.Errorf("gguf: unsupported version %d (want 2 or 3): %w", f.Version, ErrFormat)
	}
	// A tensor info is at least 8 (name len) + 4 (n_dims) + 4 (type) + 8 (offset) bytes;
	// a key/value at least 8 (key len) + 4 (type) + 1 (smallest value).
	nTensors := c.count("tensor count", 24)
	nKV := c.count("metadata count", 13)
	for i := uint64(0); i < nKV && c.err == nil; i++ {
		key := c.str(fmt.Sprintf("metadata key #%d", i))
		if c.err != nil {
			break
		}
		if !utf8.ValidString(key) {
			c.fail("metadata key #%d is not valid UTF-8", i)
			break
		}
		if f.Meta.Has(key) {
			c.fail("duplicate metadata key %q", key)
			break
		}
		vt := ValueType(c.u32("value type of " + key))
		v := c.value(key, vt, 0)
		if c.err != nil {
			break
		}
		f.Meta.add(key, v)
	}
	if c.err != nil {
		return nil, c.err
	}

	f.Alignment = DefaultAlignment
	if v, ok := f.Meta.Lookup("general.alignment"); ok {
		a, isInt := asInt64(v)
		if !isInt {
			return nil, typeErr("general.alignment", v, "integer")
		}
		if a <= 0 || a&(a-1) != 0 || a > 1<<20 {
			return nil, fmt.Errorf("gguf: general.alignment = %d is not a power of two in [1, 1MiB]: %w", a, ErrFormat)
		}
		f.Alignment = uint64(a)
	}

	f.Tensors = make([]TensorInfo, 0, nTensors)
	for i := uint64(0); i < nTensors && c.err == nil; i++ {
		ti := c.tensorInfo(i)
		if c.err != nil {
			break
		}
		if _, dup := f.tensors[ti.Name]; dup {
			c.fail("duplicate tensor name %q", ti.Name)
			break
		}
		f.tensors[ti.Name] = len(f.Tensors)
		f.Tensors = append(f.Tensors, ti)
	}
	if c.err != nil {
		return nil, c.err
	}

	f.DataOffset = alignUp(c.off, f.Alignment)
	if nTensors > 0 && f.DataOffset > f.Size {
		return nil, fmt.Errorf("gguf: data section would start at %#x, past end of file (size %d): %w", f.DataOffset, f.Size, ErrFormat)
	}
	dataLen := f.Size - min(f.DataOffset, f.Size)
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		if ti.Offset%f.Alignment != 0 {
			return nil, fmt.Errorf("gguf: tensor %q: offset %#x is not a multiple of the alignment %d: %w", ti.Name, ti.Offset, f.Alignment, ErrFormat)
		}
		if ti.Offset > dataLen || ti.Size > dataLen-ti.Offset {
			return nil, fmt.Errorf("gguf: tensor %q at offset %#x: %d bytes of data run past end of file (size %d): %w",
				ti.Name, f.DataOffset+ti.Offset, ti.Size, f.Size, ErrFormat)
		}
	}
	return f, nil
}

func alignUp(x, a uint64) uint64 { return (x + a - 1) / a * a }

func (c *cursor) tensorInfo(i uint64) TensorInfo {
	var ti TensorInfo
	ti.Name = c.str(fmt.Sprintf("name of tensor #%d", i))
	if c.err != nil {
		return ti
	}
	if !utf8.ValidString(ti.Name) {
		c.fail("name of tensor #%d is not valid UTF-8", i)
		return ti
	}
	nDims := c.u32("dimension count of tensor " + ti.Name)
	if c.err != nil {
		return ti
	}
	if nDims == 0 || nDims > maxDims {
		c.fail("tensor %q has %d dimensions (want 1..%d)", ti.Name, nDims, maxDims)
		return ti
	}
	ti.Dims = make([]uint64, nDims)
	elems := uint64(1)
	for d := range ti.Dims {
		ti.Dims[d] = c.u64("dimension of tensor " + ti.Name)
		if c.err != nil {
			return ti
		}
		if ti.Dims[d] == 0 || ti.Dims[d] > math.MaxInt64/elems {
			c.fail("tensor %q: dimension %d = %d is zero or overflows", ti.Name, d, ti.Dims[d])
			return ti
		}
		elems *= ti.Dims[d]
	}
	ti.Type = quant.Type(c.u32("type of tensor " + ti.Name))
	if c.err != nil {
		return ti
	}
	if !ti.Type.Known() {
		c.fail("tensor %q has unknown type id %d", ti.Name, uint32(ti.Type))
		return ti
	}
	bs := uint64(ti.Type.BlockSize())
	if ti.Dims[0]%bs != 0 {
		c.fail("tensor %q: row of %d elements is not a multiple of the %s block size %d", ti.Name, ti.Dims[0], ti.Type, bs)
		return ti
	}
	blocks := elems / bs
	bb := uint64(ti.Type.BlockBytes())
	if blocks > math.MaxInt64/bb {
		c.fail("tensor %q: size overflows", ti.Name)
		return ti
	}
	ti.Size = blocks * bb
	ti.Offset = c.u64("offset of tensor " + ti.Name)
	return ti
}

func (c *cursor) value(key string, vt ValueType, depth int) Value {
	v := Value{Type: vt}
	switch vt {
	case TypeUint8:
		v.V = c.u8(key)
	case TypeInt8:
		v.V = int8(c.u8(key))
	case TypeUint16:
		v.V = c.u16(key)
	case TypeInt16:
		v.V = int16(c.u16(key))
	case TypeUint32:
		v.V = c.u32(key)
	case TypeInt32:
		v.V = int32(c.u32(key))
	case TypeFloat32:
		v.V = math.Float32frombits(c.u32(key))
	case TypeUint64:
		v.V = c.u64(key)
	case TypeInt64:
		v.V = int64(c.u64(key))
	case TypeFloat64:
		v.V = math.Float64frombits(c.u64(key))
	case TypeBool:
		b := c.u8(key)
		if c.err == nil && b > 1 {
			c.fail("metadata %q: bool byte is %d", key, b)
		}
		v.V = b == 1
	case TypeString:
		v.V = c.str(key)
	case TypeArray:
		if depth >= maxArrayDepth {
			c.fail("metadata %q: arrays nested deeper than %d", key, maxArrayDepth)
			return v
		}
		v.ElemType = ValueType(c.u32("element type of " + key))
		v.V = c.array(key, v.ElemType, depth)
	default:
		c.fail("metadata %q has unknown value type %d", key, uint32(vt))
	}
	return v
}

func (c *cursor) array(key string, et ValueType, depth int) any {
	minSize := uint64(et.fixedSize())
	switch et {
	case TypeString:
		minSize = 8
	case TypeArray:
		minSize = 12
	}
	if minSize == 0 {
		c.fail("metadata %q: array of unknown element type %d", key, uint32(et))
		return nil
	}
	n := c.count("length of array "+key, minSize)
	if c.err != nil {
		return nil
	}
	switch et {
	case TypeString:
		out := make([]string, n)
		for i := range out {
			out[i] = c.str(key)
			if c.err != nil {
				return nil
			}
		}
		return out
	case TypeArray:
		out := make([]Value, n)
		for i := range out {
			out[i] = c.value(key, TypeArray, depth+1)
			if c.err != nil {
				return nil
			}
		}
		return out
	}
	raw := c.take(n*minSize, key)
	if c.err != nil {
		return nil
	}
	le := binary.LittleEndian
	switch et {
	case TypeUint8:
		return append([]uint8(nil), raw...)
	case TypeInt8:
		out := make([]int8, n)
		for i := range out {
			out[i] = int8(raw[i])
		}
		return out
	case TypeBool:
		out := make([]bool, n)
		for i := range out {
			out[i] = raw[i] != 0
		}
		return out
	case TypeUint16:
		out := make([]uint16, n)
		for i := range out {
			out[i] = le.Uint16(raw[2*i:])
		}
		return out
	case TypeInt16:
		out := make([]int16, n)
		for i := range out {
			out[i] = int16(le.Uint16(raw[2*i:]))
		}
		return out
	case TypeUint32:
		out := make([]uint32, n)
		for i := range out {
			out[i] = le.Uint32(raw[4*i:])
		}
		return out
	case TypeInt32:
		out := make([]int32, n)
		for i := range out {
			out[i] = int32(le.Uint32(raw[4*i:]))
		}
		return out
	case TypeFloat32:
		out := make([]float32, n)
		for i := range out {
			out[i] = math.Float32frombits(le.Uint32(raw[4*i:]))
		}
		return out
	case TypeUint64:
		out := make([]uint64, n)
		for i := range out {
			out[i] = le.Uint64(raw[8*i:])
		}
		return out
	case TypeInt64:
		out := make([]int64, n)
		for i := range out {
			out[i] = int64(le.Uint64(raw[8*i:]))
		}
		return out
	case TypeFloat64:
		out := make([]float64, n)
		for i := range out {
			out[i] = math.Float64frombits(le.Uint64(raw[8*i:]))
		}
		return out
	}
	return nil
}
