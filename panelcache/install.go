package panelcache

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"shade/gguf"
	"shade/par"
	"shade/quant"
)

// panelsInUse is quant.PanelsInUse; tests of the file's handling replace it
// on CPUs without panel kernels.
var panelsInUse = quant.PanelsInUse

// statfs is unix.Statfs; tests replace it to fake a full disk.
var statfs = unix.Statfs

// Install gives the repackable matrices mats of model file f (views of its
// mapped data, as model.LoadWeights makes them) the row panels they compute
// on, as o says: mapped from the model's cache file (built first on a
// miss), or repacked into memory. Matrices already repacked are left as
// they are. It never fails: on any problem with the cache it repacks in
// memory and says why in the Result's Warning (and o.Warn). Nothing is
// repacked when quant.PanelsInUse is false.
func Install(p *par.Pool, f *gguf.File, mats []quant.Matrix, o Options) Result {
	t0 := time.Now()
	var todo []quant.Matrix
	var total int64
	seen := make(map[*byte]bool) // a tied head is the embedding
	for _, m := range mats {
		if m.PanelBytes() > 0 && !m.Repacked() && !seen[unsafe.SliceData(m.Data)] {
			seen[unsafe.SliceData(m.Data)] = true
			todo = append(todo, m)
			total += int64(m.PanelBytes())
		}
	}
	if o.Mode == Off || !panelsInUse() || len(todo) == 0 {
		return Result{Source: SourceNone, Seconds: since(t0)}
	}
	minBytes := o.MinBytes
	if minBytes == 0 {
		minBytes = DefaultMinBytes
	}
	if o.Mode == Memory || total < minBytes || f == nil || !f.Mapped() || f.Path == "" {
		return inMemory(p, todo, t0, "")
	}
	dir := o.Dir
	if dir == "" {
		dir = DefaultDir()
	}
	res, rest, err := fromCache(p, f, dir, todo)
	if err != nil {
		msg := fmt.Sprintf("panel cache: %v; repacking in memory instead", err)
		if o.Warn != nil {
			o.Warn(msg)
		}
		return inMemory(p, todo, t0, msg)
	}
	if res.Warning != "" && o.Warn != nil {
		o.Warn(res.Warning)
	}
	for _, m := range rest { // not in the file's tensor table: no cache for them
		if m.Repack(p) {
			res.Bytes += int64(m.PanelBytes())
		}
	}
	res.Seconds = since(t0)
	return res
}

func inMemory(p *par.Pool, mats []quant.Matrix, t0 time.Time, warning string) Result {
	r := Result{Source: SourceMemory, Warning: warning}
	for _, m := range mats {
		if m.Repack(p) {
			r.Bytes += int64(m.PanelBytes())
		}
	}
	r.Seconds = since(t0)
	return r
}

// candidates lists the tensors of f that have row panels, as
// quant.Repackable decides for the matrices made of them on this CPU, and
// their panels' sizes (Q4_K panels are 3% larger than the tensor).
func candidates(f *gguf.File) (tensors []int, sizes map[int]int64) {
	sizes = make(map[int]int64)
	for i, ti := range f.Tensors {
		if len(ti.Dims) != 2 || ti.Dims[1] == 0 || ti.Dims[0] == 0 || ti.Dims[0] > 1<<40 || ti.Dims[1] > 1<<40 {
			continue
		}
		m, err := quant.NewMatrix(ti.Type, int(ti.Dims[1]), int(ti.Dims[0]), f.TensorData(&f.Tensors[i]))
		if err != nil {
			continue
		}
		if n := quant.Repackable(m, nil).PanelBytes(); n > 0 {
			tensors = append(tensors, i)
			sizes[i] = int64(n)
		}
	}
	return tensors, sizes
}

