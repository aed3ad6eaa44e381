package quant

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"shade/par"
)

// Row panels: Q4_0 and Q8_0 weights repacked so that a gemm tile reads one
// contiguous run instead of gemmRows rows at a stride.
//
// In the file's layout a tile's kernel has to gather each block of 16 rows
// (16 loads a block) and transpose them into lanes before VPDPBUSD can use
// them; that transpose and the 16 scale inserts, not memory, bound decoding
// on AVX-512 CPUs. In a panel the same bytes sit in the order the kernel
// consumes them. The panel of rows [16p, 16p+16) is 16·rowBytes bytes,
// block after block; block b of it is 16·blockBytes bytes:
//
//	[0, 32)             the 16 rows' f16 scales, row i at 2i
//	[32+64g, 96+64g)    group g (values 4g..4g+3; for Q4_0 the nibble
//	                    bytes 4g..4g+3, i.e. values 4g.. and 16+4g..),
//	                    row i at 4i
//
// Q4_0 has 4 groups of nibble bytes, Q8_0 has 8 groups of weights stored as
// unsigned bytes (w XOR 0x80, the form the gemm kernels compute with). A
// panel holds exactly the bytes of its rows, so a matrix keeps its size.
//
// The kernels computing on panels give gemmGo's bits (gemm.go), like those
// on the file's layout, so a matrix gives the same results repacked or not.
// Q4_K matrices have panels of their own layout (panelk.go).

// panelRows is the height of a panel: one gemm tile.
const panelRows = gemmRows

// PanelLayout is the version of the panel byte order above. A panel cache
// file (package panelcache) records it and is rebuilt when it changes:
// increment it with any change to packPanel or packQ4KPanel.
const PanelLayout = 2

// repackOn says whether MatMul repacks (and computes on panels); see
// UseRepack.
var repackOn atomic.Bool

func init() { repackOn.Store(true) }

// UseRepack turns repacking into row panels on (the default) or off. Off,
// MatMul computes on the file's layout even for matrices already repacked
// (their Data is still readable). It is meant for comparisons and tests and
// must not be called while kernels are running.
func UseRepack(on bool) { repackOn.Store(on) }

// packing is the shared, lazily built panel copy of a Matrix (copies of the
// Matrix share it).
//
// The panels may live outside the Go heap (panelMemory): they are freed by
// DropPanels, or once the packing is unreachable. Whoever reads them keeps
// the packing alive.
type packing struct {
	mu      sync.Mutex // held while building or dropping
	panels  atomic.Pointer[panelBuf]
	release func([]byte)
}

// panelBuf is one built copy of the panels; free returns its memory (at
// most once, whoever calls first: DropPanels or the collector).
type panelBuf struct {
	b    []byte
	free func()
}

// Repackable returns m marked to be repacked into row panels the first time
// MatMul computes on it with kernels that read panels (Q4_0 and Q8_0 with
// AVX2, AVX-512 VNNI or arm64's dot products; Q4_K with AVX2, panelk.go).
// After repacking, release (if not nil) is given m.Data, which MatMul no
// longer reads while repacking stays on: a caller whose Data
// is a read-only file mapping can drop those pages from the resident set
// (the data must stay readable, as a dropped file mapping is). The copy
// takes as much memory as the bytes it replaces (Q4_K's 3% more). m is
// returned unchanged when it cannot be repacked: another type, or rows not
// a whole number of panels.
func Repackable(m Matrix, release func([]byte)) Matrix {
	switch {
	case m.Rows == 0:
		return m
	case m.Type == Q4_0 || m.Type == Q8_0:
		if m.Rows%panelRows != 0 {
			return m
		}
	case m.Type == Q4_K:
		// Only where panel kernels compute Q4_K: elsewhere panels would
		// be memory no product reads.
		if k.gemmKPanel == nil || m.Rows%q4kPanelRows != 0 {
			return m
		}
	default:
		return m
	}
	m.pk = &packing{release: release}
	return m
}

// Repack builds m's panels now, on p, instead of at its first MatMul (so
// that a benchmark or a server's first request does not pay for it). It
// does nothing when m is not repackable, repacking is off or this CPU has
// no panel kernels, and reports whether m is repacked.
func (m Matrix) Repack(p *par.Pool) bool { return m.panelsFor(p) != nil }

// Repacked reports whether m's panels have been built.
func (m Matrix) Repacked() bool { return m.pk != nil && m.pk.panels.Load() != nil }

// DropPanels frees m's panels, if built, so that m computes on its Data
// again until it is repacked (at its next MatMul, or Repack). A weight
// streamer calls it for a layer it takes over: the layer's bytes are then
// read into its own buffers, and a resident copy would only hold memory.
// It must not be called while a MatMul on m (or a copy) runs.
func (m Matrix) DropPanels() {
	if m.pk == nil {
		return
	}
	m.pk.mu.Lock()
	defer m.pk.mu.Unlock()
	if pb := m.pk.panels.Swap(nil); pb != nil {
		pb.free()
	}
}

