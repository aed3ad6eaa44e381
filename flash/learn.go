package flash

import (
	"sync"

	"shade/quant"
)

// Learned is what flash mode learns of the machine as it runs: how much
// slower or faster than calibrated the target's compute and the draft
// passes are, and the book-keeping per tree node. An engine shares one
// across its requests so that each starts from what the earlier ones
// learned. Safe for concurrent use.
type Learned struct {
	mu                       sync.Mutex
	computeScale, draftScale float64
	perNode                  float64
	fit                      rowFit
	tiles                    tileTimes
}

func (l *Learned) load(f *strategy) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if f.cost != nil {
		if l.computeScale > 0 {
			f.cost.ComputeScale = l.computeScale
		}
		if l.draftScale > 0 {
			f.cost.DraftScale = l.draftScale
		}
	}
	f.perNode, f.fit, f.tiles = l.perNode, l.fit, l.tiles
}

func (l *Learned) store(f *strategy) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if f.cost != nil {
		l.computeScale, l.draftScale = f.cost.ComputeScale, f.cost.DraftScale
	}
	l.perNode, l.fit, l.tiles = f.perNode, f.fit, f.tiles
}

// rowFit is a decayed least-squares fit of verify time against rows.
type rowFit struct{ n, x, y, xx, xy float64 }

func (r *rowFit) add(x, y float64) {
	const keep = 0.95
	r.n, r.x, r.y = keep*r.n+1, keep*r.x+x, keep*r.y+y
	r.xx, r.xy = keep*r.xx+x*x, keep*r.xy+x*y
}

// slope is the observed cost of a verify row (0 until the passes seen
// differ enough in rows to tell): reads and compute overlap less than the
// cost model's "the longer of the two" assumes.
func (r *rowFit) slope() float64 {
	den := r.n*r.xx - r.x*r.x
	if r.n < 3 || den <= 1e-9*r.n*r.n {
		return 0
	}
	return max(0, (r.n*r.xy-r.x*r.y)/den)
}

// maxTiles is how many kernel tiles of verify rows flash keeps timings of.
const maxTiles = 4

// tileTimes are decayed counts and time sums of verify passes by how many
// kernel tiles their rows took (index k: k+1 tiles): what one more tile
// actually costs.
type tileTimes struct{ n, t [maxTiles]float64 }

// add records a verify pass of rows rows that took `took` seconds (its
// reads hidden by drafting added back).
func (tt *tileTimes) add(rows int, took float64) {
	k := (rows+quant.TileRows-1)/quant.TileRows - 1
	if k < 0 || k >= maxTiles {
		return
	}
	const keep = 0.9
	for i := range tt.n {
		tt.n[i] *= keep
		tt.t[i] *= keep
	}
	tt.n[k]++
	tt.t[k] += took
}

// steps is, per number of tiles k+1, what a verify pass has been observed
// to take more with one tile more (0 where not seen enough of both to tell).
func (tt *tileTimes) steps() []float64 {
	var out []float64
	for k := 0; k+1 < maxTiles; k++ {
		step := 0.0
		if tt.n[k] >= 1 && tt.n[k+1] >= 1 {
			step = max(0, tt.t[k+1]/tt.n[k+1]-tt.t[k]/tt.n[k])
		}
		out = append(out, step)
	}
	return out
}
