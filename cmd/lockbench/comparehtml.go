package main

import (
	"bytes"
	"cmp"
	"fmt"
	"html/template"
	"image/color"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/lockbench/lockbench/catalog"
	"github.com/lockbench/lockbench/metrics"
	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/rundir"
)

// resultsRoot is where compare.html goes by default: beside the catalog
// when the catalog is a file, else results.
func resultsRoot(catalogPath string) string {
	if fi, err := os.Stat(catalogPath); err == nil && fi.Mode().IsRegular() {
		return filepath.Dir(catalogPath)
	}
	return "results"
}

// writeCompareHTML renders the page in memory first, so that a failure
// leaves no half-written file, then writes it to out and prints its path.
func writeCompareHTML(out, catalogPath string, q catalog.Query, gs []catalog.Group) error {
	if out == "" {
		out = filepath.Join(resultsRoot(catalogPath), rundir.CompareFile)
	}
	var buf bytes.Buffer
	if err := renderCompareHTML(&buf, out, catalogPath, q, gs); err != nil {
		return fail(exitHarness, err)
	}
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		return fail(exitHarness, fmt.Errorf("write %s: %w", out, err))
	}
	fmt.Println(out)
	return nil
}

type pageRun struct {
	Dir  string // as the catalog recorded it
	Href string // "" when the directory is missing here
	// Missing: the directory is not on this machine; NoReport: it is, but
	// holds no report.html, and the link goes to the directory.
	Missing, NoReport bool
}

type pageRow struct {
	ID    string
	Label string
	Key   []string
	Cells []string
	Runs  []pageRun
}

type pagePlot struct {
	ID, Caption string
	Legend      []legendEntry
	SVG         template.HTML
}

type legendEntry struct{ Name, Color string }

// palette colours a plot's series, in order; it repeats past its end.
var palette = []string{"#2563eb", "#dc2626", "#16a34a", "#f97316", "#7c3aed", "#0891b2", "#a16207", "#db2777", "#475569"}

func groupBy(q catalog.Query) []string {
	if len(q.By) == 0 {
		return catalog.DefaultBy
	}
	return q.By
}

func groupLabel(by []string, g catalog.Group) string {
	var parts []string
	for _, k := range by {
		parts = append(parts, g.Key[k])
	}
	return strings.Join(parts, " · ")
}

// renderCompareHTML writes the page that out will be; run links are made
// relative to out's directory, so that the page and the tree can be moved
// together or served.
func renderCompareHTML(w *bytes.Buffer, out, catalogPath string, q catalog.Query, gs []catalog.Group) error {
	by := groupBy(q)
	base, err := filepath.Abs(filepath.Dir(out))
	if err != nil {
		return fmt.Errorf("compare html: %w", err)
	}
	page := struct {
		Catalog, Selection, Generated string
		Head                          []string
		KeyCols                       int
		Rows                          []pageRow
		Plots                         []pagePlot
	}{Catalog: catalogPath, Selection: describe(q), Generated: time.Now().UTC().Format(time.RFC3339), KeyCols: len(by)}
	page.Head = tableHead(by)
	for i, g := range gs {
		r := pageRow{ID: fmt.Sprintf("g%d", i+1), Label: groupLabel(by, g)}
		cells := tableRow(by, g)
		r.Key, r.Cells = cells[:len(by)], cells[len(by):]
		for _, d := range g.RunsAt {
			r.Runs = append(r.Runs, runLink(base, d))
		}
		page.Rows = append(page.Rows, r)
	}
	for _, mk := range []func(by []string, gs []catalog.Group) (pagePlot, bool, error){cdfPlot, detectionPlot, unavailabilityPlot, ttlInvalidPlot, ttlUnavailabilityPlot} {
		p, ok, err := mk(by, gs)
		if err != nil {
			return fmt.Errorf("compare html: %w", err)
		}
		if ok {
			page.Plots = append(page.Plots, p)
		}
	}
	if err := compareTmpl.Execute(w, page); err != nil {
		return fmt.Errorf("compare html: %w", err)
	}
	return nil
}

