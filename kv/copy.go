package kv

import "fmt"

// CopyFrom makes c hold the first n committed entries of src (a cache of
// the same layers and entry size), as a branch of src that changes
// independently of it: a conversation's shared beginning forked off a
// cached one.
func (c *Cache) CopyFrom(src *Cache, n int) error {
	if c.layers != src.layers || c.dim != src.dim {
		return fmt.Errorf("kv: copy from a cache of %d layers × %d into one of %d × %d", src.layers, src.dim, c.layers, c.dim)
	}
	if n < 0 || n > src.n || n > c.cap {
		return fmt.Errorf("kv: copy of %d entries from a cache holding %d into one of %d slots", n, src.n, c.cap)
	}
	for l := range c.layers {
		copy(c.k[l][:n*c.dim], src.k[l][:n*c.dim])
		copy(c.v[l][:n*c.dim], src.v[l][:n*c.dim])
	}
	c.n = n
	return nil
}
