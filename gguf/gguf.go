// Package gguf reads and writes GGUF (v2 and v3) model files: the header,
// typed metadata, the tensor table and the aligned tensor data. Reading works
// over an mmap of the file so tensor data is used in place, never copied.
//
// Every count and offset in a file is checked against what the file can
// actually hold before anything is allocated from it, so a truncated or
// hostile file yields an error naming the problem, never a panic or an
// allocation sized by an untrusted number. It is not a model loader: which
// tensors and keys an architecture needs is the model package's business.
package gguf

import (
	"errors"
	"fmt"
	"math"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"

	"shade/quant"
)

// Magic is the four bytes every GGUF file starts with.
const Magic = "GGUF"

// DefaultAlignment is the tensor data alignment when general.alignment is absent.
const DefaultAlignment = 32

// ValueType is the type tag of a metadata value.
type ValueType uint32

// Metadata value types, as numbered in the GGUF specification.
const (
	TypeUint8   ValueType = 0
	TypeInt8    ValueType = 1
	TypeUint16  ValueType = 2
	TypeInt16   ValueType = 3
	TypeUint32  ValueType = 4
	TypeInt32   ValueType = 5
	TypeFloat32 ValueType = 6
	TypeBool    ValueType = 7
	TypeString  ValueType = 8
	TypeArray   ValueType = 9
	TypeUint64  ValueType = 10
	TypeInt64   ValueType = 11
	TypeFloat64 ValueType = 12
)

var valueTypeNames = [...]string{"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "bool", "string", "array", "uint64", "int64", "float64"}

func (t ValueType) String() string {
	if int(t) < len(valueTypeNames) {
		return valueTypeNames[t]
	}
	return fmt.Sprintf("valuetype(%d)", uint32(t))
}

// fixedSize is the encoded size of a scalar value type; 0 for string and array.
func (t ValueType) fixedSize() int {
	switch t {
	case TypeUint8, TypeInt8, TypeBool:
		return 1
	case TypeUint16, TypeInt16:
		return 2
	case TypeUint32, TypeInt32, TypeFloat32:
		return 4
	case TypeUint64, TypeInt64, TypeFloat64:
		return 8
	}
	return 0
}

// ErrKeyNotFound is wrapped by the errors of Metadata getters for absent keys.
var ErrKeyNotFound = errors.New("key not found")

// ErrFormat is wrapped by every error about a malformed file.
var ErrFormat = errors.New("malformed GGUF")

// TensorInfo describes one tensor of the file. Dims are in ggml order:
// Dims[0] is the number of elements in a row (the fastest-varying index).
type TensorInfo struct {
	Name   string
	Type   quant.Type
	Dims   []uint64
	Offset uint64 // relative to the start of the data section
	Size   uint64 // bytes of tensor data
}

// Elements is the number of elements in the tensor.
func (ti *TensorInfo) Elements() uint64 {
	n := uint64(1)
	for _, d := range ti.Dims {
		n *= d
	}
	return n
}

// File is a parsed GGUF file. Tensor data is a view of the mapped file and
// stays valid until Close.
type File struct {
	Version    uint32
	Meta       Metadata
	Tensors    []TensorInfo
	Alignment  uint64
	DataOffset uint64 // absolute offset of the data section
	Size       uint64 // file size in bytes
	Path       string

	data    []byte // the whole file (mapped or in memory)
	mapped  bool
	tensors map[string]int
}

// Open maps the file at path read-only and parses it.
// It must be a regular file: a directory, FIFO, device or socket is an
// error at once (opened non-blocking, a FIFO without a writer does not
// hold Open up).
func Open(path string) (*File, error) {
	fd, err := os.OpenFile(path, os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	defer fd.Close()
	st, err := fd.Stat()
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	switch mode := st.Mode(); {
	case mode.IsDir():
		return nil, fmt.Errorf("gguf: %s is a directory, not a GGUF file", path)
	case !mode.IsRegular():
		return nil, fmt.Errorf("gguf: %s is not a regular file (%s): a model must be a file that can be mapped", path, fileKind(mode))
	}
	size := st.Size()
	if size == 0 {
		return nil, fmt.Errorf("gguf: %s: empty file: %w", path, ErrFormat)
	}
	if size > math.MaxInt {
		return nil, fmt.Errorf("gguf: %s: file too large to map (%d bytes)", path, size)
	}
	data, err := unix.Mmap(int(fd.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("gguf: mmap %s: %w", path, err)
	}
	registerMapping(data, path)
	f, err := parseMapped(data)
	if err != nil {
		unregisterMapping(data)
		unix.Munmap(data)
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f.mapped = true
	f.Path = path
	return f, nil
}

// parseMapped is Parse of a mapping, where a file cut meanwhile faults.
func parseMapped(data []byte) (f *File, err error) {
	defer CatchFault(&err)
	defer GuardFaults()()
	return Parse(data)
}

// fileKind names a non-regular file's type for messages.
func fileKind(m os.FileMode) string {
	switch {
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a block device"
	}
	return "not a regular file"
}

// Close unmaps the file. Tensor data slices must not be used afterwards.
func (f *File) Close() error {
	if f == nil || !f.mapped || f.data == nil {
		return nil
	}
	unregisterMapping(f.data)
	err := unix.Munmap(f.data)
	f.data = nil
	return err
}

// Mapped reports whether the file's data is a mapping of the file (Open)
// rather than memory the caller gave to Parse.
func (f *File) Mapped() bool { return f.mapped }

// ReleasePages drops the pages of the mapping that lie wholly inside b (a
// slice of the file's data) from the process's resident set: the bytes stay
// readable, and a later read maps them again from the page cache or the
// disk. Use it for data copied elsewhere. It does nothing when the file is
// not mapped or b holds no whole page.
func (f *File) ReleasePages(b []byte) {
	if !f.mapped || len(b) == 0 || f.data == nil {
		return
	}
	page := uintptr(os.Getpagesize())
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	base := uintptr(unsafe.Pointer(unsafe.SliceData(f.data)))
	if start < base || start+uintptr(len(b)) > base+uintptr(len(f.data)) {
		return // not ours
	}
	lo := (start + page - 1) &^ (page - 1)
	hi := (start + uintptr(len(b))) &^ (page - 1)
	if hi <= lo {
		return
	}
	off := int(lo - base)
	_ = unix.Madvise(f.data[off:off+int(hi-lo)], unix.MADV_DONTNEED)
}

// Bytes returns the whole file as mapped.
func (f *File) Bytes() []byte { return f.data }

// Tensor returns the tensor named name.
func (f *File) Tensor(name string) (*TensorInfo, bool) {
	i, ok := f.tensors[name]
	if !ok {
		return nil, false
	}
	return &f.Tensors[i], true
}

// TensorData returns the bytes of a tensor, in place in the mapped file.
func (f *File) TensorData(ti *TensorInfo) []byte {
	start := f.DataOffset + ti.Offset
	return f.data[start : start+ti.Size : start+ti.Size]
}

// TensorAbsOffset is the absolute file offset where the tensor's data begins.
func (f *File) TensorAbsOffset(ti *TensorInfo) uint64 { return f.DataOffset + ti.Offset }
