package bench

import (
	"time"

	"shade/weights"
)

// StreamReport is what weight streaming did during Run's decode
// measurement, against the storage's own O_DIRECT read bandwidth measured
// in the same run.
type StreamReport struct {
	Plan weights.Plan `json:"plan"`
	// Decode is the streamer's counters over the decode measurement.
	Decode weights.Stats `json:"decode"`
	// BytesPerToken is what one decode step streams: the streamed layers.
	BytesPerToken int64   `json:"streamed_bytes_per_token"`
	IOShare       float64 `json:"io_share"` // time blocked on reads / (that + compute)
	// PipelineGBps is bytes read / time the reader was busy; WallGBps is
	// bytes read / decode wall time (lower when compute, not I/O, bounds).
	PipelineGBps float64            `json:"pipeline_gb_per_s"`
	WallGBps     float64            `json:"wall_gb_per_s"`
	Disk         weights.DiskResult `json:"disk"`
	// DiskFrac is PipelineGBps / Disk.GBps.
	DiskFrac float64 `json:"pipeline_of_disk"`
	// RooflineTokS is the storage-bound limit: disk GB/s / BytesPerToken.
	RooflineTokS float64 `json:"streaming_roofline_tok_per_s"`
	RooflineFrac float64 `json:"streaming_roofline_fraction"`
}

// streamProbe measures the disk between the decode measurement's
// repetitions and snapshots the streamer around them; finish completes the
// report.
type streamProbe struct {
	st         *weights.Streamer
	o          *Options
	path       string
	dataOffset int64
	before     weights.Stats
	disk       weights.DiskResult
	measured   bool
	err        error
	wall       time.Duration
}

func startStream(o *Options, path string, dataOffset int64) *streamProbe {
	if o.Stream == nil {
		return nil
	}
	p := &streamProbe{st: o.Stream, o: o, path: path, dataOffset: dataOffset}
	p.measureDisk()
	p.before = o.Stream.Stats()
	return p
}

// measureDisk reads the model file once more per reader count, with the
// streamer idle. The samples of every call are pooled (medians by reader
// count, the best count reported): measured between the decode's
// repetitions, the disk's figure and the pipeline's cover the same
// stretch of a shared disk whose speed drifts by 2× from one second to the
// next.
func (p *streamProbe) measureDisk() {
	if p.err != nil {
		return
	}
	p.st.Quiesce()
	d, err := weights.MeasureDisk(p.path, weights.DiskOptions{Offset: p.dataOffset, Bytes: p.o.DiskBytes, Reps: 1})
	switch {
	case err != nil:
		p.err = err
	case p.measured:
		p.disk = p.disk.Merge(d)
	default:
		p.disk, p.measured = d, true
	}
}

// finish measures the disk a last time and fills the report.
func (p *streamProbe) finish(decodeTokS float64) (*StreamReport, error) {
	d := p.st.Stats().Since(p.before)
	p.measureDisk()
	if p.err != nil {
		return nil, p.err
	}
	plan := p.st.Plan()
	r := &StreamReport{Plan: plan, Decode: d, BytesPerToken: plan.StreamedBytes, IOShare: d.IOShare,
		PipelineGBps: d.ReadGBps, Disk: p.disk}
	if p.wall > 0 {
		r.WallGBps = float64(d.BytesRead) / p.wall.Seconds() / 1e9
	}
	if p.disk.GBps > 0 {
		r.DiskFrac = r.PipelineGBps / p.disk.GBps
		if plan.StreamedBytes > 0 {
			r.RooflineTokS = p.disk.GBps * 1e9 / float64(plan.StreamedBytes)
			r.RooflineFrac = decodeTokS / r.RooflineTokS
		}
	}
	return r, nil
}
