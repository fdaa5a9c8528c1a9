package report

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/lockbench/lockbench/history"
)

// maxBuckets bounds the points of a plot line; a long run gets wider
// buckets instead of more of them.
const maxBuckets = 150

// bucketWidth is 1 s, or a wider nice interval for runs longer than
// maxBuckets seconds.
func bucketWidth(end int64) float64 {
	secs := float64(end) / 1e9
	if secs <= maxBuckets {
		return 1
	}
	return niceStep(secs, maxBuckets)
}

// faultShade shades fault windows across a plot's height, under its lines.
type faultShade struct{ windows [][2]float64 }

var faultColor = color.NRGBA{R: 0x8b, G: 0x5c, B: 0xf6, A: 0x2a}

func (f faultShade) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	for _, w := range f.windows {
		x0 := max(trX(w[0]), c.Min.X)
		x1 := min(trX(w[1]), c.Max.X)
		if x1 <= x0 {
			continue
		}
		c.FillPolygon(faultColor, []vg.Point{{X: x0, Y: c.Min.Y}, {X: x1, Y: c.Min.Y}, {X: x1, Y: c.Max.Y}, {X: x0, Y: c.Max.Y}})
	}
}

func (an *analysis) shade() faultShade {
	var s faultShade
	for _, f := range an.faults {
		s.windows = append(s.windows, [2]float64{float64(f.start) / 1e9, float64(f.end) / 1e9})
	}
	return s
}

// newPlot makes a plot with sans text over the run's time.
func (an *analysis) newPlot(title, ylabel string) *plot.Plot {
	p := NewPlot(title, "time since start (s)", ylabel)
	p.X.Min, p.X.Max = 0, math.Max(float64(an.end)/1e9, 1)
	p.X.Tick.Marker = plot.TickerFunc(linearTicks)
	p.Add(plotter.NewGrid())
	if len(an.faults) > 0 {
		p.Add(an.shade())
	}
	return p
}

// linearTicks labels every 1, 2 or 5 times a power of ten, about a dozen
// ticks: gonum's default leaves a 20 s run with three.
func linearTicks(lo, hi float64) []plot.Tick {
	step := niceStep(hi-lo, 12)
	var ticks []plot.Tick
	for v := math.Ceil(lo/step) * step; v <= hi+step/1e6; v += step {
		ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', -1, 64)})
	}
	return ticks
}

