// Package panelcache keeps the row panels of a model's Q4_0, Q8_0 and Q4_K
// matrices (quant/panel.go, quant/panelk.go) in a file built once and mapped read-only, so
// that they are page cache like the model file itself: the kernel can evict
// them under memory pressure and read them back, processes running the same
// model share one copy, and a later start maps them instead of repacking.
// The price is disk space: a cache file is as large as the model's Q4_0 and
// Q8_0 tensors and 3% more than its Q4_K ones. docs/panels.md weighs it against repacking into anonymous
// memory at every start and computing in the file's layout.
//
// A cache file belongs to one model file, named after its path, and is
// keyed to its identity (size, modification and status-change times, inode,
// a hash of the GGUF header and tensor table and of samples of every panel
// tensor) and to the panel layout version: a file whose key differs is rebuilt, never used.
// Any problem (no space, an unwritable directory, a corrupt or truncated
// file) makes Install report a warning and leave the matrices to be
// repacked in memory; it never fails a load.
package panelcache

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"time"

	"shade/gguf"
	"shade/quant"
)

// Mode says where a model's row panels live.
type Mode int

const (
	// Cache maps them from a panel cache file, building it on a miss.
	Cache Mode = iota
	// Memory repacks them at every start into anonymous memory.
	Memory
	// Off computes in the file's layout: nothing is repacked.
	Off
)

