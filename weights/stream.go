package weights

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"shade/gguf"
	"shade/model"
	"shade/quant"
)

// Alignment of O_DIRECT reads: file offset, length and buffer address.
const Alignment = 4096

// Defaults of Options.
const (
	DefaultReadAhead = 2
	// Large reads, several in flight. On this machine's virtual disk 32 MiB
	// reads beat 8 MiB ones (medians of 7 interleaved passes over 512 MiB:
	// 1 × 32 MiB 1.90 GB/s, 4 × 8 MiB 1.29), since the kernel splits a
	// large O_DIRECT read into many requests in flight. The disk is shared:
	// when other tenants load it, each request in flight is a share of it
	// (medians of 4 passes under load: 1 reader 0.31 GB/s, 2 readers 0.54,
	// 4 readers 1.00), and when it is quiet the reader count makes no
	// difference that its noise does not hide.
	DefaultReaders    = 4
	DefaultChunkBytes = 32 << 20
	// maxGap is the largest hole between two tensors of a layer that one
	// read spans; a wider one splits the layer into separate reads.
	maxGap = 1 << 20
)

// Options configure a Streamer.
type Options struct {
	// ReadAhead is how many streamed layers are read ahead of the one
	// computing, wrapping around into the next pass; 0 reads each layer
	// only when the pass asks for it. It costs one layer buffer each, and
	// is capped at the number of streamed layers.
	ReadAhead int
	// Readers is how many reads of ChunkBytes are in flight at once,
	// across layer boundaries (storage needs a queue to reach its
	// bandwidth); ≤ 0: DefaultReaders.
	Readers    int
	ChunkBytes int64 // ≤ 0: DefaultChunkBytes (rounded up to Alignment)
	Layout     Layout
	// WrapReader, if set, wraps the file every read goes through; tests
	// use it to inject errors and short reads.
	WrapReader func(io.ReaderAt) io.ReaderAt
	// Warn, if set, is told of degraded operation (no O_DIRECT).
	Warn func(string)
}

// DefaultOptions are the options the CLI starts from.
func DefaultOptions() Options { return Options{ReadAhead: DefaultReadAhead} }

// readSpan is one aligned read of a layer: file bytes [off, off+length)
// into the layer's buffer at bufOff. Only the first need bytes must
// arrive (the rest is alignment padding that may lie past the end of the
// file).
type readSpan struct {
	off, length, bufOff, need int64
}

// streamLayer is how one streamed layer is read and laid out.
type streamLayer struct {
	index    int
	spans    []readSpan
	bufBytes int64       // buffer the spans need
	payload  int64       // bytes of the layer's matrices
	template model.Layer // vectors loaded once; matrices re-pointed per read
	matOff   []int64     // buffer offset of each of template.Matrices()
	matLen   []int64
}

// slot is one reused layer buffer.
type slot struct {
	buf   []byte
	layer model.Layer
	pos   int        // position in the streamed order of the layer it holds
	done  chan error // the readers' verdict on the last layer issued

	remaining atomic.Int64 // chunk reads of the layer not yet done
	mu        sync.Mutex
	err       error // the first chunk read's error
}

// Streamer serves a model's layers: resident ones from the mapped file,
// streamed ones read from storage into reused aligned buffers, ahead of
// time, in pass order. It implements model.LayerSource.
//
// Concurrency contract: Layer is called by one forward pass at a time (the
// passes of several States of the model may follow one another in any
// order, and a pass may stop early: the pipeline resets to whatever layer
// is asked for next). A layer it returns stays valid until the next Layer
// call or its ReleaseLayer. Stats and Plan may be called at any time from any goroutine. Close
// must not race with a pass.
type Streamer struct {
	m        *model.Model
	orig     model.LayerSource
	plan     Plan
	o        Options
	path     string
	file     *os.File
	direct   bool
	src      io.ReaderAt
	layers   []*streamLayer // by layer; nil when resident
	resident []*model.Layer // by layer; nil when streamed
	order    []int          // streamed layers, ascending
	posOf    []int          // layer → position in order, or -1
	wantAt   []int          // layer → position of the first streamed layer at or after it (0: the next pass's first)
	bufBytes int64

	mu         sync.Mutex // serializes Layer and Close
	free       []*slot
	queue      []*slot // issued, in position order
	held       *slot   // handed out by the last Layer call
	nextPos    int     // position of the next read to issue
	lastLayer  int
	lastReturn time.Time
	closed     bool
	reqs       chan *slot
	readerDone chan struct{}

	busyMu    sync.Mutex
	inFlight  int
	busySince time.Time

	passes, calls, gaps             atomic.Int64
	layersRead, bytesRead, readErrs atomic.Int64
	readNs, ioWaitNs, computeNs     atomic.Int64
	resets, ready                   atomic.Int64
	waiting                         atomic.Bool // a pass is blocked on a read
}

