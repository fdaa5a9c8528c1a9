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
	"gonum.org/v1/plot/font"
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
	p := plot.New()
	sans := func(s *font.Font, size vg.Length) {
		*s = font.Font{Typeface: "Liberation", Variant: "Sans", Size: size}
	}
	sans(&p.Title.TextStyle.Font, 13)
	sans(&p.X.Label.TextStyle.Font, 11)
	sans(&p.Y.Label.TextStyle.Font, 11)
	sans(&p.X.Tick.Label.Font, 10)
	sans(&p.Y.Tick.Label.Font, 10)
	sans(&p.Legend.TextStyle.Font, 10)
	p.Title.Text = title
	p.Title.Padding = vg.Points(6)
	p.X.Label.Text = "time since start (s)"
	p.Y.Label.Text = ylabel
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
	for _, o := range an.ops {
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
	for _, o := range an.ops {
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

// renderSVG draws a plot as an inline SVG element: no XML prolog, and a
// width that follows the page.
func renderSVG(p *plot.Plot, w, h vg.Length) (template.HTML, error) {
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
	s = svgSize.ReplaceAll(s[i:], []byte(`<svg class="plot" width="100%"`))
	return template.HTML(s), nil
}
