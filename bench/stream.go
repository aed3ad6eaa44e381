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

// streamProbe measures the disk and snapshots the streamer before the
// decode measurement; its finish method completes the report.
type streamProbe struct {
	st     *weights.Streamer
	o      *Options
	before weights.Stats
	disk   weights.DiskResult
	err    error
	wall   time.Duration
}

func startStream(o *Options, path string, dataOffset int64) *streamProbe {
	if o.Stream == nil {
		return nil
	}
	p := &streamProbe{st: o.Stream, o: o}
	p.disk, p.err = weights.MeasureDisk(path, weights.DiskOptions{Offset: dataOffset, Bytes: o.DiskBytes})
	p.before = o.Stream.Stats()
	return p
}

// finish measures the disk again and fills the report. The disk's figure
// pools the passes before and after the decode (medians by reader count,
// the best count reported): the machine's disk is shared and its speed
// drifts by 2× from one second to the next.
func (p *streamProbe) finish(path string, dataOffset int64, decodeTokS float64) (*StreamReport, error) {
	d := p.st.Stats().Since(p.before)
	again, err := weights.MeasureDisk(path, weights.DiskOptions{Offset: dataOffset, Bytes: p.o.DiskBytes})
	if p.err != nil {
		return nil, p.err
	}
	if err != nil {
		return nil, err
	}
	p.disk = p.disk.Merge(again)
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