// Apply plans the target's layers for a budget in bytes (the draft's
// bytes count against it) and, unless every layer fits, streams the
// others: the Streamer is installed as target.Weights.Layers until its
// Close. With every layer resident it returns a nil Streamer.
func Apply(target *model.Model, draftBytes, budget int64, o Options) (Plan, *Streamer, error) {
	if _, ok := target.Weights.Layers.(*Streamer); ok {
		return Plan{}, nil, fmt.Errorf("weights: the model's layers are already streamed (Close the streamer first)")
	}
	plan := NewPlan(PlanInput{LayerBytes: target.Weights.LayerBytes, GlobalBytes: target.Weights.GlobalBytes,
		DraftBytes: draftBytes, Budget: budget, Layout: o.Layout})
	if plan.AllResident() {
		return plan, nil, nil
	}
	s, err := NewStreamer(target, plan, o)
	if err != nil {
		return plan, nil, err
	}
	target.Weights.Layers = s
	return plan, s, nil
}

// NewStreamer prepares to stream the plan's streamed layers of m: it opens
// the file for O_DIRECT reads (ordinary reads, with a warning, where the
// filesystem refuses), reads the streamed layers' small vectors once,
// releases their pages from the mapping and allocates ReadAhead+1 layer
// buffers. It does not install itself (Apply does).
func NewStreamer(m *model.Model, plan Plan, o Options) (*Streamer, error) {
	c := m.Config
	if plan.Layers != c.Layers || len(plan.Resident) != c.Layers {
		return nil, fmt.Errorf("weights: plan for %d layers, model has %d", plan.Layers, c.Layers)
	}
	if o.ReadAhead < 0 || o.ReadAhead > 64 {
		return nil, fmt.Errorf("weights: read-ahead %d outside [0, 64]", o.ReadAhead)
	}
	if o.Readers <= 0 {
		o.Readers = DefaultReaders
	}
	if o.ChunkBytes <= 0 {
		o.ChunkBytes = DefaultChunkBytes
	}
	o.ChunkBytes = alignUp(o.ChunkBytes)
	f := m.File
	if f.Path == "" {
		return nil, fmt.Errorf("weights: the model was not opened from a file: nothing to stream from")
	}
	file, direct, err := openDirect(f.Path)
	if err != nil {
		return nil, fmt.Errorf("weights: %w", err)
	}
	if !direct && o.Warn != nil {
		o.Warn(fmt.Sprintf("%s: the filesystem refuses O_DIRECT: streamed layers are read through the page cache (dropped after each read), so the DRAM budget is approximate", f.Path))
	}
	s := &Streamer{m: m, orig: m.Weights.Layers, plan: plan, o: o, path: f.Path, file: file, direct: direct,
		src: file, layers: make([]*streamLayer, c.Layers), resident: make([]*model.Layer, c.Layers),
		posOf: make([]int, c.Layers), wantAt: make([]int, c.Layers), lastLayer: -1}
	if o.WrapReader != nil {
		s.src = o.WrapReader(file)
	}
	fail := func(err error) (*Streamer, error) {
		file.Close()
		return nil, err
	}
	for i := range c.Layers {
		s.posOf[i] = -1
		l, err := s.orig.Layer(i)
		if err != nil {
			return fail(err)
		}
		if plan.Resident[i] {
			s.resident[i] = l
			continue
		}
		s.posOf[i] = len(s.order)
		s.order = append(s.order, i)
		sl, err := s.prepare(i, l)
		if err != nil {
			return fail(err)
		}
		s.layers[i] = sl
		s.bufBytes = max(s.bufBytes, sl.bufBytes)
	}
	next := 0 // past the pass's last streamed layer: the next pass's first
	for i := c.Layers - 1; i >= 0; i-- {
		if s.posOf[i] >= 0 {
			next = s.posOf[i]
		}
		s.wantAt[i] = next
	}
	// Reading further ahead than one pass would only read the same layers
	// twice into more memory.
	s.o.ReadAhead = min(s.o.ReadAhead, len(s.order))
	for range s.o.ReadAhead + 1 {
		s.free = append(s.free, &slot{buf: alignedBuffer(s.bufBytes), done: make(chan error, 1)})
	}
	s.reqs = make(chan *slot, len(s.free))
	s.readerDone = make(chan struct{})
	chunks := make(chan chunkRead)
	var readers sync.WaitGroup
	for range o.Readers {
		readers.Add(1)
		go func() {
			defer readers.Done()
			s.read(chunks)
		}()
	}
	go s.dispatch(chunks)
	go func() {
		readers.Wait()
		close(s.readerDone)
	}()
	return s, nil
}

