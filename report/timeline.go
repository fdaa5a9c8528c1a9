package report

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"strings"

	"github.com/lockbench/lockbench/history"
)

// Timeline geometry, in SVG user units (about pixels at a 1400 px window).
const (
	tlWidth  = 1300
	tlGutter = 56 // lane names
	tlRight  = 14
	tlTop    = 40 // fault labels, then incident markers
	laneH    = 54
	tlBottom = 22 // the axis
	// detailLimit is the most marks a timeline draws one by one; past it
	// marks are merged into columns of aggColumn px, which bounds the
	// page's size by its width rather than by the history's length.
	detailLimit = 3000
	aggColumn   = 2
)

// Colours, shared with the legend and the plots.
const (
	colHold      = "#dbeafe"
	colHoldEdge  = "#60a5fa"
	colRead      = "#64748b"
	colAccepted  = "#16a34a"
	colRejected  = "#f97316"
	colUnknown   = "#eab308"
	colStale     = "#dc2626"
	colLeaseLost = "#7f1d1d"
	colFault     = "#8b5cf6"
	colHealthy   = "#15803d"
)

// timeline is one drawing of the lanes over a window of time.
type timeline struct {
	// prefix keeps element ids unique when a page holds several timelines;
	// the overview's marks get the plain ids the tables link to.
	prefix   string
	from, to int64
	// focus is the incident a zoomed timeline is about.
	focus *incident
	// markers are the incidents flagged on the overview.
	markers []*incident
}

// svgBuilder accumulates SVG text.
type svgBuilder struct{ strings.Builder }

func (b *svgBuilder) f(format string, a ...any) { fmt.Fprintf(b, format, a...) }

// render draws the timeline and reports whether marks were merged.
func (an *analysis) render(tl timeline) (template.HTML, bool) {
	span := float64(max(tl.to-tl.from, 1))
	plotW := float64(tlWidth - tlGutter - tlRight)
	x := func(t int64) float64 {
		return tlGutter + plotW*float64(min(max(t, tl.from), tl.to)-tl.from)/span
	}
	// pxPerSec decides how much text fits: labels need room.
	pxPerSec := plotW / (span / 1e9)
	count := 0
	for _, name := range an.clients {
		l := an.lanes[name]
		count += countIn(l.holds, tl.from, tl.to, func(h hold) (int64, int64) { return h.start, h.end })
		count += countIn(l.marks, tl.from, tl.to, func(m mark) (int64, int64) { return m.call, m.ret })
	}
	aggregate := count > detailLimit
	height := tlTop + laneH*len(an.clients) + tlBottom
	bottom := float64(tlTop + laneH*len(an.clients))

	var b svgBuilder
	b.f(`<svg class="timeline" id="%s-timeline" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" role="img" aria-label="timeline from %s to %s">`,
		tl.prefix, tlWidth, height, history.Seconds(tl.from), history.Seconds(tl.to))
	b.f(`<defs><pattern id="%s-hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">`+
		`<line x1="0" y1="0" x2="0" y2="6" stroke="%s" stroke-width="2.5" stroke-opacity="0.45"/></pattern></defs>`, tl.prefix, colFault)

	for i := range an.clients {
		y := tlTop + laneH*i
		fill := "#ffffff"
		if i%2 == 1 {
			fill = "#f8fafc"
		}
		b.f(`<rect class="lane-bg" x="%d" y="%d" width="%g" height="%d" fill="%s"/>`, tlGutter, y, plotW, laneH, fill)
	}
	an.drawAxis(&b, tl, x, bottom)
	an.drawFaults(&b, tl, x, bottom)
	an.drawWindows(&b, tl, x)
	for i, name := range an.clients {
		an.drawLane(&b, tl, an.lanes[name], float64(tlTop+laneH*i), x, pxPerSec, aggregate)
	}
	an.drawMarkers(&b, tl, x, bottom)
	b.WriteString(`</svg>`)
	return template.HTML(b.String()), aggregate
}

