// Package kv owns the attention key/value cache: per-layer K and V rows
// indexed by slot, a committed prefix that every new token attends to, and
// scratch slots past it where a batch (a chain or a token tree) writes its
// entries before the caller decides which of them to keep.
//
// Keeping is cheap by construction: Commit moves only the kept entries that
// are not already in place (a chain's never move), and Truncate rolls the
// prefix back by changing one number. Entries are stored after
// RoPE, so an entry never needs its position again. Entries are IEEE half
// precision, as in llama.cpp's default cache: half the memory of float32,
// and the same rounding the reference results were computed with.
package kv

import (
	"fmt"
	"math"
	"runtime"
)

// Cache holds keys and values for every layer.
type Cache struct {
	layers int
	dim    int        // floats per entry: kv heads × head dim
	cap    int        // slots
	k, v   [][]uint16 // per layer: (cap, dim) halves
	n      int        // committed entries: slots [0, n)
}

// New returns a cache of capacity slots for layers layers of entries of dim
// floats. Memory is reserved, not touched: pages become resident as slots
// are written.
func New(layers, dim, capacity int) (*Cache, error) {
	if layers <= 0 || dim <= 0 || capacity <= 0 {
		return nil, fmt.Errorf("kv: invalid shape %d layers × %d slots × %d", layers, capacity, dim)
	}
	if Bytes(layers, dim, capacity) < 0 {
		return nil, fmt.Errorf("kv: a cache of %d layers × %d slots × %d is too large to address", layers, capacity, dim)
	}
	c := &Cache{layers: layers, dim: dim, cap: capacity, k: make([][]uint16, layers), v: make([][]uint16, layers)}
	per := capacity * dim
	mem, free := reserve(2 * layers * per)
	for l := range layers {
		c.k[l] = mem[2*l*per : (2*l+1)*per : (2*l+1)*per]
		c.v[l] = mem[(2*l+1)*per : (2*l+2)*per : (2*l+2)*per]
	}
	// The mapping goes once the cache is unreachable: every slice of it
	// is taken from the cache by its users while they hold the cache (a
	// model state, a prefix), never kept past it.
	runtime.AddCleanup(c, func(f func()) { f() }, free)
	return c, nil
}

// Bytes is the memory a cache of capacity slots for layers layers of
// entries of dim floats reserves, or -1 if that does not fit an int (or
// the shape is not positive).
func Bytes(layers, dim, capacity int) int64 {
	if layers <= 0 || dim <= 0 || capacity <= 0 {
		return -1
	}
	// Each layer's K (and V) is one slice of capacity·dim halves.
	perLayer := uint64(capacity) * uint64(dim)
	if perLayer/uint64(dim) != uint64(capacity) || perLayer > math.MaxInt/2 {
		return -1
	}
	total := perLayer * 2 * 2 * uint64(layers)
	if total/uint64(layers) != perLayer*4 || total > math.MaxInt64 {
		return -1
	}
	return int64(total)
}

// Len is the number of committed entries.
func (c *Cache) Len() int { return c.n }

// Cap is the number of slots.
func (c *Cache) Cap() int { return c.cap }

// Dim is the number of floats in one entry.
func (c *Cache) Dim() int { return c.dim }

// Bytes is the memory the cache reserves.
func (c *Cache) Bytes() int64 { return int64(c.layers) * int64(c.cap) * int64(c.dim) * 2 * 2 }

// K returns the key entry (F16 bits) of a layer at a slot.
func (c *Cache) K(layer, slot int) []uint16 {
	o := slot * c.dim
	return c.k[layer][o : o+c.dim : o+c.dim]
}

// V returns the value entry (F16 bits) of a layer at a slot.
func (c *Cache) V(layer, slot int) []uint16 {
	o := slot * c.dim
	return c.v[layer][o : o+c.dim : o+c.dim]
}

// Keys returns the keys of slots [0, n) of a layer, back to back.
func (c *Cache) Keys(layer, n int) []uint16 { return c.k[layer][:n*c.dim] }

// Values returns the values of slots [0, n) of a layer, back to back.
func (c *Cache) Values(layer, n int) []uint16 { return c.v[layer][:n*c.dim] }

// Commit appends the entries at the given scratch slots (each ≥ Len, in
// increasing order) to the committed prefix, in that order. An entry already
// at its destination is not copied, so committing a whole chain costs nothing.
func (c *Cache) Commit(slots []int) error {
	if c.n+len(slots) > c.cap {
		return fmt.Errorf("kv: commit of %d entries overflows the cache (%d of %d used)", len(slots), c.n, c.cap)
	}
	prev := c.n - 1
	for _, s := range slots {
		if s <= prev || s >= c.cap {
			return fmt.Errorf("kv: commit slot %d out of order or range (after %d, capacity %d)", s, prev, c.cap)
		}
		prev = s
	}
	for i, s := range slots {
		dst := c.n + i
		if s == dst {
			continue
		}
		for l := 0; l < c.layers; l++ {
			copy(c.K(l, dst), c.K(l, s))
			copy(c.V(l, dst), c.V(l, s))
		}
	}
	c.n += len(slots)
	return nil
}

// Truncate rolls the committed prefix back to n entries.
func (c *Cache) Truncate(n int) error {
	if n < 0 || n > c.n {
		return fmt.Errorf("kv: truncate to %d outside [0, %d]", n, c.n)
	}
	c.n = n
	return nil
}