// prepare lays out the reads of streamed layer i (from its resident
// template l, whose matrices are views of the mapped file never touched),
// loads its vectors with a read of the file, and releases the layer's
// pages from the mapping.
func (s *Streamer) prepare(i int, l *model.Layer) (*streamLayer, error) {
	f := s.m.File
	sl := &streamLayer{index: i, template: *l}
	type extent struct{ off, end int64 }
	var ext []extent
	mats := sl.template.Matrices()
	abs := make([]int64, len(mats))
	for k, mm := range mats {
		name := fmt.Sprintf("blk.%d.%s", i, mm.Name)
		ti, ok := f.Tensor(name)
		if !ok {
			return nil, fmt.Errorf("weights: tensor %s missing", name)
		}
		abs[k] = int64(f.TensorAbsOffset(ti))
		n := int64(len(mm.M.Data))
		ext = append(ext, extent{abs[k], abs[k] + n})
		sl.payload += n
	}
	slices.SortFunc(ext, func(a, b extent) int { return int(a.off - b.off) })
	var bufOff int64
	for k := 0; k < len(ext); {
		start, end := ext[k].off, ext[k].end
		for k++; k < len(ext) && ext[k].off-end <= maxGap; k++ {
			end = max(end, ext[k].end)
		}
		a := alignDown(start)
		sp := readSpan{off: a, length: alignUp(end) - a, bufOff: bufOff, need: end - a}
		sl.spans = append(sl.spans, sp)
		bufOff += sp.length
	}
	sl.bufBytes = bufOff
	sl.matOff = make([]int64, len(mats))
	sl.matLen = make([]int64, len(mats))
	for k := range mats {
		sl.matLen[k] = int64(len(mats[k].M.Data))
		for _, sp := range sl.spans {
			if abs[k] >= sp.off && abs[k] < sp.off+sp.need {
				sl.matOff[k] = sp.bufOff + abs[k] - sp.off
			}
		}
		// A resident copy in row panels (the layer computed before it was
		// streamed) would only hold memory now.
		mats[k].M.DropPanels()
		*mats[k].M = quant.Matrix{Type: mats[k].M.Type, Rows: mats[k].M.Rows, Cols: mats[k].M.Cols} // no view of the mapping
	}
	// The vectors were decoded from the mapping when the model loaded;
	// read them again from the file so the streamed layer's own copy
	// does not depend on mapped pages, which are released below.
	for _, v := range sl.template.Vectors() {
		name := fmt.Sprintf("blk.%d.%s", i, v.Name)
		ti, ok := f.Tensor(name)
		if !ok {
			return nil, fmt.Errorf("weights: tensor %s missing", name)
		}
		off := int64(f.TensorAbsOffset(ti))
		a := alignDown(off)
		buf := alignedBuffer(alignUp(off + int64(ti.Size) - a))
		if err := s.readAt(i, buf, a, off+int64(ti.Size)-a); err != nil {
			return nil, err
		}
		out := make([]float32, len(*v.V))
		if err := quant.Dequantize(ti.Type, buf[off-a:off-a+int64(ti.Size)], out); err != nil {
			return nil, fmt.Errorf("weights: tensor %s: %w", name, err)
		}
		*v.V = out
	}
	// Loading the model decoded the vectors through the mapping, which
	// faulted in their pages (and the kernel's fault-around, its
	// neighbours): release the layer's whole extent, vectors included.
	lo, hi := ext[0].off, ext[len(ext)-1].end
	for _, v := range sl.template.Vectors() {
		if ti, ok := f.Tensor(fmt.Sprintf("blk.%d.%s", i, v.Name)); ok {
			off := int64(f.TensorAbsOffset(ti))
			lo, hi = min(lo, off), max(hi, off+int64(ti.Size))
		}
	}
	if mapped := f.Bytes(); hi-lo < 2*sl.bufBytes+Alignment && hi <= int64(len(mapped)) {
		f.ReleasePages(mapped[lo:hi])
	}
	return sl, nil
}

