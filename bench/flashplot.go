package bench

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// WriteFlashSVG draws tok/s against the DRAM budget, one line per mode, as
// a self-contained SVG (a minimal chart: the shared plot package was not
// on this branch when bench flash was written).
func WriteFlashSVG(w io.Writer, r *FlashReport, title string) error {
	const (
		width, height          = 640, 400
		left, right, top, bot  = 64, 150, 40, 50
		plotW, plotH           = width - left - right, height - top - bot
		tickCount              = 5
		fontAttrs              = `font-family="sans-serif" font-size="12"`
		legendDY               = 18
		markerR                = 3.5
		strokeW                = 2
		percent                = 100
		minTop                 = 1e-9
		labelOffset, axisLabel = 6, 34
	)
	colors := []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"}
	var modes []string
	series := map[string][][2]float64{}
	maxY := minTop
	for _, res := range r.Results {
		if _, ok := series[res.Mode]; !ok {
			modes = append(modes, res.Mode)
		}
		series[res.Mode] = append(series[res.Mode], [2]float64{res.Budget, res.TokPerS})
		maxY = math.Max(maxY, res.TokPerS)
	}
	maxY = niceCeil(maxY)
	x := func(b float64) float64 { return left + b*plotW }
	y := func(v float64) float64 { return top + plotH - v/maxY*plotH }
	var sb strings.Builder
	fmt.Fprintf(&sb, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d">`+"\n", width, height, width, height)
	fmt.Fprintf(&sb, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&sb, `<text x="%d" y="22" %s font-size="14" font-weight="bold">%s</text>`+"\n", left, fontAttrs, html.EscapeString(title))
	// Axes, grid and ticks.
	fmt.Fprintf(&sb, `<g stroke="#ccc" stroke-width="1">`)
	for i := 0; i <= tickCount; i++ {
		v := maxY * float64(i) / tickCount
		fmt.Fprintf(&sb, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f"/>`, left, y(v), left+plotW, y(v))
	}
	fmt.Fprintf(&sb, "</g>\n")
	fmt.Fprintf(&sb, `<g stroke="black" stroke-width="1"><line x1="%d" y1="%d" x2="%d" y2="%d"/><line x1="%d" y1="%d" x2="%d" y2="%d"/></g>`+"\n",
		left, top, left, top+plotH, left, top+plotH, left+plotW, top+plotH)
	for i := 0; i <= tickCount; i++ {
		v := maxY * float64(i) / tickCount
		fmt.Fprintf(&sb, `<text x="%d" y="%.1f" %s text-anchor="end">%s</text>`+"\n", left-labelOffset, y(v)+4, fontAttrs, trimFloat(v))
	}
	for i := 0; i <= 4; i++ {
		b := float64(i) / 4
		fmt.Fprintf(&sb, `<text x="%.1f" y="%d" %s text-anchor="middle">%d%%</text>`+"\n", x(b), top+plotH+18, fontAttrs, int(b*percent))
	}
	fmt.Fprintf(&sb, `<text x="%d" y="%d" %s text-anchor="middle">target layers resident in DRAM</text>`+"\n", left+plotW/2, top+plotH+axisLabel+4, fontAttrs)
	fmt.Fprintf(&sb, `<text x="14" y="%d" %s text-anchor="middle" transform="rotate(-90 14 %d)">tokens/s</text>`+"\n", top+plotH/2, fontAttrs, top+plotH/2)
	// Lines, markers and the legend.
	for k, m := range modes {
		c := colors[k%len(colors)]
		var pts []string
		for _, p := range series[m] {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(p[0]), y(p[1])))
		}
		fmt.Fprintf(&sb, `<polyline fill="none" stroke="%s" stroke-width="%d" points="%s"/>`+"\n", c, strokeW, strings.Join(pts, " "))
		for _, p := range series[m] {
			fmt.Fprintf(&sb, `<circle cx="%.1f" cy="%.1f" r="%.1f" fill="%s"/>`+"\n", x(p[0]), y(p[1]), markerR, c)
		}
		ly := top + 10 + k*legendDY
		fmt.Fprintf(&sb, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="%d"/>`, left+plotW+16, ly, left+plotW+36, ly, c, strokeW)
		fmt.Fprintf(&sb, `<text x="%d" y="%d" %s>%s</text>`+"\n", left+plotW+42, ly+4, fontAttrs, html.EscapeString(m))
	}
	sb.WriteString("</svg>\n")
	_, err := io.WriteString(w, sb.String())
	return err
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func trimFloat(v float64) string {
	s := fmt.Sprintf("%.2f", v)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s
}
