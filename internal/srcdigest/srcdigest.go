// Package srcdigest owns the digest of a package's sources that stamps
// quant's kernels (quant.KernelRevision): the generator that writes the
// stamp and the test that checks it is current hash the same files the same
// way.
package srcdigest

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Dir returns a short hex digest of the Go (not _test.go) and assembly
// files in dir, except the file named skip: their names and contents, in
// name order. Every build's files count, whatever GOOS and GOARCH.
func Dir(dir, skip string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	var names []string
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || n == skip || strings.HasSuffix(n, "_test.go") {
			continue
		}
		if strings.HasSuffix(n, ".go") || strings.HasSuffix(n, ".s") {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	h := sha256.New()
	for _, n := range names {
		data, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			return "", err
		}
		var size [8]byte
		binary.LittleEndian.PutUint64(size[:], uint64(len(data)))
		h.Write([]byte(n))
		h.Write([]byte{0})
		h.Write(size[:])
		h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}
