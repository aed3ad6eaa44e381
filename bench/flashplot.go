package bench

import (
	"io"

	"shade/plot"
)

// WriteFlashSVG draws tok/s against the share of target layers resident
// in DRAM, one line per mode, as a standalone SVG.
func WriteFlashSVG(w io.Writer, r *FlashReport, title string) error {
	c := plot.Chart{Title: title, XLabel: "DRAM budget (% of the target's weights)", YLabel: "tokens/s", XZero: true, YZero: true}
	idx := map[string]int{}
	for _, res := range r.Results {
		k, ok := idx[res.Mode]
		if !ok {
			k = len(c.Series)
			idx[res.Mode] = k
			c.Series = append(c.Series, plot.Series{Name: res.Mode, Line: true})
		}
		c.Series[k].Points = append(c.Series[k].Points, plot.Point{X: 100 * res.Budget, Y: res.TokPerS})
	}
	return c.WriteSVG(w)
}