func countIn[T any](xs []T, from, to int64, span func(T) (int64, int64)) int {
	n := 0
	for _, v := range xs {
		if s, e := span(v); e >= from && s <= to {
			n++
		}
	}
	return n
}

func (an *analysis) drawAxis(b *svgBuilder, tl timeline, x func(int64) float64, bottom float64) {
	step := niceStep(float64(tl.to-tl.from)/1e9, 12)
	first := math.Ceil(float64(tl.from)/1e9/step) * step
	for s := first; s <= float64(tl.to)/1e9+1e-9; s += step {
		px := x(int64(math.Round(s * 1e9)))
		b.f(`<line class="grid" x1="%.1f" y1="%d" x2="%.1f" y2="%.1f" stroke="#e2e8f0"/>`, px, tlTop, px, bottom+4)
		b.f(`<text class="tick" x="%.1f" y="%.1f" text-anchor="middle" font-size="11" fill="#475569">%s</text>`,
			px, bottom+16, formatTick(s, step))
	}
}

// niceStep picks a tick interval of 1, 2 or 5 times a power of ten giving
// at most n ticks over span.
func niceStep(span float64, n int) float64 {
	if span <= 0 {
		return 1
	}
	raw := span / float64(n)
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

func formatTick(s, step float64) string {
	decimals := 0
	if step < 1 {
		decimals = int(math.Ceil(-math.Log10(step)))
	}
	return fmt.Sprintf("%.*f s", decimals, s)
}

// drawFaults shades each fault window across every lane, hatches the
// lanes it froze, and names it above the lanes; a fault after whose heal
// the service was awaited shades that wait more lightly, up to a mark
// "healthy" (or "not healthy") where it ended.
func (an *analysis) drawFaults(b *svgBuilder, tl timeline, x func(int64) float64, bottom float64) {
	for _, f := range an.faults {
		if max(f.end, f.healthy) < tl.from || f.start > tl.to {
			continue
		}
		an.drawRecovery(b, f, x, bottom)
		if f.end < tl.from {
			continue
		}
		x0, x1 := x(f.start), x(f.end)
		w := max(x1-x0, 1)
		id := ""
		if tl.prefix == "ov" {
			id = fmt.Sprintf(` id="%s"`, faultID(f.startIdx))
		}
		b.f(`<g class="fault-window"%s><title>%s</title>`, id, html.EscapeString(f.title))
		b.f(`<rect class="fault" x="%.1f" y="%d" width="%.1f" height="%.1f" fill="%s" fill-opacity="0.13"/>`,
			x0, 2, w, bottom-2, colFault)
		for i, name := range an.clients {
			for _, target := range f.targets {
				if target == name {
					b.f(`<rect class="fault-target" x="%.1f" y="%d" width="%.1f" height="%d" fill="url(#%s-hatch)"/>`,
						x0, tlTop+laneH*i, w, laneH, tl.prefix)
				}
			}
		}
		label := f.description
		if w < float64(len(label))*6.5 {
			label = f.kind
		}
		if w >= float64(len(label))*5 {
			b.f(`<text class="fault-label" x="%.1f" y="14" font-size="11.5" font-weight="700" fill="#6d28d9">%s</text>`,
				x0+3, html.EscapeString(label))
		}
		b.WriteString(`</g>`)
	}
}

// drawRecovery draws the wait for the service after f's heal, if any.
func (an *analysis) drawRecovery(b *svgBuilder, f fault, x func(int64) float64, bottom float64) {
	if f.healthy == 0 {
		return
	}
	x0, x1 := x(f.end), x(f.healthy)
	label, color := "healthy", colHealthy
	if f.unhealthy != "" {
		label, color = "not healthy", colStale
	}
	b.f(`<g class="fault-recovery"><title>%s</title>`, html.EscapeString(f.description+f.recovery()))
	b.f(`<rect x="%.1f" y="%d" width="%.1f" height="%.1f" fill="%s" fill-opacity="0.06"/>`, x0, 2, max(x1-x0, 1), bottom-2, colFault)
	b.f(`<line class="healthy" x1="%.1f" y1="%d" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="1.5"/>`, x1, 18, x1, bottom, color)
	b.f(`<text x="%.1f" y="27" font-size="10.5" font-weight="700" fill="%s">%s</text></g>`, x1+3, color, label)
}

// drawMarkers flags incidents on the overview: a red line at the moment
// each came to a head, numbered, linking to its story.
func (an *analysis) drawMarkers(b *svgBuilder, tl timeline, x func(int64) float64, bottom float64) {
	for _, inc := range tl.markers {
		t := inc.to
		if inc.write != nil {
			t = inc.write.ret
		}
		px := x(t)
		// Orange for a stale write the fence stopped, red for an anomaly.
		color, what := colStale, "incident"
		if len(inc.rows) == 0 {
			color, what = colRejected, "rejected stale write"
		}
		b.f(`<a href="#%s" class="incident-marker"><title>%s %d: %s</title>`, inc.id, what, inc.n, html.EscapeString(inc.title))
		b.f(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="1.5" stroke-dasharray="4 3"/>`,
			px, tlTop-4, px, bottom, color)
		b.f(`<circle cx="%.1f" cy="%d" r="8" fill="%s"/><text x="%.1f" y="%d" font-size="11" font-weight="700" fill="#fff" text-anchor="middle">%d</text></a>`,
			px, tlTop-12, color, px, tlTop-8, inc.n)
	}
}

func (an *analysis) drawLane(b *svgBuilder, tl timeline, l *lane, y float64, x func(int64) float64, pxPerSec float64, aggregate bool) {
	b.f(`<g class="lane" data-client="%s">`, html.EscapeString(l.name))
	b.f(`<text class="lane-name" x="%d" y="%.1f" font-size="14" font-weight="700" fill="#0f172a">%s</text>`,
		8, y+laneH/2+5, html.EscapeString(l.name))
	if aggregate {
		an.drawLaneAggregated(b, tl, l, y, x)
	} else {
		an.drawLaneDetail(b, tl, l, y, x, pxPerSec)
	}
	b.WriteString(`</g>`)
}

// Vertical layout within a lane.
const (
	holdY   = 5
	holdH   = 20
	opY     = 29
	opH     = 11
	labelY  = 51
	labelFS = 10
)

func (an *analysis) drawLaneDetail(b *svgBuilder, tl timeline, l *lane, y float64, x func(int64) float64, pxPerSec float64) {
	ids := tl.prefix == "ov"
	id := func(idx int64) string {
		if !ids {
			return ""
		}
		return fmt.Sprintf(` id="%s"`, markID(idx))
	}
	for _, h := range l.holds {
		if h.end < tl.from || h.start > tl.to {
			continue
		}
		x0, x1 := x(h.start), x(h.end)
		w := max(x1-x0, 1)
		edge, sw := colHoldEdge, 1.0
		if tl.focus != nil && tl.focus.hold != nil && *tl.focus.hold == h {
			edge, sw = colStale, 2
		}
		b.f(`<rect class="hold"%s x="%.1f" y="%.1f" width="%.1f" height="%d" rx="2" fill="%s" stroke="%s" stroke-width="%g"><title>%s holds token %d from %s to %s</title></rect>`,
			id(h.okIdx), x0, y+holdY, w, holdH, colHold, edge, sw, l.name, h.token, history.Seconds(h.start), history.Seconds(h.end))
		label := fmt.Sprintf("t%d", h.token)
		if w < textWidth(label, 10)+4 {
			label = fmt.Sprintf("%d", h.token)
		}
		if w >= textWidth(label, 10)+4 {
			b.f(`<text class="token" x="%.1f" y="%.1f" font-size="10" fill="#1e3a8a">%s</text>`, x0+2, y+holdY+14, label)
		}
	}
	var labels []valueLabel
	for i := range l.marks {
		m := &l.marks[i]
		if m.ret < tl.from || m.call > tl.to {
			continue
		}
		x0, x1 := x(m.call), x(m.ret)
		cls, fill, stroke := markStyle(m)
		minW, yy, hh := 2.0, y+opY, float64(opH)
		if m.f == history.Write {
			minW = 4
		}
		if m.stale || tl.focus != nil && tl.focus.write == m {
			minW, yy, hh = 7, y+opY-4, opH+8
		}
		w := max(x1-x0, minW)
		b.f(`<rect class="%s"%s x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"%s><title>%s</title></rect>`,
			cls, id(m.callIdx), x0, yy, w, hh, fill, stroke, html.EscapeString(markTitle(m)))
		if m.erased {
			// Struck through: acknowledged, then overwritten.
			b.f(`<line class="strike" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"/>`,
				x0-2, yy+hh+1, x0+w+2, yy-1, colStale)
		}
		if l := markLabel(m, x0, tl.focus); l.text != "" {
			labels = append(labels, l)
		}
	}
	placeLabels(b, labels, y, pxPerSec)
	for _, ll := range l.lost {
		if ll.t < tl.from || ll.t > tl.to {
			continue
		}
		px, cy := x(ll.t), y+holdY+holdH/2
		b.f(`<g class="lease-lost"%s><title>%s learned at %s that its lease on token %d was lost</title>`+
			`<path d="M%.1f %.1f l8 8 m0 -8 l-8 8" stroke="%s" stroke-width="2.5"/>`,
			id(ll.idx), l.name, history.Seconds(ll.t), ll.token, px-4, cy-4, colLeaseLost)
		if pxPerSec >= 60 {
			// Left of the cross: it marks the end of a hold, and the
			// right edge is near.
			b.f(`<text x="%.1f" y="%.1f" font-size="10.5" font-weight="700" fill="%s" text-anchor="end">lease lost</text>`, px-7, cy+4, colLeaseLost)
		}
		b.WriteString(`</g>`)
	}
}

// valueLabel is the text under a read or a write.
type valueLabel struct {
	x        float64
	text     string
	color    string
	bold     bool
	priority bool
}

// markLabel labels reads r45 and writes w46; the focus incident's own
// marks and stale writes must be shown, others only where they fit.
func markLabel(m *mark, x0 float64, focus *incident) valueLabel {
	l := valueLabel{x: x0, color: "#334155"}
	switch {
	case m.stale:
		l.text, l.color, l.bold, l.priority = "STALE w"+m.short(), colStale, true, true
	case focus != nil && focus.write == m:
		l.text, l.color, l.bold = strings.ToUpper(string(m.outcome))+" w"+m.short(), strokeFor(m), true
	case m.f == history.Read && m.outcome == outOK:
		l.text = "r" + m.short()
	case m.f == history.Write:
		l.text, l.color = "w"+m.short(), strokeFor(m)
	}
	if focus != nil && focus.hold != nil && m.client == focus.client && m.token == focus.hold.token {
		l.priority = true
	}
	return l
}

// placeLabels draws the priority labels, then the others that do not
// overlap any label already placed; none at all when the scale is too
// small for any to be read.
func placeLabels(b *svgBuilder, labels []valueLabel, y, pxPerSec float64) {
	var placed [][2]float64
	fits := func(x0, x1 float64) bool {
		for _, p := range placed {
			if x0 < p[1] && p[0] < x1 {
				return false
			}
		}
		return true
	}
	for _, pass := range []bool{true, false} {
		for _, l := range labels {
			if l.priority != pass || (!pass && pxPerSec < 60) {
				continue
			}
			w := textWidth(l.text, labelFS)
			x0 := min(l.x, tlWidth-2-w)
			if !pass && !fits(x0, x0+w+3) {
				continue
			}
			placed = append(placed, [2]float64{x0, x0 + w + 3})
			weight := "400"
			if l.bold {
				weight = "700"
			}
			b.f(`<text class="value" x="%.1f" y="%.1f" font-size="%d" font-weight="%s" fill="%s">%s</text>`,
				x0, y+labelY, labelFS, weight, l.color, html.EscapeString(l.text))
		}
	}
}

// textWidth estimates the width of text in a sans font of size fs.
func textWidth(s string, fs float64) float64 { return float64(len(s)) * fs * 0.6 }

func markStyle(m *mark) (cls, fill, stroke string) {
	cls = "op " + m.f + " " + string(m.outcome)
	switch {
	case m.stale:
		return cls + " stale", colStale, ` stroke="#7f1d1d" stroke-width="1.5"`
	case m.f == history.Read && m.outcome == outOK:
		return cls, colRead, ""
	case m.erased:
		return cls + " erased", colAccepted, ""
	}
	return cls, strokeFor(m), ""
}

func strokeFor(m *mark) string {
	switch m.outcome {
	case outOK:
		return colAccepted
	case outRejected:
		return colRejected
	}
	return colUnknown
}

func markTitle(m *mark) string {
	s := fmt.Sprintf("%s %s %s with token %d: %s, %s to %s", m.client, m.f, m.shown(), m.token, m.outcome,
		history.Seconds(m.call), history.Seconds(m.ret))
	if m.err != "" {
		s += " (" + m.err + ")"
	}
	if m.stale {
		s += ", the incident's write"
	}
	if m.erased {
		s += ", erased by a stale write"
	}
	return s
}

// drawLaneAggregated merges holds closer than a pixel and draws reads and
// writes as columns coloured by the most telling outcome among them.
func (an *analysis) drawLaneAggregated(b *svgBuilder, tl timeline, l *lane, y float64, x func(int64) float64) {
	runStart, runEnd := -1.0, -1.0
	flush := func() {
		if runStart >= 0 {
			b.f(`<rect class="hold agg" x="%.1f" y="%.1f" width="%.1f" height="%d" fill="%s"/>`, runStart, y+holdY, max(runEnd-runStart, 1), holdH, colHold)
		}
	}
	for _, h := range l.holds {
		if h.end < tl.from || h.start > tl.to {
			continue
		}
		x0, x1 := x(h.start), x(h.end)
		if runStart >= 0 && x0-runEnd < 1 {
			runEnd = max(runEnd, x1)
			continue
		}
		flush()
		runStart, runEnd = x0, x1
	}
	flush()

	// Columns: 0 none, then increasing severity.
	cols := make([]int, (tlWidth-tlGutter-tlRight)/aggColumn+1)
	for i := range l.marks {
		m := &l.marks[i]
		if m.ret < tl.from || m.call > tl.to {
			continue
		}
		c0 := int(x(m.call)-tlGutter) / aggColumn
		c1 := int(x(m.ret)-tlGutter) / aggColumn
		sev := severity(m)
		for c := max(c0, 0); c <= min(c1, len(cols)-1); c++ {
			cols[c] = max(cols[c], sev)
		}
	}
	fills := []string{"", colRead, colAccepted, colUnknown, colRejected, colStale}
	for c := 0; c < len(cols); {
		if cols[c] == 0 {
			c++
			continue
		}
		end := c
		for end+1 < len(cols) && cols[end+1] == cols[c] {
			end++
		}
		b.f(`<rect class="op agg" x="%d" y="%.1f" width="%d" height="%d" fill="%s"/>`,
			tlGutter+c*aggColumn, y+opY, (end-c+1)*aggColumn, opH, fills[cols[c]])
		c = end + 1
	}
	lastPx := -10.0
	for _, ll := range l.lost {
		if ll.t < tl.from || ll.t > tl.to {
			continue
		}
		if px := x(ll.t); px-lastPx >= 6 {
			b.f(`<path class="lease-lost" d="M%.1f %.1f l8 8 m0 -8 l-8 8" stroke="%s" stroke-width="2.5"/>`, px-4, y+holdY+holdH/2-4, colLeaseLost)
			lastPx = px
		}
	}
}

func severity(m *mark) int {
	switch {
	case m.stale:
		return 5
	case m.outcome == outRejected:
		return 4
	case m.outcome == outUnknown:
		return 3
	case m.f == history.Write:
		return 2
	}
	return 1
}
