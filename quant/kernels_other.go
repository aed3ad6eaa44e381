//go:build !amd64 || noasm || !gc

package quant

// Without per-architecture kernels (another GOARCH, the noasm tag or a
// compiler other than gc) archBases stays empty and every kernel is the
// pure-Go reference.
