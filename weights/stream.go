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

	"shade/model"
	"shade/quant"
)

// Alignment of O_DIRECT reads: file offset, length and buffer address.
const Alignment = 4096

// Defaults of Options.
const (
	DefaultReadAhead = 2
	// Large reads, few readers: on this machine's virtual disk 32 MiB reads
	// beat 8 MiB ones (medians of 7 interleaved passes over 512 MiB: 1 ×
	// 32 MiB 1.90 GB/s, 2 × 32 MiB 1.47, 2 × 16 MiB 1.60, 4 × 8 MiB 1.29),
	// since the kernel already splits a large O_DIRECT read into many
	// requests in flight; between one and two readers of 32 MiB the shared
	// disk's noise (1–2.7 GB/s from one second to the next) hides any
	// difference, and two keep the queue fed between reads.
	DefaultReaders    = 2
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
	// Readers is how many reads of ChunkBytes are in flight at once for
	// one layer (storage needs a queue to reach its bandwidth); ≤ 0:
	// DefaultReaders.
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
	done  chan error // the reader's verdict on the last read issued
}

// Streamer serves a model's layers: resident ones from the mapped file,
// streamed ones read from storage into reused aligned buffers, ahead of
// time, in pass order. It implements model.LayerSource.
//
// Concurrency contract: Layer is called by one forward pass at a time (the
// passes of several States of the model may follow one another in any
// order, and a pass may stop early: the pipeline resets to whatever layer
// is asked for next). A layer it returns stays valid until the next Layer
// call. Stats and Plan may be called at any time from any goroutine. Close
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

	passes, calls, gaps             atomic.Int64
	layersRead, bytesRead, readErrs atomic.Int64
	readNs, ioWaitNs, computeNs     atomic.Int64
	resets                          atomic.Int64
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
	go s.reader()
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
	mapped := f.Bytes()
	for _, sp := range sl.spans {
		lo, hi := alignUp(sp.off), alignDown(sp.off+sp.need)
		if hi > lo && hi <= int64(len(mapped)) {
			dropMapping(mapped[lo:hi])
		}
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
		err = fmt.Errorf("short read: %d of %d bytes", n, need)
	}
	s.readErrs.Add(1)
	return fmt.Errorf("weights: streaming layer %d from %s: read of %d bytes at offset %d: %w", layer, s.path, len(buf), off, err)
}

// reader runs the reads in the order they were issued.
func (s *Streamer) reader() {
	defer close(s.readerDone)
	for sl := range s.reqs {
		sl.done <- s.readLayer(sl)
	}
}

// readLayer fills a slot with its layer, in chunks read by several
// goroutines at once.
func (s *Streamer) readLayer(sl *slot) error {
	l := s.layers[s.order[sl.pos]]
	t0 := time.Now()
	type chunk struct{ off, bufOff, n, need int64 }
	var chunks []chunk
	for _, sp := range l.spans {
		for c := int64(0); c < sp.length; c += s.o.ChunkBytes {
			n := min(s.o.ChunkBytes, sp.length-c)
			chunks = append(chunks, chunk{sp.off + c, sp.bufOff + c, n, min(n, max(0, sp.need-c))})
		}
	}
	var next atomic.Int64
	var firstErr error
	var errOnce sync.Once
	var wg sync.WaitGroup
	for range min(s.o.Readers, len(chunks)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				k := int(next.Add(1) - 1)
				if k >= len(chunks) {
					return
				}
				c := chunks[k]
				if err := s.readAt(l.index, sl.buf[c.bufOff:c.bufOff+c.n], c.off, c.need); err != nil {
					errOnce.Do(func() { firstErr = err })
					next.Store(int64(len(chunks)))
					return
				}
			}
		}()
	}
	wg.Wait()
	s.readNs.Add(int64(time.Since(t0)))
	if !s.direct {
		for _, sp := range l.spans {
			dropCache(s.file, sp.off, sp.length)
		}
	}
	if firstErr != nil {
		return firstErr
	}
	s.layersRead.Add(1)
	s.bytesRead.Add(l.payload)
	return nil
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
	t0 := time.Now()
	err := <-head.done
	s.ioWaitNs.Add(int64(time.Since(t0)))
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