// PanelsInUse reports whether repackable matrices are computed on row
// panels: repacking is on and this CPU has panel kernels. When it is false
// nothing is repacked, so there is nothing to build or cache.
func PanelsInUse() bool { return (k.gemmPanel != nil || k.gemmKPanel != nil) && repackOn.Load() }

// panelShape returns the rows of one panel of m and its size in bytes.
func (m Matrix) panelShape() (rows, bytes int) {
	if m.Type == Q4_K {
		return q4kPanelRows, m.Cols / qkK * q4kTileBytes
	}
	return panelRows, panelRows * m.rowBytes()
}

// panelKernels reports whether the kernel set in use computes m's type on
// panels.
func (m Matrix) panelKernels() bool {
	if m.Type == Q4_K {
		return k.gemmKPanel != nil
	}
	return k.gemmPanel != nil
}

// PanelBytes is the size of m's panels (that of its Data, or 3% more for
// Q4_K), or 0 when m is not repackable.
func (m Matrix) PanelBytes() int {
	if m.pk == nil {
		return 0
	}
	rows, bytes := m.panelShape()
	return m.Rows / rows * bytes
}

// PanelBlockBytes is the size of one panel of m (panelRows rows, or 8 for
// Q4_K); panels are the unit in which they can be built, and a file holding
// them can be checked, independently.
func (m Matrix) PanelBlockBytes() int {
	_, bytes := m.panelShape()
	return bytes
}

// WritePanels builds the panels of m (Q4_0, Q8_0 or Q4_K, rows a whole
// number of panels; m need not be repackable) and writes them to w at off,
// in pieces built in parallel on p, each whole panels of at most about chunk bytes
// (at least one panel). sum, when not nil, is called with each piece's
// index and bytes before it is written (from several goroutines at once).
// The destination is never mapped, so a full disk is an error from w, not
// a fault.
func (m Matrix) WritePanels(p *par.Pool, w io.WriterAt, off int64, chunk int, sum func(piece int, b []byte)) error {
	rows, pb := m.panelShape()
	if (m.Type != Q4_0 && m.Type != Q8_0 && m.Type != Q4_K) || m.Rows%rows != 0 {
		return fmt.Errorf("quant: %v matrix with %d rows has no row panels", m.Type, m.Rows)
	}
	sb := rows * m.rowBytes() // a panel's rows in the file
	per := max(1, chunk/pb)
	pieces := (m.Rows/rows + per - 1) / per
	var mu sync.Mutex
	var first error
	p.For(pieces, func(lo, hi int) {
		buf := alignedBytes(per * pb)
		for c := lo; c < hi; c++ {
			q0, q1 := c*per, min((c+1)*per, m.Rows/rows)
			prefault(m.Data[q0*sb:q1*sb], false)
			out := buf[:(q1-q0)*pb]
			for q := q0; q < q1; q++ {
				m.packPanel(q, out[(q-q0)*pb:(q-q0+1)*pb])
			}
			if sum != nil {
				sum(c, out)
			}
			if _, err := w.WriteAt(out, off+int64(q0)*int64(pb)); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
				return
			}
		}
	})
	return first
}

// ErrPanels is wrapped by UsePanels' errors.
var ErrPanels = errors.New("quant: panels not installed")

// UsePanels makes b, which must hold m's panels exactly as WritePanels
// builds them and start on a 64-byte boundary, the panels m computes on,
// as if it had been repacked (its release is then given m.Data). b may be
// read-only memory, a mapping of a cache file: free is called (once) when
// m drops the panels (DropPanels) or they become unreachable. It fails
// when m is not repackable, already repacked, or b does not fit; free is
// then not called.
func (m Matrix) UsePanels(b []byte, free func()) error {
	switch {
	case m.pk == nil:
		return fmt.Errorf("%w: %v %dx%d is not repackable", ErrPanels, m.Type, m.Rows, m.Cols)
	case len(b) != m.PanelBytes():
		return fmt.Errorf("%w: %d bytes for a matrix of %d bytes of panels", ErrPanels, len(b), m.PanelBytes())
	case len(b) > 0 && uintptr(unsafe.Pointer(unsafe.SliceData(b)))%64 != 0:
		return fmt.Errorf("%w: panels not 64-byte aligned", ErrPanels)
	}
	m.pk.mu.Lock()
	defer m.pk.mu.Unlock()
	if m.pk.panels.Load() != nil {
		return fmt.Errorf("%w: already repacked", ErrPanels)
	}
	var once sync.Once
	f := func() { once.Do(free) }
	pb := &panelBuf{b: b[:len(b):len(b)], free: f}
	runtime.AddCleanup(pb, func(f func()) { f() }, f)
	m.pk.panels.Store(pb)
	if m.pk.release != nil {
		m.pk.release(m.Data)
	}
	return nil
}

// WithoutPanels returns m computing in the file's layout for good: its
// panels, if built, are dropped (for every copy of m), and it is no longer
// repackable.
func (m Matrix) WithoutPanels() Matrix {
	m.DropPanels()
	m.pk = nil
	return m
}