// runLink links a run to its report, by a path relative to the page where
// there is one (the catalog records absolute directories).
func runLink(base, dir string) pageRun {
	r := pageRun{Dir: dir}
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		r.Missing = true
		return r
	}
	target := filepath.Join(dir, rundir.HTMLFile)
	if _, err := os.Stat(target); err != nil {
		r.NoReport, target = true, dir
	}
	if abs, err := filepath.Abs(target); err == nil {
		target = abs
	}
	if rel, err := filepath.Rel(base, target); err == nil {
		r.Href = (&url.URL{Path: filepath.ToSlash(rel)}).String()
	} else {
		r.Href = (&url.URL{Scheme: "file", Path: filepath.ToSlash(target)}).String()
	}
	if r.NoReport {
		r.Href += "/"
	}
	return r
}

// The plots are as wide as the run report's; category plots grow a row
// per group.
const plotWidth = 6.4 * vg.Inch

func categoryHeight(n int) vg.Length { return max(2.4*vg.Inch, vg.Length(n)*0.3*vg.Inch+1.1*vg.Inch) }

// categories labels the y axis with one row per label, the first on top.
func categories(p *plot.Plot, labels []string) {
	var ticks []plot.Tick
	for i, l := range labels {
		ticks = append(ticks, plot.Tick{Value: float64(len(labels) - 1 - i), Label: l})
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	p.Y.Min, p.Y.Max = -0.6, float64(len(labels))-0.4
	p.Y.Label.Text = ""
}

func catRow(i, n int) float64 { return float64(n - 1 - i) }

// cdfPlot draws the uncontended acquire's distribution per backend, from
// the groups' merged histograms (per group when backend is not a --by key).
func cdfPlot(by []string, gs []catalog.Group) (pagePlot, bool, error) {
	type series struct {
		name string
		h    metrics.Histogram
	}
	var ss []series
	for _, g := range gs {
		name := groupLabel(by, g)
		if slices.Contains(by, "backend") {
			name = g.Key["backend"]
		}
		k := slices.IndexFunc(ss, func(s series) bool { return s.name == name })
		if k < 0 {
			ss = append(ss, series{name: name})
			k = len(ss) - 1
		}
		ss[k].h.Merge(g.Histograms().AcquireUncontended)
	}
	pp := pagePlot{ID: "plot-acquire-cdf", Caption: "Uncontended acquire: the fraction of acquires done within a time, from the runs' merged histograms (bucket edges 9 % apart)."}
	p := report.NewPlot("uncontended acquire, CDF", "ms (log scale)", "fraction of acquires")
	p.Add(plotter.NewGrid())
	p.Y.Min, p.Y.Max = 0, 1
	lo, hi := math.Inf(1), 0.0
	for i, s := range ss {
		ms, frac := s.h.CDF()
		if len(ms) == 0 {
			continue
		}
		xys := make(plotter.XYs, len(ms))
		for j := range ms {
			xys[j] = plotter.XY{X: ms[j], Y: frac[j]}
		}
		lo, hi = min(lo, ms[0]), max(hi, ms[len(ms)-1])
		c := palette[i%len(palette)]
		if err := line(p, xys, report.RGB(c), false); err != nil {
			return pp, false, fmt.Errorf("acquire cdf: %w", err)
		}
		pp.Legend = append(pp.Legend, legendEntry{s.name, c})
	}
	if len(pp.Legend) == 0 {
		p.Title.Text += ": no uncontended acquires"
	} else {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = report.LogTicks
		p.X.Min, p.X.Max = lo/1.2, hi*1.2
	}
	svg, err := report.SVG(p, plotWidth, 3*vg.Inch)
	pp.SVG = svg
	return pp, true, err
}

func line(p *plot.Plot, xys plotter.XYs, c color.Color, dashed bool) error {
	l, err := plotter.NewLine(xys)
	if err != nil {
		return fmt.Errorf("line: %w", err)
	}
	l.Color, l.Width = c, vg.Points(1.6)
	if dashed {
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	}
	p.Add(l)
	return nil
}

func marks(p *plot.Plot, xys plotter.XYs, c color.Color) error {
	s, err := plotter.NewScatter(xys)
	if err != nil {
		return fmt.Errorf("points: %w", err)
	}
	s.GlyphStyle = draw.GlyphStyle{Color: c, Radius: vg.Points(3), Shape: draw.CircleGlyph{}}
	p.Add(s)
	return nil
}

// interval is a point with its Wilson bounds, for the error bars.
type interval struct {
	plotter.XYs
	lo, hi []float64
}

func (iv interval) XError(i int) (float64, float64) {
	return iv.XYs[i].X - iv.lo[i], iv.hi[i] - iv.XYs[i].X
}

func (iv interval) YError(i int) (float64, float64) {
	return iv.XYs[i].Y - iv.lo[i], iv.hi[i] - iv.XYs[i].Y
}

// detectionPlot draws each group's invalid runs over its judged runs with
// the Wilson 95 % interval; a group with none judged has no point.
func detectionPlot(by []string, gs []catalog.Group) (pagePlot, bool, error) {
	pp := pagePlot{ID: "plot-detection", Caption: "Detection rate: invalid runs over judged runs, per group, with the Wilson 95 % interval.",
		Legend: []legendEntry{{"invalid / judged, 95 % interval", palette[1]}}}
	p := report.NewPlot("detection rate", "invalid / judged", "")
	p.Add(plotter.NewGrid())
	var labels []string
	var iv interval
	for i, g := range gs {
		label := groupLabel(by, g)
		judged := g.Runs - g.Unknown
		if judged == 0 {
			label += " (none judged)"
		} else {
			iv.XYs = append(iv.XYs, plotter.XY{X: float64(g.Invalid) / float64(judged), Y: catRow(i, len(gs))})
			iv.lo, iv.hi = append(iv.lo, g.InvalidInterval[0]), append(iv.hi, g.InvalidInterval[1])
		}
		labels = append(labels, label)
	}
	categories(p, labels)
	p.X.Min, p.X.Max = 0, 1
	p.X.Tick.Marker = plot.DefaultTicks{}
	if len(iv.XYs) > 0 {
		bars, err := plotter.NewXErrorBars(iv)
		if err != nil {
			return pp, false, fmt.Errorf("detection: %w", err)
		}
		bars.Color, bars.Width = report.RGB(palette[1]), vg.Points(1.4)
		p.Add(bars)
		if err := marks(p, iv.XYs, report.RGB(palette[1])); err != nil {
			return pp, false, fmt.Errorf("detection: %w", err)
		}
	}
	svg, err := report.SVG(p, plotWidth, categoryHeight(len(gs)))
	pp.SVG = svg
	return pp, true, err
}

// unavailabilityPlot draws each group's unavailability after a fault,
// p50 to p99, the groups ordered by their fault when nemesis is a --by key.
func unavailabilityPlot(by []string, gs []catalog.Group) (pagePlot, bool, error) {
	pp := pagePlot{ID: "plot-unavailability", Caption: "Unavailability after each fault, p50 and p99 of the runs' merged histograms, per group and fault.",
		Legend: []legendEntry{{"p50", palette[0]}, {"p99", palette[1]}}}
	order := slices.Clone(gs)
	if slices.Contains(by, "nemesis") {
		slices.SortStableFunc(order, func(a, b catalog.Group) int { return cmp.Compare(a.Key["nemesis"], b.Key["nemesis"]) })
	}
	p := report.NewPlot("unavailability per fault", "ms (log scale)", "")
	p.Add(plotter.NewGrid())
	var labels []string
	var p50, p99 plotter.XYs
	lo, hi := math.Inf(1), 0.0
	for i, g := range order {
		label := groupLabel(by, g)
		u := g.Unavailable
		if u.P50 == nil || u.P99 == nil {
			labels = append(labels, label+" (no faults)")
			continue
		}
		labels = append(labels, label)
		y := catRow(i, len(order))
		p50, p99 = append(p50, plotter.XY{X: *u.P50, Y: y}), append(p99, plotter.XY{X: *u.P99, Y: y})
		if err := line(p, plotter.XYs{{X: *u.P50, Y: y}, {X: *u.P99, Y: y}}, report.RGB("#94a3b8"), false); err != nil {
			return pp, false, fmt.Errorf("unavailability: %w", err)
		}
		lo, hi = min(lo, *u.P50), max(hi, *u.P99)
	}
	categories(p, labels)
	if len(p50) == 0 {
		p.Title.Text += ": no faults"
	} else {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = report.LogTicks
		p.X.Min, p.X.Max = lo/1.5, hi*1.5
		for i, xys := range []plotter.XYs{p50, p99} {
			if err := marks(p, xys, report.RGB(palette[i])); err != nil {
				return pp, false, fmt.Errorf("unavailability: %w", err)
			}
		}
	}
	svg, err := report.SVG(p, plotWidth, categoryHeight(len(order)))
	pp.SVG = svg
	return pp, true, err
}

// ttlPoint is a group at its TTL.
type ttlPoint struct {
	ttl float64 // s
	g   catalog.Group
}

// ttlSeries splits the groups by their keys other than ttl, each series
// in TTL order; none when ttl is not a --by key. A TTL that does not parse
// as a duration is left out.
func ttlSeries(by []string, gs []catalog.Group) (names []string, series [][]ttlPoint) {
	if !slices.Contains(by, "ttl") {
		return nil, nil
	}
	rest := slices.DeleteFunc(slices.Clone(by), func(k string) bool { return k == "ttl" })
	for _, g := range gs {
		d, err := time.ParseDuration(g.Key["ttl"])
		if err != nil {
			continue
		}
		name := groupLabel(rest, g)
		if name == "" {
			name = "all"
		}
		k := slices.Index(names, name)
		if k < 0 {
			names, series = append(names, name), append(series, nil)
			k = len(names) - 1
		}
		series[k] = append(series[k], ttlPoint{d.Seconds(), g})
	}
	for _, s := range series {
		slices.SortFunc(s, func(a, b ttlPoint) int { return cmp.Compare(a.ttl, b.ttl) })
	}
	return names, series
}

func ttlAxis(p *plot.Plot, series [][]ttlPoint) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range series {
		lo, hi = min(lo, s[0].ttl), max(hi, s[len(s)-1].ttl)
	}
	pad := math.Max((hi-lo)*0.05, 0.1)
	p.X.Min, p.X.Max = math.Max(lo-pad, 0), hi+pad
	p.X.Tick.Marker = plot.DefaultTicks{}
}