func (m Mode) String() string {
	switch m {
	case Cache:
		return "cache"
	case Memory:
		return "memory"
	case Off:
		return "off"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// ParseMode parses "cache", "memory" or "off".
func ParseMode(s string) (Mode, error) {
	for _, m := range []Mode{Cache, Memory, Off} {
		if s == m.String() {
			return m, nil
		}
	}
	return 0, fmt.Errorf("panels %q: want cache, memory or off", s)
}

// DefaultMinBytes is the smallest model (in bytes of panels) given a cache
// file: below it repacking in memory takes milliseconds and a few
// megabytes, and a file would only litter the cache.
const DefaultMinBytes = 32 << 20

// Options configure Install. The zero value builds and maps a cache file in
// DefaultDir for models of at least DefaultMinBytes of panels.
type Options struct {
	Mode Mode
	// Dir is the cache directory ("": DefaultDir).
	Dir string
	// MinBytes: models with fewer bytes of panels are repacked in memory
	// (0: DefaultMinBytes; negative: no minimum).
	MinBytes int64
	// Warn, when not nil, is given the one warning line of a fallback.
	Warn func(string)
}

// DefaultDir is $SHADE_PANEL_CACHE, or the user's cache directory's
// shade/panels ($XDG_CACHE_HOME/shade/panels or ~/.cache/shade/panels on
// Linux), or "" when there is none.
func DefaultDir() string {
	if d := os.Getenv("SHADE_PANEL_CACHE"); d != "" {
		return d
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "shade", "panels")
}

// Source says where the panels of a load came from.
type Source string

const (
	SourceNone   Source = "none"             // nothing repacked (off, or no panel kernels on this CPU)
	SourceHit    Source = "cache hit"        // mapped from an existing cache file
	SourceBuilt  Source = "built into cache" // a cache file built now, then mapped
	SourceMemory Source = "memory"           // repacked into anonymous memory
)

// Result describes where a model's panels came from.
type Result struct {
	Source  Source  `json:"source"`
	Bytes   int64   `json:"bytes"`   // bytes of panels now in use
	Seconds float64 `json:"seconds"` // time to map, build or repack them
	Path    string  `json:"path,omitempty"`
	// FileBytes is the cache file's size on disk.
	FileBytes int64 `json:"file_bytes,omitempty"`
	// Warning is the fallback's warning, if there was one.
	Warning string `json:"warning,omitempty"`
}

// String is the result as one line of a report.
func (r Result) String() string {
	s := fmt.Sprintf("%s of row panels: %s in %.2f s", human(r.Bytes), r.Source, r.Seconds)
	if r.Path != "" {
		s += fmt.Sprintf(" (%s, %s on disk)", r.Path, human(r.FileBytes))
	}
	return s
}

func human(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d bytes", n)
}

// File format (little endian). The header, then each tensor's panels at an
// offset aligned to dataAlign (so each starts on a page, and on a 64-byte
// boundary as the kernels want):
//
//	[0, 8)    magic "SHADEPNL"
//	[8, 12)   fileVersion
//	[12, 16)  quant.PanelLayout
//	[16, 20)  header bytes (entries and checksum included)
//	[20, 24)  number of entries
//	[24, 56)  key
//	[56, 64)  total file size
//	[64, …)   entries of entryBytes, then the CRC-32C of all before it
//
// An entry: tensor index in the GGUF table u32, type u32, rows u64, cols
// u64, offset u64, bytes u64, piece bytes u32 (the panels are checked in
// pieces of whole panels of this size, the last one shorter), checksum u32
// (the CRC-32C of the pieces' CRC-32Cs, 4 bytes each, in order).
const (
	magic       = "SHADEPNL"
	fileVersion = 1
	fixedHeader = 64
	entryBytes  = 48
	dataAlign   = 16 << 10
	pieceBytes  = 1 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// entry is one tensor's panels in a cache file.
type entry struct {
	tensor     int
	typ        quant.Type
	rows, cols int
	off, size  int64
	piece      int
	sum        uint32
}

// header is a parsed or to-be-written cache file header.
type header struct {
	key     [32]byte
	total   int64
	entries []entry
}

func (h *header) marshal() []byte {
	b := make([]byte, fixedHeader, h.size())
	copy(b, magic)
	binary.LittleEndian.PutUint32(b[8:], fileVersion)
	binary.LittleEndian.PutUint32(b[12:], quant.PanelLayout)
	binary.LittleEndian.PutUint32(b[16:], uint32(h.size()))
	binary.LittleEndian.PutUint32(b[20:], uint32(len(h.entries)))
	copy(b[24:56], h.key[:])
	binary.LittleEndian.PutUint64(b[56:], uint64(h.total))
	for _, e := range h.entries {
		b = binary.LittleEndian.AppendUint32(b, uint32(e.tensor))
		b = binary.LittleEndian.AppendUint32(b, uint32(e.typ))
		b = binary.LittleEndian.AppendUint64(b, uint64(e.rows))
		b = binary.LittleEndian.AppendUint64(b, uint64(e.cols))
		b = binary.LittleEndian.AppendUint64(b, uint64(e.off))
		b = binary.LittleEndian.AppendUint64(b, uint64(e.size))
		b = binary.LittleEndian.AppendUint32(b, uint32(e.piece))
		b = binary.LittleEndian.AppendUint32(b, e.sum)
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

func (h *header) size() int { return fixedHeader + entryBytes*len(h.entries) + 4 }

// errStale is a well-formed cache file of another model file or layout.
var errStale = errors.New("stale")

// maxEntries bounds a header read from disk (a model has a few hundred
// matrices; GGUF tables are bounded alike).
const maxEntries = 1 << 20

// readHeader reads and checks the header of a cache file of size bytes:
// errStale when it belongs to another file or layout, another error when it
// is malformed or truncated.
func readHeader(f *os.File, size int64, key [32]byte) (*header, error) {
	var fixed [fixedHeader]byte
	if _, err := f.ReadAt(fixed[:], 0); err != nil {
		return nil, fmt.Errorf("reading the header: %w", err)
	}
	if string(fixed[:8]) != magic {
		return nil, errors.New("not a panel cache file")
	}
	if binary.LittleEndian.Uint32(fixed[8:]) != fileVersion || binary.LittleEndian.Uint32(fixed[12:]) != quant.PanelLayout {
		return nil, errStale
	}
	n := int64(binary.LittleEndian.Uint32(fixed[20:]))
	hb := int64(binary.LittleEndian.Uint32(fixed[16:]))
	if n > maxEntries || hb != fixedHeader+entryBytes*n+4 || hb > size {
		return nil, fmt.Errorf("header of %d bytes for %d entries in a %d-byte file", hb, n, size)
	}
	b := make([]byte, hb)
	if _, err := f.ReadAt(b, 0); err != nil {
		return nil, fmt.Errorf("reading the header: %w", err)
	}
	if crc32.Checksum(b[:hb-4], castagnoli) != binary.LittleEndian.Uint32(b[hb-4:]) {
		return nil, errors.New("header checksum mismatch")
	}
	h := &header{total: int64(binary.LittleEndian.Uint64(b[56:]))}
	copy(h.key[:], b[24:56])
	if h.key != key {
		return nil, errStale
	}
	if h.total != size {
		return nil, fmt.Errorf("file is %d bytes, header says %d (truncated?)", size, h.total)
	}
	for i := range n {
		e := b[fixedHeader+entryBytes*i:]
		en := entry{
			tensor: int(binary.LittleEndian.Uint32(e)),
			typ:    quant.Type(binary.LittleEndian.Uint32(e[4:])),
			rows:   int(binary.LittleEndian.Uint64(e[8:])),
			cols:   int(binary.LittleEndian.Uint64(e[16:])),
			off:    int64(binary.LittleEndian.Uint64(e[24:])),
			size:   int64(binary.LittleEndian.Uint64(e[32:])),
			piece:  int(binary.LittleEndian.Uint32(e[40:])),
			sum:    binary.LittleEndian.Uint32(e[44:]),
		}
		if en.off < hb || en.off%dataAlign != 0 || en.size < 0 || en.off > size || en.size > size-en.off || en.piece <= 0 {
			return nil, fmt.Errorf("entry %d out of the file", i)
		}
		h.entries = append(h.entries, en)
	}
	return h, nil
}

// modelKey is the identity of model file f (opened from its path) for the
// panels of tensors: what makes a cache file its own.
func modelKey(f *gguf.File, tensors []int) ([32]byte, error) {
	st, err := os.Stat(f.Path)
	if err != nil {
		return [32]byte{}, err
	}
	if uint64(st.Size()) != f.Size {
		return [32]byte{}, fmt.Errorf("%s changed since it was opened", f.Path)
	}
	h := sha256.New()
	var b []byte
	b = append(b, "shade panel cache\x00"...)
	b = binary.LittleEndian.AppendUint32(b, fileVersion)
	b = binary.LittleEndian.AppendUint32(b, quant.PanelLayout)
	b = binary.LittleEndian.AppendUint64(b, uint64(st.Size()))
	b = binary.LittleEndian.AppendUint64(b, uint64(st.ModTime().UnixNano()))
	ino, ctime := inode(st)
	b = binary.LittleEndian.AppendUint64(b, ino)
	b = binary.LittleEndian.AppendUint64(b, uint64(ctime))
	h.Write(b)
	data := f.Bytes()
	h.Write(data[:min(f.DataOffset, uint64(len(data)))]) // header, metadata, tensor table
	// A few bytes of every tensor repacked: a file rewritten in place with
	// the same size and time, and the same table, still changes the key
	// unless its data is the same where it is sampled.
	for _, i := range tensors {
		d := f.TensorData(&f.Tensors[i])
		const sample = 64
		for _, at := range []int{0, len(d) / 2, len(d) - sample} {
			if at >= 0 && at+sample <= len(d) {
				h.Write(d[at : at+sample])
			}
		}
	}
	var key [32]byte
	h.Sum(key[:0])
	return key, nil
}

// cachePath is the cache file of the model at path in dir: one per model
// path (a changed model replaces its own file rather than adding one).
func cachePath(dir, path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	sum := sha256.Sum256([]byte(abs))
	base := strings.TrimSuffix(filepath.Base(abs), filepath.Ext(abs))
	base = strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '_'
	}, base)
	if len(base) > 64 {
		base = base[:64]
	}
	return filepath.Join(dir, fmt.Sprintf("%s-%x.panels", base, sum[:8]))
}

// since is seconds since t0.
func since(t0 time.Time) float64 { return time.Since(t0).Seconds() }
