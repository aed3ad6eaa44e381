package gguf

import (
	"fmt"
	"math"
)

// Value is one metadata value. Scalars hold their Go value (uint8 … float64,
// bool, string); arrays hold a typed slice ([]uint32, []float32, []string, …)
// or []Value for arrays of arrays.
type Value struct {
	Type     ValueType
	ElemType ValueType // for arrays
	V        any
}

// KV is one metadata entry, in file order.
type KV struct {
	Key   string
	Value Value
}

// Metadata is the ordered key/value section of a file, with typed getters.
type Metadata struct {
	KVs   []KV
	index map[string]int
}

func (m *Metadata) add(key string, v Value) {
	if m.index == nil {
		m.index = make(map[string]int)
	}
	m.index[key] = len(m.KVs)
	m.KVs = append(m.KVs, KV{key, v})
}

// Lookup returns the value stored under key.
func (m *Metadata) Lookup(key string) (Value, bool) {
	i, ok := m.index[key]
	if !ok {
		return Value{}, false
	}
	return m.KVs[i].Value, true
}

// Has reports whether key is present.
func (m *Metadata) Has(key string) bool { _, ok := m.index[key]; return ok }

func (m *Metadata) get(key string) (Value, error) {
	v, ok := m.Lookup(key)
	if !ok {
		return Value{}, fmt.Errorf("gguf: metadata %q: %w", key, ErrKeyNotFound)
	}
	return v, nil
}

func typeErr(key string, v Value, want string) error {
	got := v.Type.String()
	if v.Type == TypeArray {
		got = "array of " + v.ElemType.String()
	}
	return fmt.Errorf("gguf: metadata %q is %s, want %s: %w", key, got, want, ErrFormat)
}

// String returns a string value.
func (m *Metadata) String(key string) (string, error) {
	v, err := m.get(key)
	if err != nil {
		return "", err
	}
	s, ok := v.V.(string)
	if !ok {
		return "", typeErr(key, v, "string")
	}
	return s, nil
}

// asInt64 converts any integer scalar to int64 (uint64 values above MaxInt64 fail).
func asInt64(v Value) (int64, bool) {
	switch x := v.V.(type) {
	case uint8:
		return int64(x), true
	case int8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case int16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case int32:
		return int64(x), true
	case uint64:
		if x > math.MaxInt64 {
			return 0, false
		}
		return int64(x), true
	case int64:
		return x, true
	}
	return 0, false
}

// Int returns an integer value of any integer type.
func (m *Metadata) Int(key string) (int64, error) {
	v, err := m.get(key)
	if err != nil {
		return 0, err
	}
	n, ok := asInt64(v)
	if !ok {
		return 0, typeErr(key, v, "integer")
	}
	return n, nil
}

// Uint32 returns an integer value that fits in uint32.
func (m *Metadata) Uint32(key string) (uint32, error) {
	n, err := m.Int(key)
	if err != nil {
		return 0, err
	}
	if n < 0 || n > math.MaxUint32 {
		return 0, fmt.Errorf("gguf: metadata %q = %d out of range for uint32: %w", key, n, ErrFormat)
	}
	return uint32(n), nil
}

// Float32 returns a float value (float32 or float64; integers are converted).
func (m *Metadata) Float32(key string) (float32, error) {
	v, err := m.get(key)
	if err != nil {
		return 0, err
	}
	switch x := v.V.(type) {
	case float32:
		return x, nil
	case float64:
		return float32(x), nil
	}
	if n, ok := asInt64(v); ok {
		return float32(n), nil
	}
	return 0, typeErr(key, v, "float")
}

// Bool returns a boolean value.
func (m *Metadata) Bool(key string) (bool, error) {
	v, err := m.get(key)
	if err != nil {
		return false, err
	}
	b, ok := v.V.(bool)
	if !ok {
		return false, typeErr(key, v, "bool")
	}
	return b, nil
}

// Strings returns an array of strings.
func (m *Metadata) Strings(key string) ([]string, error) {
	v, err := m.get(key)
	if err != nil {
		return nil, err
	}
	s, ok := v.V.([]string)
	if !ok {
		return nil, typeErr(key, v, "array of string")
	}
	return s, nil
}

// Float32s returns an array of float32.
func (m *Metadata) Float32s(key string) ([]float32, error) {
	v, err := m.get(key)
	if err != nil {
		return nil, err
	}
	s, ok := v.V.([]float32)
	if !ok {
		return nil, typeErr(key, v, "array of float32")
	}
	return s, nil
}

// Int32s returns an array of integers that fit in int32 (int32, uint8, int8,
// uint16, int16 or uint32 arrays are accepted).
func (m *Metadata) Int32s(key string) ([]int32, error) {
	v, err := m.get(key)
	if err != nil {
		return nil, err
	}
	switch s := v.V.(type) {
	case []int32:
		return s, nil
	case []uint32:
		out := make([]int32, len(s))
		for i, x := range s {
			if x > math.MaxInt32 {
				return nil, fmt.Errorf("gguf: metadata %q[%d] = %d out of range for int32: %w", key, i, x, ErrFormat)
			}
			out[i] = int32(x)
		}
		return out, nil
	case []int8:
		out := make([]int32, len(s))
		for i, x := range s {
			out[i] = int32(x)
		}
		return out, nil
	case []uint8:
		out := make([]int32, len(s))
		for i, x := range s {
			out[i] = int32(x)
		}
		return out, nil
	case []int16:
		out := make([]int32, len(s))
		for i, x := range s {
			out[i] = int32(x)
		}
		return out, nil
	case []uint16:
		out := make([]int32, len(s))
		for i, x := range s {
			out[i] = int32(x)
		}
		return out, nil
	}
	return nil, typeErr(key, v, "array of integers")
}

// ArrayLen returns the length of an array value.
func (m *Metadata) ArrayLen(key string) (int, error) {
	v, err := m.get(key)
	if err != nil {
		return 0, err
	}
	if v.Type != TypeArray {
		return 0, typeErr(key, v, "array")
	}
	return arrayLen(v.V), nil
}

func arrayLen(a any) int {
	switch s := a.(type) {
	case []uint8:
		return len(s)
	case []int8:
		return len(s)
	case []uint16:
		return len(s)
	case []int16:
		return len(s)
	case []uint32:
		return len(s)
	case []int32:
		return len(s)
	case []float32:
		return len(s)
	case []bool:
		return len(s)
	case []string:
		return len(s)
	case []uint64:
		return len(s)
	case []int64:
		return len(s)
	case []float64:
		return len(s)
	case []Value:
		return len(s)
	}
	return 0
}