// fromCache installs the panels of mats from the cache file of f in dir,
// building it if needed. rest are the matrices that are no tensor of f
// (left to the caller). On error nothing is installed.
func fromCache(p *par.Pool, f *gguf.File, dir string, mats []quant.Matrix) (res Result, rest []quant.Matrix, err error) {
	if dir == "" {
		return res, nil, errors.New("no cache directory (set $SHADE_PANEL_CACHE or --panel-cache)")
	}
	tensors, sizes := candidates(f)
	byAddr := make(map[uintptr]int, len(tensors))
	for _, i := range tensors {
		d := f.TensorData(&f.Tensors[i])
		byAddr[uintptr(unsafe.Pointer(unsafe.SliceData(d)))] = i
	}
	want := make(map[int]quant.Matrix)
	for _, m := range mats {
		if i, ok := byAddr[uintptr(unsafe.Pointer(unsafe.SliceData(m.Data)))]; ok && uint64(len(m.Data)) == f.Tensors[i].Size {
			want[i] = m
		} else {
			rest = append(rest, m)
		}
	}
	key, err := modelKey(f, tensors)
	if err != nil {
		return res, nil, err
	}
	path := cachePath(dir, f.Path)
	res.Path = path

	// Without the lock first: a cache file is only ever replaced whole
	// (rename), so one that opens and checks is complete.
	mp, h, problem := open(path, key)
	if mp != nil {
		if problem = verify(p, mp, h, want); problem != nil {
			mp.put()
			mp = nil
		}
	}
	res.Source = SourceHit
	if mp == nil {
		var built bool
		if mp, h, built, err = build(p, f, path, key, tensors, sizes, want); err != nil {
			return res, nil, err
		}
		if built {
			res.Source = SourceBuilt
		}
		if problem != nil && !errors.Is(problem, errStale) && !errors.Is(problem, fs.ErrNotExist) {
			res.Warning = fmt.Sprintf("panel cache %s: %v: rebuilt it", path, problem)
		}
	}
	defer mp.put()
	res.FileBytes = h.total
	byTensor := make(map[int]*entry, len(h.entries))
	for k := range h.entries {
		byTensor[h.entries[k].tensor] = &h.entries[k]
	}
	for i, m := range want {
		e := byTensor[i]
		if e == nil || e.typ != m.Type || e.rows != m.Rows || e.cols != m.Cols || e.size != int64(m.PanelBytes()) {
			return res, nil, fmt.Errorf("%s has no panels for tensor %q", path, f.Tensors[i].Name)
		}
	}
	for i, m := range want {
		e := byTensor[i]
		b := mp.b[e.off : e.off+e.size]
		mp.refs.Add(1)
		if err := m.UsePanels(b, func() { mp.drop(b); mp.put() }); err != nil {
			mp.refs.Add(-1)
			rest = append(rest, m) // raced with another repack: harmless
			continue
		}
		res.Bytes += e.size
	}
	return res, rest, nil
}

// mapping is a read-only shared mapping of a cache file, unmapped when the
// last matrix using it drops its panels.
type mapping struct {
	b    []byte
	refs atomic.Int64
}

func (mp *mapping) put() {
	if mp.refs.Add(-1) == 0 {
		_ = unix.Munmap(mp.b)
	}
}

// drop takes the whole pages of b (a slice of mp) out of the resident set
// at once: the page cache keeps them for whoever else maps the file.
func (mp *mapping) drop(b []byte) {
	lo, hi := pageRange(mp.b, b, false)
	if hi > lo {
		_ = unix.Madvise(mp.b[lo:hi], unix.MADV_DONTNEED)
	}
}

// pageRange is the range of whole pages of mp.b inside b (outward false),
// or covering it (outward true), as offsets into mp.b.
func pageRange(all, b []byte, outward bool) (int, int) {
	page := os.Getpagesize()
	start := int(uintptr(unsafe.Pointer(unsafe.SliceData(b))) - uintptr(unsafe.Pointer(unsafe.SliceData(all))))
	end := start + len(b)
	if outward {
		return start &^ (page - 1), min(len(all), (end+page-1)&^(page-1))
	}
	return (start + page - 1) &^ (page - 1), end &^ (page - 1)
}

// open maps the cache file at path if it is complete and keyed to key.
// A nil mapping comes with the reason (fs.ErrNotExist, errStale, or what
// is wrong with the file).
func open(path string, key [32]byte) (*mapping, *header, error) {
	fd, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer fd.Close()
	return mapFile(fd, key)
}

func mapFile(fd *os.File, key [32]byte) (*mapping, *header, error) {
	st, err := fd.Stat()
	if err != nil {
		return nil, nil, err
	}
	h, err := readHeader(fd, st.Size(), key)
	if err != nil {
		return nil, nil, err
	}
	if h.total > int64(^uint(0)>>1) {
		return nil, nil, fmt.Errorf("%d bytes: too large to map", h.total)
	}
	b, err := unix.Mmap(int(fd.Fd()), 0, int(h.total), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, nil, fmt.Errorf("mmap: %w", err)
	}
	hugePages(b)
	mp := &mapping{b: b}
	mp.refs.Store(1)
	return mp, h, nil
}

// verify checks the checksums of the panels of the tensors in want, in
// parallel: the pages are read once here, which the first pass would do
// anyway.
func verify(p *par.Pool, mp *mapping, h *header, want map[int]quant.Matrix) error {
	type piece struct {
		e     *entry
		k     int
		sum   *uint32
		check []uint32
	}
	var pieces []piece
	sums := make(map[*entry][]uint32)
	for k := range h.entries {
		e := &h.entries[k]
		if _, ok := want[e.tensor]; !ok {
			continue
		}
		n := int((e.size + int64(e.piece) - 1) / int64(e.piece))
		s := make([]uint32, n)
		sums[e] = s
		for c := range n {
			pieces = append(pieces, piece{e: e, k: c, sum: &s[c]})
		}
	}
	p.For(len(pieces), func(lo, hi int) {
		for _, pc := range pieces[lo:hi] {
			a := pc.e.off + int64(pc.k)*int64(pc.e.piece)
			b := mp.b[a:min(a+int64(pc.e.piece), pc.e.off+pc.e.size)]
			if l, h := pageRange(mp.b, b, true); h > l {
				populate(mp.b[l:h]) // one call, not a fault a page
			}
			*pc.sum = crc32.Checksum(b, castagnoli)
		}
	})
	for e, s := range sums {
		if combine(s) != e.sum {
			return fmt.Errorf("checksum mismatch in tensor %d's panels", e.tensor)
		}
	}
	return nil
}

