package report

import (
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// dots draws what plotter.Scatter with circles draws, byte for byte, on
// linear and log scales, with points clipped by the axes' ranges and
// points at their edges (which pad the data area), for one series and for
// two drawn over each other; and where a circle repeats the one before
// it, it draws it once.
func TestDotsDrawAsScatter(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	series := func(n int, lo, hi float64) plotter.XYs {
		xys := make(plotter.XYs, n)
		for i := range xys {
			xys[i] = plotter.XY{X: r.Float64() * 12, Y: lo + r.Float64()*(hi-lo)}
		}
		// The edges, and beyond them.
		return append(xys, plotter.XY{X: 0, Y: lo}, plotter.XY{X: 10, Y: hi}, plotter.XY{X: 11, Y: hi / 2}, plotter.XY{X: 5, Y: hi * 3})
	}
	for _, c := range []struct {
		name string
		log  bool
		ss   []plotter.XYs
	}{
		{"linear", false, []plotter.XYs{series(300, -20, 40)}},
		{"log", true, []plotter.XYs{series(300, 0.01, 900)}},
		{"two series", true, []plotter.XYs{series(200, 0.5, 80), series(200, 1, 5)}},
		{"repeats", false, []plotter.XYs{{{X: 3, Y: 0.5}, {X: 3, Y: 0.5}, {X: 4, Y: 0.5}, {X: 3, Y: 0.5}}, {{X: 3, Y: 0.5}, {X: 3, Y: 0.50000001}}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			draw2 := func(withDots bool) string {
				an := analyze(Input{})
				an.end = 10e9
				p := an.newPlot(c.name, "ms")
				if c.log {
					p.Y.Scale = plot.LogScale{}
					p.Y.Tick.Marker = plot.TickerFunc(logTicks)
				}
				p.Y.Max = 100
				var ds []*dots
				for i, xys := range c.ss {
					color := rgb([]string{colRead, colHoldEdge}[i])
					if withDots {
						d, err := newDots(xys, color, vg.Points(1.6))
						if err != nil {
							t.Fatal(err)
						}
						p.Add(d)
						ds = append(ds, d)
						continue
					}
					s, err := plotter.NewScatter(xys)
					if err != nil {
						t.Fatal(err)
					}
					s.GlyphStyle = draw.GlyphStyle{Color: color, Radius: vg.Points(1.6), Shape: draw.CircleGlyph{}}
					p.Add(s)
				}
				svg, err := renderSVG(p, 6.4*vg.Inch, 2.6*vg.Inch, ds...)
				if err != nil {
					t.Fatal(err)
				}
				return string(svg)
			}
			want, got := draw2(false), draw2(true)
			// Scatter's drawing less each circle that repeats the one
			// before it.
			var lines []string
			for _, l := range strings.SplitAfter(want, "\n") {
				if strings.Contains(l, "A1.6,1.6") && l == lines[len(lines)-1] {
					continue
				}
				lines = append(lines, l)
			}
			if once := strings.Join(lines, ""); got != once {
				t.Errorf("dots draw\n%s\nScatter draws\n%s", got, once)
			}
			if c.name != "repeats" && len(lines) != len(strings.SplitAfter(want, "\n")) {
				t.Errorf("the points repeat")
			}
			if c.name == "repeats" && len(lines) == len(strings.SplitAfter(want, "\n")) {
				t.Errorf("no point repeats")
			}
		})
	}
}
