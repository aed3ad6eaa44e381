// Package plot owns shade's charts: scatter and line series drawn as SVG
// with axes, ticks, labels, a legend and a title, using only the standard
// library, so that benchmarks (`shade bench qos`, `shade bench flash`) can
// write their figures without a plotting dependency.
package plot

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Point is one (x, y) datum.
type Point struct{ X, Y float64 }

// Series is a named set of points, drawn as markers and, when Line is set,
// joined by a polyline in the order given.
type Series struct {
	Name   string
	Points []Point
	Line   bool
}

// Chart is a 2-D chart of one or more series over shared linear axes.
type Chart struct {
	Title  string
	XLabel string
	YLabel string
	Series []Series
	// Width and Height are the picture's size in pixels (default 640×420).
	Width, Height int
	// XZero and YZero make the axis start at 0 when all data are positive
	// (rates and percentages read better against zero).
	XZero, YZero bool
}

// palette holds colours that stay apart for the common colour-vision
// deficiencies (Okabe–Ito).
var palette = []string{"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442"}

// markers cycle with the colours so that series differ in print too.
var markers = []string{"circle", "square", "triangle", "diamond"}

// ErrBadPoint is wrapped when a point is NaN or infinite.
var ErrBadPoint = errors.New("plot: point is not a finite number")

const (
	marginLeft   = 70
	marginRight  = 20
	marginTop    = 40
	marginBottom = 55
	legendWidth  = 150
)

