package quant

// The assembly comes from plain Go generators under _gen, each output marked
// "Code generated ... DO NOT EDIT."; they write paths from the module root,
// hence -C (arm64k writes paths from quant/). .ci/run regenerates everything
// and fails on any difference. This file is built for every architecture,
// because go generate skips files built for other ones. kernelrev runs last:
// it stamps the package's sources as the others left them.
//
//go:generate go run -C .. ./quant/_gen/gemm
//go:generate go run -C .. ./quant/_gen/gemmavx2
//go:generate go run -C .. ./quant/_gen/kquant
//go:generate go run -C .. ./quant/_gen/q4k512
//go:generate go run -C .. ./quant/_gen/kquant512
//go:generate go run -C .. ./quant/_gen/arm64
//go:generate go run ./_gen/arm64k
//go:generate go run -C .. ./quant/_gen/legacyarm64
//go:generate go run -C .. ./quant/_gen/kernelrev
