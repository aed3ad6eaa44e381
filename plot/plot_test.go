package plot

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"
)

// element is a parsed SVG element with its attributes and direct text.
type element struct {
	name  string
	attrs map[string]string
	text  string
	depth int
}

func parseSVG(t *testing.T, data []byte) []element {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(data))
	var out []element
	var stack []int
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, data)
		}
		switch tk := tok.(type) {
		case xml.StartElement:
			e := element{name: tk.Name.Local, attrs: map[string]string{}, depth: len(stack)}
			for _, a := range tk.Attr {
				e.attrs[a.Name.Local] = a.Value
			}
			out = append(out, e)
			stack = append(stack, len(out)-1)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 {
				out[stack[len(stack)-1]].text += string(tk)
			}
		}
	}
	if len(stack) != 0 {
		t.Fatal("unclosed elements")
	}
	return out
}

func byClass(es []element, class string) []element {
	var out []element
	for _, e := range es {
		if e.attrs["class"] == class {
			out = append(out, e)
		}
	}
	return out
}

func TestChartElements(t *testing.T) {
	tests := []struct {
		name        string
		chart       Chart
		markers     int
		polylines   int
		legend      int
		wantTexts   []string
		wantNoTitle bool
	}{
		{
			name: "scatter and line with legend",
			chart: Chart{Title: "jank vs tok/s <scroll>", XLabel: "LLM tok/s", YLabel: "jank %",
				Series: []Series{
					{Name: "ar", Points: []Point{{10, 12.5}}},
					{Name: "spec & co", Points: []Point{{14, 9}, {15, 8}, {16, 7}}, Line: true},
				}},
			markers: 4, polylines: 1, legend: 2,
			wantTexts: []string{"jank vs tok/s <scroll>", "LLM tok/s", "jank %", "ar", "spec & co"},
		},
		{
			name:    "no points still draws axes",
			chart:   Chart{XLabel: "x"},
			markers: 0, polylines: 0, legend: 0, wantTexts: []string{"x"}, wantNoTitle: true,
		},
		{
			name:    "unnamed series: no legend; one point: degenerate range widened",
			chart:   Chart{Title: "t", Series: []Series{{Points: []Point{{3, 3}}, Line: true}}},
			markers: 1, polylines: 0, legend: 0, wantTexts: []string{"t"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := tc.chart.WriteSVG(&buf); err != nil {
				t.Fatal(err)
			}
			es := parseSVG(t, buf.Bytes())
			if es[0].name != "svg" || es[0].attrs["width"] != "640" || es[0].attrs["height"] != "420" {
				t.Fatalf("root = %+v", es[0])
			}
			if got := len(byClass(es, "marker")); got != tc.markers {
				t.Errorf("%d markers, want %d", got, tc.markers)
			}
			polys := 0
			for _, e := range es {
				if e.name == "polyline" {
					polys++
					if n := len(strings.Fields(e.attrs["points"])); n < 2 {
						t.Errorf("polyline with %d points", n)
					}
				}
			}
			if polys != tc.polylines {
				t.Errorf("%d polylines, want %d", polys, tc.polylines)
			}
			if got := len(byClass(es, "legend-entry")); got != tc.legend {
				t.Errorf("%d legend entries, want %d", got, tc.legend)
			}
			if got := len(byClass(es, "title")); (got == 0) != tc.wantNoTitle {
				t.Errorf("%d titles", got)
			}
			var texts []string
			for _, e := range es {
				if e.name == "text" {
					texts = append(texts, e.text)
				}
			}
			all := strings.Join(texts, "|")
			for _, w := range tc.wantTexts {
				if !strings.Contains(all, w) {
					t.Errorf("text %q missing from %q", w, all)
				}
			}
			// Ticks: at least two labelled per axis, all numbers, increasing.
			for _, axis := range []string{"x-axis", "y-axis"} {
				var vals []float64
				inAxis := false
				for _, e := range es {
					if e.depth == 1 {
						inAxis = e.attrs["class"] == axis
					}
					if inAxis && e.attrs["class"] == "tick-label" {
						v, err := strconv.ParseFloat(e.text, 64)
						if err != nil {
							t.Fatalf("%s tick label %q: %v", axis, e.text, err)
						}
						vals = append(vals, v)
					}
				}
				if len(vals) < 2 {
					t.Fatalf("%s has %d tick labels", axis, len(vals))
				}
				for i := 1; i < len(vals); i++ {
					if vals[i] <= vals[i-1] {
						t.Errorf("%s ticks not increasing: %v", axis, vals)
					}
				}
			}
		})
	}
}