// readAt reads into buf (aligned) from file offset off (aligned); at
// least need bytes must arrive.
func (s *Streamer) readAt(layer int, buf []byte, off, need int64) error {
	n, err := s.src.ReadAt(buf, off)
	if int64(n) >= need {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		// The file was at least this long when it was opened.
		err = fmt.Errorf("short read: %d of %d bytes: %w", n, need, gguf.ErrModelFileChanged)
	}
	s.readErrs.Add(1)
	return fmt.Errorf("weights: streaming layer %d from %s: read of %d bytes at offset %d: %w", layer, s.path, len(buf), off, err)
}

// chunkRead is one read of a layer into its slot.
type chunkRead struct {
	sl                   *slot
	layer                int
	off, bufOff, n, need int64
}

// dispatch cuts each issued layer into chunk reads, in order, for the
// readers; since the next layer's chunks queue up behind the current
// one's, the storage never waits for a layer boundary (nor for this
// process's goroutines to be scheduled there).
func (s *Streamer) dispatch(chunks chan<- chunkRead) {
	defer close(chunks)
	for sl := range s.reqs {
		l := s.layers[s.order[sl.pos]]
		var list []chunkRead
		for _, sp := range l.spans {
			for c := int64(0); c < sp.length; c += s.o.ChunkBytes {
				n := min(s.o.ChunkBytes, sp.length-c)
				list = append(list, chunkRead{sl, l.index, sp.off + c, sp.bufOff + c, n, min(n, max(0, sp.need-c))})
			}
		}
		sl.err = nil
		sl.remaining.Store(int64(len(list)))
		for _, c := range list {
			chunks <- c
		}
	}
}

// read runs chunk reads until the dispatcher stops; the reader finishing
// a layer's last chunk reports the layer done.
func (s *Streamer) read(chunks <-chan chunkRead) {
	for c := range chunks {
		sl := c.sl
		sl.mu.Lock()
		failed := sl.err != nil
		sl.mu.Unlock()
		if !failed {
			s.busy(+1)
			err := s.readAt(c.layer, sl.buf[c.bufOff:c.bufOff+c.n], c.off, c.need)
			s.busy(-1)
			if err != nil {
				sl.mu.Lock()
				if sl.err == nil {
					sl.err = err
				}
				sl.mu.Unlock()
			}
			if !s.direct {
				dropCache(s.file, c.off, c.n)
			}
		}
		if sl.remaining.Add(-1) == 0 {
			sl.mu.Lock()
			err := sl.err
			sl.mu.Unlock()
			if err == nil {
				s.layersRead.Add(1)
				s.bytesRead.Add(s.layers[c.layer].payload)
			}
			sl.done <- err
		}
	}
}

// busy counts reads in flight; ReadTime is the time with at least one.
func (s *Streamer) busy(delta int) {
	s.busyMu.Lock()
	defer s.busyMu.Unlock()
	if s.inFlight == 0 && delta > 0 {
		s.busySince = time.Now()
	}
	s.inFlight += delta
	if s.inFlight == 0 {
		s.readNs.Add(int64(time.Since(s.busySince)))
	}
}

// ResidentLayer returns layer i if the plan keeps it resident
// (model.ResidentLayers), without touching the read pipeline.
func (s *Streamer) ResidentLayer(i int) (*model.Layer, bool) {
	if i < 0 || i >= len(s.resident) || s.resident[i] == nil {
		return nil, false
	}
	return s.resident[i], true
}

// Layer returns layer i: a resident one as loaded, a streamed one once its
// read has completed (waiting for it if need be: that wait is the I/O
// wait). A read error or short read is returned naming the layer, the file
// and the offset; the pipeline restarts on the next call.
func (s *Streamer) Layer(i int) (*model.Layer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("weights: layer %d: the streamer is closed", i)
	}
	if i < 0 || i >= len(s.posOf) {
		return nil, fmt.Errorf("weights: layer %d outside [0, %d)", i, len(s.posOf))
	}
	now := time.Now()
	s.calls.Add(1)
	if s.lastLayer >= 0 && i == s.lastLayer+1 {
		s.computeNs.Add(int64(now.Sub(s.lastReturn)))
		s.gaps.Add(1)
	}
	if i == 0 {
		s.passes.Add(1)
	}
	s.lastLayer = i
	defer func() { s.lastReturn = time.Now() }()

	// Any call means the pass has moved past the layer handed out last.
	if s.held != nil {
		s.free = append(s.free, s.held)
		s.held = nil
	}
	if want := s.wantAt[i]; s.headPos() != want {
		s.drain()
		s.nextPos = want
		s.resets.Add(1)
	}
	if s.posOf[i] < 0 {
		s.fill()
		return s.resident[i], nil
	}
	if len(s.queue) == 0 {
		s.issue() // on demand: no read-ahead, or the pipeline just restarted
	}
	s.fill()
	head := s.queue[0]
	s.queue = s.queue[1:]
	var err error
	select {
	case err = <-head.done:
		s.ready.Add(1)
	default:
		t0 := time.Now()
		s.waiting.Store(true)
		err = <-head.done
		s.waiting.Store(false)
		s.ioWaitNs.Add(int64(time.Since(t0)))
	}
	if err != nil {
		s.free = append(s.free, head)
		s.drain()
		s.lastLayer = -1
		return nil, err
	}
	s.held = head
	s.fill()
	return &head.layer, nil
}