// ttlInvalidPlot draws the detection rate against the lease's TTL.
func ttlInvalidPlot(by []string, gs []catalog.Group) (pagePlot, bool, error) {
	names, series := ttlSeries(by, gs)
	if len(series) == 0 {
		return pagePlot{}, false, nil
	}
	pp := pagePlot{ID: "plot-ttl-invalid", Caption: "Invalid runs over judged runs against the lease's TTL, with the Wilson 95 % interval, per combination of the other keys."}
	p := report.NewPlot("invalid rate against TTL", "TTL (s)", "invalid / judged")
	p.Add(plotter.NewGrid())
	p.Y.Min, p.Y.Max = 0, 1
	ttlAxis(p, series)
	for i, s := range series {
		c := report.RGB(palette[i%len(palette)])
		var iv interval
		for _, pt := range s {
			if judged := pt.g.Runs - pt.g.Unknown; judged > 0 {
				iv.XYs = append(iv.XYs, plotter.XY{X: pt.ttl, Y: float64(pt.g.Invalid) / float64(judged)})
				iv.lo, iv.hi = append(iv.lo, pt.g.InvalidInterval[0]), append(iv.hi, pt.g.InvalidInterval[1])
			}
		}
		if len(iv.XYs) == 0 {
			continue
		}
		bars, err := plotter.NewYErrorBars(iv)
		if err != nil {
			return pp, false, fmt.Errorf("ttl invalid: %w", err)
		}
		bars.Color, bars.Width = c, vg.Points(1.2)
		p.Add(bars)
		if err := line(p, iv.XYs, c, false); err != nil {
			return pp, false, fmt.Errorf("ttl invalid: %w", err)
		}
		if err := marks(p, iv.XYs, c); err != nil {
			return pp, false, fmt.Errorf("ttl invalid: %w", err)
		}
		pp.Legend = append(pp.Legend, legendEntry{names[i], palette[i%len(palette)]})
	}
	svg, err := report.SVG(p, plotWidth, 3*vg.Inch)
	pp.SVG = svg
	return pp, true, err
}

