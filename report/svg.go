package report

import (
	"html/template"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
)

// These draw other pages' plots as the run report draws its own, so that
// every page lockbench writes looks alike and embeds its plots the same
// way: inline SVG, no files beside the page.

// NewPlot is a plot with the report's sans text and its labels.
func NewPlot(title, xlabel, ylabel string) *plot.Plot {
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
	p.X.Label.Text = xlabel
	p.Y.Label.Text = ylabel
	return p
}

// SVG draws p, w by h, as an inline SVG element whose width follows the
// page's column.
func SVG(p *plot.Plot, w, h vg.Length) (template.HTML, error) { return renderSVG(p, w, h) }

// LogTicks labels a log axis as the report's latency plots do: 1, 2 and
// 5 times each power of ten over two decades or less, the powers beyond.
var LogTicks plot.Ticker = plot.TickerFunc(logTicks)

// RGB is a #rrggbb colour; it panics on anything else, as it is meant for
// constants.
func RGB(hex string) color.Color { return rgb(hex) }