// Every marker must lie inside the plot area, also when data are negative
// or the axes are forced to include zero.
func TestMarkersInsidePlotArea(t *testing.T) {
	c := Chart{Width: 500, Height: 300, XZero: true, YZero: true, Series: []Series{
		{Name: "a", Points: []Point{{-3, 2}, {7.5, 40}, {0.001, 0.002}}},
		{Name: "b", Points: []Point{{1e6, -1e-3}}},
	}}
	var buf bytes.Buffer
	if err := c.WriteSVG(&buf); err != nil {
		t.Fatal(err)
	}
	var axes []float64
	for _, e := range parseSVG(t, buf.Bytes()) {
		if e.attrs["class"] == "axis" {
			for _, k := range []string{"x1", "y1", "x2", "y2"} {
				v, _ := strconv.ParseFloat(e.attrs[k], 64)
				axes = append(axes, v)
			}
		}
	}
	// x axis: (x1, y1)–(x2, y2) along the bottom; y axis along the left.
	left, right, bottom, top := axes[0], axes[2], axes[1], axes[5]
	for _, e := range parseSVG(t, buf.Bytes()) {
		if e.attrs["class"] != "marker" || e.name != "circle" {
			continue
		}
		x, _ := strconv.ParseFloat(e.attrs["cx"], 64)
		y, _ := strconv.ParseFloat(e.attrs["cy"], 64)
		if x < left-0.1 || x > right+0.1 || y < top-0.1 || y > bottom+0.1 {
			t.Errorf("marker (%v, %v) outside [%v, %v]×[%v, %v]", x, y, left, right, top, bottom)
		}
	}
}

func TestBadInput(t *testing.T) {
	for _, p := range []Point{{math.NaN(), 1}, {1, math.Inf(1)}, {math.Inf(-1), 0}} {
		err := Chart{Series: []Series{{Name: "s", Points: []Point{p}}}}.WriteSVG(io.Discard)
		if !errors.Is(err, ErrBadPoint) {
			t.Errorf("%v: err = %v, want ErrBadPoint", p, err)
		}
	}
	for _, size := range [][2]int{{100, 400}, {640, 100}, {1 << 20, 400}} {
		if err := (Chart{Width: size[0], Height: size[1]}).WriteSVG(io.Discard); err == nil {
			t.Errorf("size %v accepted", size)
		}
	}
}

func TestNiceTicks(t *testing.T) {
	tests := []struct {
		lo, hi float64
		want   []float64
	}{
		{0, 10, []float64{0, 2, 4, 6, 8, 10}},
		{0.3, 0.92, []float64{0.2, 0.4, 0.6, 0.8, 1}},
		{-5, 5, []float64{-6, -4, -2, 0, 2, 4, 6}},
		{7, 7, []float64{6, 6.5, 7, 7.5, 8}},
	}
	for _, tc := range tests {
		got := niceTicks(tc.lo, tc.hi, 5)
		if len(got) != len(tc.want) {
			t.Errorf("niceTicks(%v, %v) = %v, want %v", tc.lo, tc.hi, got, tc.want)
			continue
		}
		for i := range got {
			if math.Abs(got[i]-tc.want[i]) > 1e-9 {
				t.Errorf("niceTicks(%v, %v) = %v, want %v", tc.lo, tc.hi, got, tc.want)
				break
			}
		}
	}
}