// ttlUnavailabilityPlot draws unavailability's p99 (solid) and p50
// (dashed) against the lease's TTL.
func ttlUnavailabilityPlot(by []string, gs []catalog.Group) (pagePlot, bool, error) {
	names, series := ttlSeries(by, gs)
	if len(series) == 0 {
		return pagePlot{}, false, nil
	}
	pp := pagePlot{ID: "plot-ttl-unavailability", Caption: "Unavailability after each fault against the lease's TTL: p99 solid, p50 dashed, per combination of the other keys."}
	p := report.NewPlot("unavailability against TTL", "TTL (s)", "ms")
	p.Add(plotter.NewGrid())
	ttlAxis(p, series)
	drawn := false
	for i, s := range series {
		c := report.RGB(palette[i%len(palette)])
		var p50, p99 plotter.XYs
		for _, pt := range s {
			if u := pt.g.Unavailable; u.P50 != nil && u.P99 != nil {
				p50, p99 = append(p50, plotter.XY{X: pt.ttl, Y: *u.P50}), append(p99, plotter.XY{X: pt.ttl, Y: *u.P99})
			}
		}
		if len(p50) == 0 {
			continue
		}
		for k, xys := range []plotter.XYs{p99, p50} {
			if err := line(p, xys, c, k == 1); err != nil {
				return pp, false, fmt.Errorf("ttl unavailability: %w", err)
			}
			if err := marks(p, xys, c); err != nil {
				return pp, false, fmt.Errorf("ttl unavailability: %w", err)
			}
		}
		drawn = true
		pp.Legend = append(pp.Legend, legendEntry{names[i], palette[i%len(palette)]})
	}
	if !drawn {
		p.Title.Text += ": no faults"
	}
	p.Y.Min = 0
	svg, err := report.SVG(p, plotWidth, 3*vg.Inch)
	pp.SVG = svg
	return pp, true, err
}