// panelsFor returns m's panels for a product on p, building them on first
// use, or nil when m computes on the file's layout (not repackable,
// repacking off, or no panel kernels here).
func (m Matrix) panelsFor(p *par.Pool) []byte {
	if m.pk == nil || !m.panelKernels() || !repackOn.Load() {
		return nil
	}
	if pb := m.pk.panels.Load(); pb != nil {
		return pb.b
	}
	m.pk.mu.Lock()
	defer m.pk.mu.Unlock()
	if pb := m.pk.panels.Load(); pb != nil {
		return pb.b // built while this call waited
	}
	pb := panelMemory(m.PanelBytes())
	packPanels(p, m, pb.b)
	m.pk.panels.Store(pb)
	if m.pk.release != nil {
		m.pk.release(m.Data)
	}
	return pb.b
}

// packPanels builds m's panels into out, a panel per pool task.
func packPanels(p *par.Pool, m Matrix, out []byte) {
	rows, pb := m.panelShape()
	sb := rows * m.rowBytes()
	p.For(m.Rows/rows, func(lo, hi int) {
		prefault(m.Data[lo*sb:hi*sb], false)
		prefault(out[lo*pb:hi*pb], true)
		for q := lo; q < hi; q++ {
			m.packPanel(q, out[q*pb:(q+1)*pb])
		}
	})
}

// packPanel builds panel q of m into dst.
func (m Matrix) packPanel(q int, dst []byte) {
	rows, _ := m.panelShape()
	rb := m.rowBytes()
	src := m.Data[q*rows*rb : (q+1)*rows*rb]
	if m.Type == Q4_K {
		packQ4KPanel(src, rb, m.Cols/qkK, dst)
		return
	}
	packPanel(m.Type, src, rb, dst)
}

// alignedBytes returns n zero bytes starting on a 64-byte boundary (a cache
// line, and the alignment of the kernels' 512-bit loads).
func alignedBytes(n int) []byte {
	b := make([]byte, n+64)
	off := 0
	if r := int(uintptr(unsafe.Pointer(unsafe.SliceData(b))) % 64); r != 0 {
		off = 64 - r
	}
	return b[off : off+n : off+n]
}

// packPanel repacks the panelRows rows in src (rb bytes each) into dst.
// Row by row, so that each row is read in order; fixed-size array views let
// the compiler drop most bounds checks (BenchmarkPackPanels).
func packPanel(t Type, src []byte, rb int, dst []byte) {
	nb := rb / t.BlockBytes()
	for i := 0; i < panelRows; i++ {
		row := src[i*rb : (i+1)*rb]
		if t == Q4_0 {
			for b := 0; b < nb; b++ {
				blk := (*[q4_0Bytes]byte)(row[b*q4_0Bytes:])
				out := (*[panelRows * q4_0Bytes]byte)(dst[b*panelRows*q4_0Bytes:])
				out[2*i], out[2*i+1] = blk[0], blk[1]
				for g := 0; g < 4; g++ {
					binary.LittleEndian.PutUint32(out[32+64*g+4*i:], binary.LittleEndian.Uint32(blk[2+4*g:]))
				}
			}
			continue
		}
		for b := 0; b < nb; b++ {
			blk := (*[q8_0Bytes]byte)(row[b*q8_0Bytes:])
			out := (*[panelRows * q8_0Bytes]byte)(dst[b*panelRows*q8_0Bytes:])
			out[2*i], out[2*i+1] = blk[0], blk[1]
			for g := 0; g < 8; g++ {
				binary.LittleEndian.PutUint32(out[32+64*g+4*i:], binary.LittleEndian.Uint32(blk[2+4*g:])^0x80808080)
			}
		}
	}
}

// panelBlock writes block b of row r of panels (rows of rb bytes of type t)
// back in the file's layout into blk.
func panelBlock(t Type, panels []byte, rb, r, b int, blk []byte) {
	bw := t.BlockBytes()
	groups, flip := (bw-2)/4, uint32(0)
	if t == Q8_0 {
		flip = 0x80808080
	}
	i := r % panelRows
	in := panels[(r-i)*rb+b*panelRows*bw:]
	blk[0], blk[1] = in[2*i], in[2*i+1]
	for g := 0; g < groups; g++ {
		binary.LittleEndian.PutUint32(blk[2+4*g:], binary.LittleEndian.Uint32(in[32+64*g+4*i:])^flip)
	}
}

// dequantizePanelRow is DequantizeRow for a repacked matrix.
func (m Matrix) dequantizePanelRow(panels []byte, r int, dst []float32) {
	var blk [q4_KBytes]byte
	rb, bw, bs := m.rowBytes(), m.Type.BlockBytes(), m.Type.BlockSize()
	for b := 0; b < m.Cols/bs; b++ {
		if m.Type == Q4_K {
			q4kPanelBlock(panels, m.Cols/bs, r, b, blk[:bw])
		} else {
			panelBlock(m.Type, panels, rb, r, b, blk[:bw])
		}
		dequantize(m.Type, blk[:bw], dst[b*bs:(b+1)*bs])
	}
	runtime.KeepAlive(m.pk)
}
