//go:build !(amd64 && !noasm && gc) && !(arm64 && !noasm && gc)

package quant

// Without per-architecture kernels (another GOARCH, the noasm tag or a
// compiler other than gc) there is no set but the pure-Go references.

func archKernels() []kernelSet { return nil }