// IOWaiting reports whether a forward pass is blocked waiting for a
// streamed layer's read: the cores are idle for other work then. Safe to
// call from any goroutine.
func (s *Streamer) IOWaiting() bool { return s.waiting.Load() }

// ReleaseLayer is told by the forward pass that it is done with layer i:
// the buffer of a streamed layer goes back to the pipeline at once, which
// reads the next layer into it. At a pass's end that is what keeps the
// storage busy while the caller computes the LM head and drafts the next
// step: every buffer, not all but one, holds the next pass's first
// layers when it begins.
func (s *Streamer) ReleaseLayer(i int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.held == nil || s.order[s.held.pos] != i {
		return
	}
	s.free = append(s.free, s.held)
	s.held = nil
	s.fill()
}

// headPos is the position of the next layer the pipeline will deliver.
func (s *Streamer) headPos() int {
	if len(s.queue) > 0 {
		return s.queue[0].pos
	}
	return s.nextPos
}

// issue starts reading the next position into a free slot.
func (s *Streamer) issue() {
	sl := s.free[len(s.free)-1]
	s.free = s.free[:len(s.free)-1]
	sl.pos = s.nextPos
	s.nextPos = (s.nextPos + 1) % len(s.order)
	l := s.layers[s.order[sl.pos]]
	sl.layer = l.template
	for k, mm := range sl.layer.Matrices() {
		n := l.matLen[k]
		mm.M.Data = sl.buf[l.matOff[k] : l.matOff[k]+n : l.matOff[k]+n]
	}
	s.queue = append(s.queue, sl)
	s.reqs <- sl
}

// fill reads ahead into every free slot.
func (s *Streamer) fill() {
	if s.o.ReadAhead == 0 {
		return
	}
	for len(s.free) > 0 {
		s.issue()
	}
}

// drain waits out the reads in flight (a read cannot be recalled) and
// frees their slots.
func (s *Streamer) drain() {
	for _, sl := range s.queue {
		<-sl.done
		s.free = append(s.free, sl)
	}
	s.queue = s.queue[:0]
}

// Quiesce waits for the reads in flight, read-ahead included, and drops
// them: the storage is idle until the next Layer call, which starts its
// reads afresh. Measurements of the storage itself (MeasureDisk) call it
// first so as not to compete with the streamer. The layer handed out last
// stays valid.
func (s *Streamer) Quiesce() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.drain()
	}
}

// Close waits for reads in flight, puts the model's own layers back and
// closes the file. Layers returned before are invalid afterwards.
func (s *Streamer) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.drain()
	close(s.reqs)
	<-s.readerDone
	if s.m.Weights.Layers == s {
		s.m.Weights.Layers = s.orig
	}
	s.free, s.held = nil, nil
	return s.file.Close()
}

// Plan returns the plan the streamer follows.
func (s *Streamer) Plan() Plan { return s.plan }

// Direct reports whether reads bypass the page cache (O_DIRECT).
func (s *Streamer) Direct() bool { return s.direct }

// PrereadLayers is how many of a pass's first streamed layers the
// streamer reads before the pass asks for them when the time between
// passes allows: every layer buffer (ReadAhead+1) once the previous pass
// has released its last layer; none without read-ahead.
func (s *Streamer) PrereadLayers() int {
	if s.o.ReadAhead == 0 {
		return 0
	}
	return s.o.ReadAhead + 1
}

// BufferBytes is the memory of the layer buffers.
func (s *Streamer) BufferBytes() int64 { return s.bufBytes * int64(s.o.ReadAhead+1) }

func alignUp(n int64) int64   { return (n + Alignment - 1) / Alignment * Alignment }
func alignDown(n int64) int64 { return n / Alignment * Alignment }

// alignedBuffer returns n bytes whose address is a multiple of Alignment.
func alignedBuffer(n int64) []byte {
	b := make([]byte, n+Alignment)
	skip := (Alignment - int64(uintptr(unsafe.Pointer(unsafe.SliceData(b)))%Alignment)) % Alignment
	return b[skip : skip+n : skip+n]
}