func combine(sums []uint32) uint32 {
	b := make([]byte, 0, 4*len(sums))
	for _, s := range sums {
		b = binary.LittleEndian.AppendUint32(b, s)
	}
	return crc32.Checksum(b, castagnoli)
}

// reserveFree is the free space a build leaves on the cache's file system:
// 5% of it, at most 1 GiB, so that a cache never fills a phone's storage.
func reserveFree(st *unix.Statfs_t) int64 {
	return min(int64(st.Blocks)*int64(st.Bsize)/20, 1<<30)
}

// build writes the cache file of f's tensors at path and maps it. It holds
// an exclusive lock on path+".lock" meanwhile: a second process building
// the same file waits, then finds it built.
//
// built is false when it found the file built (by another process) once
// it had the lock; the tensors in want are then checked as on a hit.
func build(p *par.Pool, f *gguf.File, path string, key [32]byte, tensors []int, sizes map[int]int64, want map[int]quant.Matrix) (mp *mapping, h *header, built bool, err error) {
	mp, h, err = buildLocked(p, f, path, key, tensors, sizes, want, &built)
	return mp, h, built, err
}

func buildLocked(p *par.Pool, f *gguf.File, path string, key [32]byte, tensors []int, sizes map[int]int64, want map[int]quant.Matrix, built *bool) (*mapping, *header, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, err
	}
	lock, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, nil, err
	}
	defer lock.Close() // and with it the lock
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil && !errors.Is(err, syscall.ENOTSUP) && !errors.Is(err, syscall.ENOSYS) {
		return nil, nil, fmt.Errorf("locking %s.lock: %w", path, err)
	}
	if mp, h, err := open(path, key); err == nil {
		if verify(p, mp, h, want) == nil {
			return mp, h, nil // built while we waited
		}
		mp.put()
	}
	*built = true
	// Builders hold the lock, so temporary files left now are of builders
	// that died.
	if old, _ := filepath.Glob(path + ".tmp*"); len(old) > 0 {
		for _, o := range old {
			_ = os.Remove(o)
		}
	}

	h := &header{key: key}
	off := int64(fixedHeader + entryBytes*len(tensors) + 4)
	for _, i := range tensors {
		ti := &f.Tensors[i]
		off = (off + dataAlign - 1) / dataAlign * dataAlign
		h.entries = append(h.entries, entry{tensor: i, typ: ti.Type, rows: int(ti.Dims[1]), cols: int(ti.Dims[0]), off: off, size: sizes[i]})
		off += sizes[i]
	}
	h.total = off
	var st unix.Statfs_t
	if err := statfs(dir, &st); err == nil {
		if free := int64(st.Bavail) * int64(st.Bsize); free-h.total < reserveFree(&st) {
			return nil, nil, fmt.Errorf("%s needs %s, %s free on its file system (and %s kept free)",
				path, human(h.total), human(free), human(reserveFree(&st)))
		}
	}
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".tmp*")
	if err != nil {
		return nil, nil, err
	}
	done := false
	defer func() {
		tmp.Close()
		if !done {
			os.Remove(tmp.Name())
		}
	}()
	if err := reserve(tmp.Fd(), h.total); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	for k := range h.entries {
		e := &h.entries[k]
		ti := &f.Tensors[e.tensor]
		m, err := quant.NewMatrix(ti.Type, e.rows, e.cols, f.TensorData(ti))
		if err != nil {
			return nil, nil, err
		}
		e.piece = max(1, pieceBytes/m.PanelBlockBytes()) * m.PanelBlockBytes()
		sums := make([]uint32, (e.size+int64(e.piece)-1)/int64(e.piece))
		if err := m.WritePanels(p, tmp, e.off, e.piece, func(c int, b []byte) { sums[c] = crc32.Checksum(b, castagnoli) }); err != nil {
			return nil, nil, fmt.Errorf("writing %s: %w", tmp.Name(), err)
		}
		e.sum = combine(sums)
		f.ReleasePages(m.Data) // read once; what stays resident is the panels
	}
	if _, err := tmp.WriteAt(h.marshal(), 0); err != nil {
		return nil, nil, fmt.Errorf("writing %s: %w", tmp.Name(), err)
	}
	if err := tmp.Truncate(h.total); err != nil {
		return nil, nil, err
	}
	if err := tmp.Sync(); err != nil {
		return nil, nil, fmt.Errorf("writing %s: %w", tmp.Name(), err)
	}
	dropCached(tmp, h.total) // read back below in huge folios
	if err := os.Rename(tmp.Name(), path); err != nil {
		return nil, nil, err
	}
	done = true
	if d, err := os.Open(dir); err == nil { // the rename itself, durably
		_ = d.Sync()
		d.Close()
	}
	mp, h2, err := mapFile(tmp, key)
	if err != nil {
		return nil, nil, err
	}
	populate(mp.b) // the pages just dropped, in one pass, before the first product
	return mp, h2, nil
}