// logTicks labels 1, 2 and 5 times each power of ten when the axis spans
// two decades or less (gonum's LogTicks would label one value there), and
// only the powers of ten beyond.
func logTicks(lo, hi float64) []plot.Tick {
	first, last := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	dense := last-first <= 2
	var ticks []plot.Tick
	for d := first; d <= last; d++ {
		for m := 1.0; m < 10; m++ {
			v := m * math.Pow(10, d)
			if v < lo || v > hi {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || dense && (m == 2 || m == 5) {
				t.Label = strconv.FormatFloat(v, 'g', -1, 64)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

// Plot line colours, as CSS for the page's legend.
const (
	colP50  = "#2563eb"
	colP95  = "#f97316"
	colMax  = "#dc2626"
	colOKs  = "#16a34a"
	colFail = "#f97316"
	colInfo = "#a16207"
)

// rgb parses one of the #rrggbb constants above.
func rgb(hex string) color.Color {
	v, err := strconv.ParseUint(strings.TrimPrefix(hex, "#"), 16, 32)
	if err != nil {
		panic(fmt.Sprintf("report: bad colour %q", hex))
	}
	return color.NRGBA{R: uint8(v >> 16), G: uint8(v >> 8), B: uint8(v), A: 0xff}
}

// latencyPlots draws, per operation type, the p50, p95 and maximum
// latency of the operations invoked in each bucket, on a log scale:
// a pause turns milliseconds into seconds.
func (an *analysis) latencyPlots() ([]template.HTML, error) {
	width := bucketWidth(an.end)
	byF := map[string]map[int][]float64{}
	for o := range an.ops() {
		if o.Lone || !o.Done {
			continue
		}
		if byF[o.F] == nil {
			byF[o.F] = map[int][]float64{}
		}
		b := int(float64(o.Call.Time) / 1e9 / width)
		byF[o.F][b] = append(byF[o.F][b], math.Max(float64(o.Ret.Time-o.Call.Time)/1e6, 0.001))
	}
	var out []template.HTML
	for _, f := range []string{history.Acquire, history.Read, history.Write, history.Release} {
		p := an.newPlot(f+" latency", "ms (log scale)")
		buckets := byF[f]
		if len(buckets) == 0 {
			p.Title.Text += ": no operations"
		} else {
			p.Y.Scale = plot.LogScale{}
			p.Y.Tick.Marker = plot.TickerFunc(logTicks)
			var p50, p95, top plotter.XYs
			lo, hi := math.Inf(1), 0.0
			for _, k := range slices.Sorted(maps.Keys(buckets)) {
				vs := buckets[k]
				slices.Sort(vs)
				x := (float64(k) + 0.5) * width
				p50 = append(p50, plotter.XY{X: x, Y: quantile(vs, 0.5)})
				p95 = append(p95, plotter.XY{X: x, Y: quantile(vs, 0.95)})
				top = append(top, plotter.XY{X: x, Y: vs[len(vs)-1]})
				lo, hi = min(lo, vs[0]), max(hi, vs[len(vs)-1])
			}
			// Headroom so the lines do not run along the frame.
			p.Y.Min, p.Y.Max = lo/1.5, hi*1.5
			for i, xys := range []plotter.XYs{p95, p50} {
				if err := addLine(p, xys, rgb([]string{colP95, colP50}[i])); err != nil {
					return nil, fmt.Errorf("%s latency: %w", f, err)
				}
			}
			// The maximum is dots on top: with under twenty operations in
			// a bucket its p95 is its maximum, and a line would hide one.
			dots, err := plotter.NewScatter(top)
			if err != nil {
				return nil, fmt.Errorf("%s latency: %w", f, err)
			}
			dots.GlyphStyle = draw.GlyphStyle{Color: rgb(colMax), Radius: vg.Points(2), Shape: draw.CircleGlyph{}}
			p.Add(dots)
		}
		svg, err := renderSVG(p, 6.4*vg.Inch, 2.6*vg.Inch)
		if err != nil {
			return nil, fmt.Errorf("%s latency: %w", f, err)
		}
		out = append(out, svg)
	}
	return out, nil
}

// throughputPlots draws, per operation type, the operations completed
// per second by outcome: a fault shows as acquires failing or hanging
// while reads and writes stop, which one plot of all types would blur.
func (an *analysis) throughputPlots() ([]template.HTML, error) {
	width := bucketWidth(an.end)
	n := int(float64(an.end)/1e9/width) + 1
	counts := map[string]map[history.Type][]float64{}
	for o := range an.ops() {
		if o.Lone || !o.Done {
			continue
		}
		if counts[o.F] == nil {
			counts[o.F] = map[history.Type][]float64{history.OK: make([]float64, n), history.Fail: make([]float64, n), history.Info: make([]float64, n)}
		}
		if c, ok := counts[o.F][o.Type]; ok {
			c[min(int(float64(o.Ret.Time)/1e9/width), n-1)]++
		}
	}
	var out []template.HTML
	for _, f := range []string{history.Acquire, history.Read, history.Write, history.Release} {
		p := an.newPlot(f+" throughput", "completed per second")
		if counts[f] == nil {
			p.Title.Text += ": no operations"
		}
		for _, s := range []struct {
			typ   history.Type
			color string
		}{{history.Info, colInfo}, {history.Fail, colFail}, {history.OK, colOKs}} {
			var xys plotter.XYs
			for i, c := range counts[f][s.typ] {
				xys = append(xys, plotter.XY{X: (float64(i) + 0.5) * width, Y: c / width})
			}
			if len(xys) == 0 {
				continue
			}
			if err := addLine(p, xys, rgb(s.color)); err != nil {
				return nil, fmt.Errorf("%s throughput: %w", f, err)
			}
		}
		p.Y.Min = 0
		svg, err := renderSVG(p, 6.4*vg.Inch, 2.6*vg.Inch)
		if err != nil {
			return nil, fmt.Errorf("%s throughput: %w", f, err)
		}
		out = append(out, svg)
	}
	return out, nil
}

// addLine draws a series; the page's legend names it, so that no legend
// box covers the data.
func addLine(p *plot.Plot, xys plotter.XYs, c color.Color) error {
	l, err := plotter.NewLine(xys)
	if err != nil {
		return fmt.Errorf("line: %w", err)
	}
	l.Color = c
	l.Width = vg.Points(1.6)
	p.Add(l)
	return nil
}

// quantile is the nearest-rank quantile of sorted values.
func quantile(sorted []float64, q float64) float64 {
	return sorted[int(math.Ceil(q*float64(len(sorted))))-1]
}

// svgSize matches the fixed size vgsvg writes, which the page replaces so
// the plot scales with its column.
var svgSize = regexp.MustCompile(`^<svg width="[^"]*" height="[^"]*"`)

// svgEnd is how vgsvg ends a drawing: it closes the group that turns its
// y axis upwards, then the element.
const svgEnd = "</g>\n</svg>\n"

// renderSVG draws a plot as an inline SVG element: no XML prolog, and a
// width that follows the page. The dots must be the plot's last plotters,
// in the order they were added: their points are written after everything
// vgsvg drew, where vgsvg would have written them.
func renderSVG(p *plot.Plot, w, h vg.Length, ds ...*dots) (template.HTML, error) {
	c := vgsvg.New(w, h)
	p.Draw(draw.New(c))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return "", fmt.Errorf("render svg: %w", err)
	}
	s := buf.Bytes()
	i := bytes.Index(s, []byte("<svg"))
	if i < 0 {
		return "", fmt.Errorf("render svg: no <svg> element in the output")
	}
	s = s[i:]
	if len(ds) > 0 {
		if !bytes.HasSuffix(s, []byte(svgEnd)) {
			return "", fmt.Errorf("render svg: the drawing does not end with %q", svgEnd)
		}
		s = s[:len(s)-len(svgEnd)]
	}
	n := len(s) + len(svgEnd)
	for _, d := range ds {
		n += len(d.svg)
	}
	var out strings.Builder
	out.Grow(n)
	if loc := svgSize.FindIndex(s); loc != nil {
		out.WriteString(`<svg class="plot" width="100%"`)
		s = s[loc[1]:]
	}
	out.Write(s)
	if len(ds) > 0 {
		for _, d := range ds {
			out.Write(d.svg)
		}
		out.WriteString(svgEnd)
	}
	return template.HTML(out.String()), nil
}

// dots is a scatter of filled circles that draws what plotter.Scatter with
// a draw.CircleGlyph draws, byte for byte, less each circle that repeats
// the one just drawn. The lease plots of a long run hold a point per
// acquire and per renewal, hundreds of thousands in time order, and many
// of them land where the one before was drawn, to the precision vgsvg
// writes: the picture is the same with that circle drawn once, since every
// circle of a series is opaque and of one colour. (Of the 250,000 circles
// of a 10⁶-event run, 75,000 repeat the one before; those repeating any
// earlier one are a handful more.) Scatter spends on every point a glyph box, a path, and a trip
// through fmt and vgsvg; dots writes each circle's SVG element itself, as
// vgsvg would (TestDotsDrawAsScatter holds it to that), and renderSVG puts
// them where vgsvg would have.
type dots struct {
	xys    plotter.XYs
	color  color.Color
	radius vg.Length
	// svg holds the circles' elements once Plot has drawn them.
	svg []byte
}

// newDots refuses what plotter.NewScatter refuses: NaN and infinities.
func newDots(xys plotter.XYs, c color.Color, radius vg.Length) (*dots, error) {
	for _, xy := range xys {
		if err := plotter.CheckFloats(xy.X, xy.Y); err != nil {
			return nil, err
		}
	}
	return &dots{xys: xys, color: c, radius: radius}, nil
}

// DataRange implements plot.DataRanger.
func (d *dots) DataRange() (xmin, xmax, ymin, ymax float64) { return plotter.XYRange(d.xys) }

// GlyphBoxes implements plot.GlyphBoxer. The plot pads its data area so
// that the glyph furthest out on each side fits, and every circle is the
// same size: the boxes of the points furthest left, right, down and up,
// among those the plot would consider, pad it as a box per point does.
func (d *dots) GlyphBoxes(p *plot.Plot) []plot.GlyphBox {
	var ext [4]plot.GlyphBox // left, right, bottom, top
	var has [4]bool
	side := func(k int, b plot.GlyphBox, beyond bool) {
		if !has[k] || beyond {
			ext[k], has[k] = b, true
		}
	}
	for _, xy := range d.xys {
		x, y := p.X.Norm(xy.X), p.Y.Norm(xy.Y)
		// The boxes plot.Plot.GlyphBoxes drops.
		if x < 0 || x > 1 || y < 0 || y > 1 {
			continue
		}
		b := plot.GlyphBox{X: x, Y: y, Rectangle: vg.Rectangle{Min: vg.Point{X: -d.radius, Y: -d.radius}, Max: vg.Point{X: d.radius, Y: d.radius}}}
		// NaN, which a log scale makes of values below zero, wins no
		// side, as it wins none in gonum's comparisons.
		if !math.IsNaN(x) {
			side(0, b, x < ext[0].X)
			side(1, b, x > ext[1].X)
		}
		if !math.IsNaN(y) {
			side(2, b, y < ext[2].Y)
			side(3, b, y > ext[3].Y)
		}
	}
	var out []plot.GlyphBox
	for k := range ext {
		if has[k] {
			out = append(out, ext[k])
		}
	}
	return out
}

// Plot implements plot.Plotter.
func (d *dots) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	// vgsvg draws a full circle as two half arcs, from the point at angle
	// 0 to the one at π and back, with the numbers written as %.5g.
	r := d.radius.Points()
	s0, c0 := math.Sincos(0.5 * (2 * math.Pi))
	s1, c1 := math.Sincos(2 * math.Pi)
	arc := "A" + strconv.FormatFloat(r, 'g', 5, 64) + "," + strconv.FormatFloat(r, 'g', 5, 64) + " 0 1 1 "
	style := `Z" style="fill:` + svgColor(d.color) + `" />` + "\n"
	num := func(b []byte, x, y float64) []byte {
		b = strconv.AppendFloat(b, x, 'g', 5, 64)
		b = append(b, ',')
		return strconv.AppendFloat(b, y, 'g', 5, 64)
	}
	// A circle takes 90 to 106 bytes, with coordinates of up to five
	// digits: room for the longest spares growing a long run's tens of
	// megabytes.
	d.svg = slices.Grow(d.svg[:0], 106*len(d.xys))
	last := -1 // where the last circle drawn starts in svg
	for _, xy := range d.xys {
		pt := vg.Point{X: trX(xy.X), Y: trY(xy.Y)}
		if !c.Contains(pt) {
			continue
		}
		x, y := pt.X.Points(), pt.Y.Points()
		start := len(d.svg)
		d.svg = append(d.svg, `<path d="M`...)
		d.svg = num(d.svg, (pt.X + d.radius).Points(), y)
		d.svg = append(d.svg, arc...)
		d.svg = num(d.svg, x+r*c0, y+r*s0)
		d.svg = append(d.svg, arc...)
		d.svg = num(d.svg, x+r*c1, y+r*s1)
		d.svg = append(d.svg, style...)
		if last >= 0 && bytes.Equal(d.svg[last:start], d.svg[start:]) {
			d.svg = d.svg[:start]
			continue
		}
		last = start
	}
}

// svgColor writes an opaque colour as vgsvg does.
func svgColor(c color.Color) string {
	r, g, b, a := c.RGBA()
	k := 255.0 / float64(a)
	return fmt.Sprintf("#%02X%02X%02X", int(float64(r)*k), int(float64(g)*k), int(float64(b)*k))
}