var compareTmpl = template.Must(template.New("compare").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>lockbench compare</title>
<style>
body { margin: 0; background: #f1f5f9; color: #0f172a; font: 14px/1.45 "Liberation Sans", "DejaVu Sans", Arial, sans-serif; }
main { max-width: 1300px; margin: 0 auto; padding: 20px; }
h1 { font-size: 22px; margin: 4px 0 14px; } h2 { font-size: 17px; margin: 22px 0 8px; } h3 { font-size: 14px; margin: 14px 0 4px; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; width: 100%; background: #fff; border: 1px solid #e2e8f0; }
th, td { text-align: left; padding: 6px 10px; border-bottom: 1px solid #e2e8f0; vertical-align: top; white-space: nowrap; }
th { background: #f8fafc; color: #475569; font-weight: 600; }
td.n { font-variant-numeric: tabular-nums; }
a { color: #1d4ed8; text-decoration: none; } a:hover { text-decoration: underline; }
.plots { display: grid; grid-template-columns: repeat(auto-fit, minmax(560px, 1fr)); gap: 14px; }
figure { margin: 0; background: #fff; border: 1px solid #e2e8f0; padding: 8px; }
figcaption { font-size: 12px; color: #475569; }
svg.plot { height: auto; display: block; }
.key { display: inline-block; margin-right: 12px; } .swatch { display: inline-block; width: 14px; height: 3px; vertical-align: middle; margin-right: 4px; }
.muted { color: #64748b; } .id { font-family: "DejaVu Sans Mono", monospace; font-size: 12px; }
.missing { color: #b45309; font-weight: 600; }
ul.runs { margin: 0; padding-left: 20px; }
</style></head>
<body><main>
<h1>lockbench compare</h1>
<p class="muted">Catalog {{.Catalog}}; runs selected: {{.Selection}}; each run by its latest judgment. Written {{.Generated}}.</p>
<h2>Groups</h2>
<div class="scroll"><table id="groups">
<tr>{{range .Head}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}{{$id := .ID}}<tr class="group" id="row-{{.ID}}">{{range .Key}}<td>{{.}}</td>{{end}}{{range .Cells}}<td class="n"><a href="#{{$id}}">{{.}}</a></td>{{end}}</tr>
{{end}}</table></div>
<p class="muted">Each number links to the runs behind it.</p>
<h2>Plots</h2>
<div class="plots">
{{range .Plots}}<figure id="{{.ID}}">{{.SVG}}
<figcaption>{{.Caption}}{{if .Legend}}<br>{{range .Legend}}<span class="key"><span class="swatch" style="background: {{.Color}}"></span>{{.Name}}</span>{{end}}{{end}}</figcaption></figure>
{{end}}</div>
<h2>Runs behind each group</h2>
{{range .Rows}}<section class="runs" id="{{.ID}}"><h3>{{.Label}} <span class="muted">({{len .Runs}} runs)</span></h3>
<ul class="runs">{{range .Runs}}<li class="id">{{if .Missing}}{{.Dir}} <span class="missing">missing</span>{{else}}<a href="{{.Href}}">{{.Dir}}</a>{{if .NoReport}} <span class="muted">(no report)</span>{{end}}{{end}}</li>
{{end}}</ul></section>
{{end}}
</main></body></html>
`))