// WriteSVG draws the chart as a standalone SVG document. A chart with no
// points still gets axes (over [0, 1]); a NaN or infinite coordinate is an
// error wrapping ErrBadPoint.
func (c Chart) WriteSVG(w io.Writer) error {
	width, height := c.Width, c.Height
	if width <= 0 {
		width = 640
	}
	if height <= 0 {
		height = 420
	}
	if width < 200 || height < 150 || width > 20000 || height > 20000 {
		return fmt.Errorf("plot: size %d×%d outside [200, 20000]×[150, 20000]", width, height)
	}
	xmin, xmax, ymin, ymax := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, s := range c.Series {
		for _, p := range s.Points {
			if math.IsNaN(p.X) || math.IsNaN(p.Y) || math.IsInf(p.X, 0) || math.IsInf(p.Y, 0) {
				return fmt.Errorf("%w: series %q has (%v, %v)", ErrBadPoint, s.Name, p.X, p.Y)
			}
			xmin, xmax = min(xmin, p.X), max(xmax, p.X)
			ymin, ymax = min(ymin, p.Y), max(ymax, p.Y)
		}
	}
	if xmin > xmax { // no points
		xmin, xmax, ymin, ymax = 0, 1, 0, 1
	}
	if c.XZero && xmin > 0 {
		xmin = 0
	}
	if c.YZero && ymin > 0 {
		ymin = 0
	}
	xt := niceTicks(xmin, xmax, 6)
	yt := niceTicks(ymin, ymax, 5)
	xmin, xmax = min(xmin, xt[0]), max(xmax, xt[len(xt)-1])
	ymin, ymax = min(ymin, yt[0]), max(ymax, yt[len(yt)-1])

	named := 0
	for _, s := range c.Series {
		if s.Name != "" {
			named++
		}
	}
	right := marginRight
	if named > 0 {
		right += legendWidth
	}
	plotW := float64(width - marginLeft - right)
	plotH := float64(height - marginTop - marginBottom)
	if plotW < 50 || plotH < 50 {
		return fmt.Errorf("plot: %d×%d leaves no room for the plot area", width, height)
	}
	px := func(x float64) float64 { return marginLeft + (x-xmin)/(xmax-xmin)*plotW }
	py := func(y float64) float64 { return marginTop + plotH - (y-ymin)/(ymax-ymin)*plotH }

	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(bw, `<rect class="background" x="0" y="0" width="%d" height="%d" fill="white"/>`+"\n", width, height)
	if c.Title != "" {
		fmt.Fprintf(bw, `<text class="title" x="%d" y="22" text-anchor="middle" font-size="15" font-weight="bold">%s</text>`+"\n", marginLeft+int(plotW)/2, esc(c.Title))
	}
	// Grid and ticks.
	fmt.Fprintln(bw, `<g class="x-axis" stroke="#444">`)
	for _, t := range xt {
		x := px(t)
		fmt.Fprintf(bw, `<line class="grid" x1="%s" y1="%d" x2="%s" y2="%s" stroke="#ddd"/>`+"\n", f(x), marginTop, f(x), f(marginTop+plotH))
		fmt.Fprintf(bw, `<line class="tick" x1="%s" y1="%s" x2="%s" y2="%s"/>`+"\n", f(x), f(marginTop+plotH), f(x), f(marginTop+plotH+5))
		fmt.Fprintf(bw, `<text class="tick-label" x="%s" y="%s" text-anchor="middle" stroke="none">%s</text>`+"\n", f(x), f(marginTop+plotH+19), esc(tickLabel(t)))
	}
	fmt.Fprintf(bw, `<line class="axis" x1="%d" y1="%s" x2="%s" y2="%s"/>`+"\n", marginLeft, f(marginTop+plotH), f(marginLeft+plotW), f(marginTop+plotH))
	fmt.Fprintln(bw, `</g>`)
	fmt.Fprintln(bw, `<g class="y-axis" stroke="#444">`)
	for _, t := range yt {
		y := py(t)
		fmt.Fprintf(bw, `<line class="grid" x1="%d" y1="%s" x2="%s" y2="%s" stroke="#ddd"/>`+"\n", marginLeft, f(y), f(marginLeft+plotW), f(y))
		fmt.Fprintf(bw, `<line class="tick" x1="%d" y1="%s" x2="%d" y2="%s"/>`+"\n", marginLeft-5, f(y), marginLeft, f(y))
		fmt.Fprintf(bw, `<text class="tick-label" x="%d" y="%s" text-anchor="end" stroke="none">%s</text>`+"\n", marginLeft-8, f(y+4), esc(tickLabel(t)))
	}
	fmt.Fprintf(bw, `<line class="axis" x1="%d" y1="%d" x2="%d" y2="%s"/>`+"\n", marginLeft, marginTop, marginLeft, f(marginTop+plotH))
	fmt.Fprintln(bw, `</g>`)
	if c.XLabel != "" {
		fmt.Fprintf(bw, `<text class="x-label" x="%s" y="%d" text-anchor="middle">%s</text>`+"\n", f(marginLeft+plotW/2), height-12, esc(c.XLabel))
	}
	if c.YLabel != "" {
		cy := marginTop + plotH/2
		fmt.Fprintf(bw, `<text class="y-label" x="16" y="%s" text-anchor="middle" transform="rotate(-90 16 %s)">%s</text>`+"\n", f(cy), f(cy), esc(c.YLabel))
	}
	// Series.
	for i, s := range c.Series {
		color := palette[i%len(palette)]
		marker := markers[i%len(markers)]
		fmt.Fprintf(bw, `<g class="series" data-name="%s" fill="%s" stroke="%s">`+"\n", esc(s.Name), color, color)
		if s.Line && len(s.Points) > 1 {
			var pts []string
			for _, p := range s.Points {
				pts = append(pts, f(px(p.X))+","+f(py(p.Y)))
			}
			fmt.Fprintf(bw, `<polyline fill="none" stroke-width="2" points="%s"/>`+"\n", strings.Join(pts, " "))
		}
		for _, p := range s.Points {
			drawMarker(bw, "marker", marker, px(p.X), py(p.Y), fmt.Sprintf("%s: (%s, %s)", s.Name, tickLabel(p.X), tickLabel(p.Y)))
		}
		fmt.Fprintln(bw, `</g>`)
	}
	// Legend.
	if named > 0 {
		lx := float64(width - right + 15)
		fmt.Fprintln(bw, `<g class="legend">`)
		row := 0
		for i, s := range c.Series {
			if s.Name == "" {
				continue
			}
			color := palette[i%len(palette)]
			y := float64(marginTop+10) + 20*float64(row)
			row++
			fmt.Fprintf(bw, `<g class="legend-entry" fill="%s" stroke="%s">`+"\n", color, color)
			if s.Line {
				fmt.Fprintf(bw, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke-width="2"/>`+"\n", f(lx-8), f(y), f(lx+8), f(y))
			}
			drawMarker(bw, "legend-marker", markers[i%len(markers)], lx, y, "")
			fmt.Fprintf(bw, `<text x="%s" y="%s" fill="black" stroke="none">%s</text>`+"\n", f(lx+14), f(y+4), esc(s.Name))
			fmt.Fprintln(bw, `</g>`)
		}
		fmt.Fprintln(bw, `</g>`)
	}
	fmt.Fprintln(bw, `</svg>`)
	return bw.Flush()
}

func drawMarker(w io.Writer, class, kind string, x, y float64, title string) {
	const r = 4.5
	tip := ""
	if title != "" {
		tip = "<title>" + esc(title) + "</title>"
	}
	switch kind {
	case "square":
		fmt.Fprintf(w, `<rect class="%s" x="%s" y="%s" width="%s" height="%s">%s</rect>`+"\n", class, f(x-r), f(y-r), f(2*r), f(2*r), tip)
	case "triangle":
		fmt.Fprintf(w, `<polygon class="%s" points="%s,%s %s,%s %s,%s">%s</polygon>`+"\n", class, f(x), f(y-r-1), f(x-r-1), f(y+r), f(x+r+1), f(y+r), tip)
	case "diamond":
		fmt.Fprintf(w, `<polygon class="%s" points="%s,%s %s,%s %s,%s %s,%s">%s</polygon>`+"\n", class, f(x), f(y-r-1), f(x+r+1), f(y), f(x), f(y+r+1), f(x-r-1), f(y), tip)
	default:
		fmt.Fprintf(w, `<circle class="%s" cx="%s" cy="%s" r="%s">%s</circle>`+"\n", class, f(x), f(y), f(r), tip)
	}
}

// niceTicks returns about n round tick values (steps of 1, 2 or 5 times a
// power of ten) covering [lo, hi], widening a degenerate range.
func niceTicks(lo, hi float64, n int) []float64 {
	if hi-lo <= 1e-12*max(math.Abs(lo), math.Abs(hi), 1e-300) {
		pad := math.Abs(lo) * 0.1
		if pad == 0 {
			pad = 1
		}
		lo, hi = lo-pad, hi+pad
	}
	raw := (hi - lo) / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	start := math.Floor(lo/step) * step
	var ticks []float64
	for k := 0; ; k++ {
		t := start + float64(k)*step
		if math.Abs(t) < step*1e-9 {
			t = 0
		}
		ticks = append(ticks, t)
		if t >= hi-step*1e-9 || k > 4*n {
			break
		}
	}
	return ticks
}

func tickLabel(v float64) string {
	return strconv.FormatFloat(v, 'g', 4, 64)
}

func f(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

func esc(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		case '"':
			b.WriteString("&#34;")
		case '\'':
			b.WriteString("&#39;")
		default:
			if r < 0x20 && r != '\t' && r != '\n' {
				continue // not allowed in XML 1.0
			}
			b.WriteRune(r)
		}
	}
	return b.String()
}
