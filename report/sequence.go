package report

import (
	"bytes"
	"fmt"
	"html"
	"strings"
)

// Drawn by hand because no Mermaid renderer runs offline in Go: Mermaid
// itself is JavaScript that a served page could load only from the
// network, and the Go libraries the project keeps (gonum/plot, goldmark)
// draw plots and Markdown, not sequence diagrams. The renderer covers the
// statements anomalies.md writes (participant, "as" labels, ->>, -->>, ->,
// -->, Note over/left of/right of) and refuses anything else, so a page
// never shows a diagram that silently lost a statement.

// seqDiagram is a parsed Mermaid sequence diagram.
type seqDiagram struct {
	ids    []string          // participants, in order of appearance
	labels map[string]string // id → shown name
	items  []seqItem
}

// seqItem is a message (from → to) or a note (over from..to).
type seqItem struct {
	note     bool
	from, to string
	dashed   bool // a reply (-->>), drawn dashed
	head     bool // an arrowhead (->> and -->>)
	text     string
}

// parseSequence reads the Mermaid source of one sequence diagram.
func parseSequence(src string) (*seqDiagram, error) {
	d := &seqDiagram{labels: map[string]string{}}
	add := func(id string) {
		if _, ok := d.labels[id]; !ok {
			d.ids = append(d.ids, id)
			d.labels[id] = id
		}
	}
	lines := strings.Split(strings.TrimSpace(src), "\n")
	if len(lines) == 0 || strings.TrimSpace(lines[0]) != "sequenceDiagram" {
		return nil, fmt.Errorf("not a sequence diagram")
	}
	for i, raw := range lines[1:] {
		l := strings.TrimSpace(raw)
		switch {
		case l == "" || strings.HasPrefix(l, "%%"):
		case strings.HasPrefix(l, "participant "):
			id, label, hasLabel := strings.Cut(strings.TrimSpace(strings.TrimPrefix(l, "participant ")), " as ")
			add(strings.TrimSpace(id))
			if hasLabel {
				d.labels[strings.TrimSpace(id)] = strings.TrimSpace(label)
			}
		case strings.HasPrefix(l, "Note "):
			where, text, ok := strings.Cut(strings.TrimPrefix(l, "Note "), ":")
			if !ok {
				return nil, fmt.Errorf("line %d: a note without text: %q", i+2, l)
			}
			var over string
			for _, p := range []string{"over ", "left of ", "right of "} {
				if rest, ok := strings.CutPrefix(where, p); ok {
					over = rest
				}
			}
			if over == "" {
				return nil, fmt.Errorf("line %d: unsupported note: %q", i+2, l)
			}
			from, to, _ := strings.Cut(over, ",")
			from, to = strings.TrimSpace(from), strings.TrimSpace(to)
			if to == "" {
				to = from
			}
			add(from)
			add(to)
			d.items = append(d.items, seqItem{note: true, from: from, to: to, text: strings.TrimSpace(text)})
		default:
			it, err := parseMessage(l)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", i+2, err)
			}
			add(it.from)
			add(it.to)
			d.items = append(d.items, it)
		}
	}
	return d, nil
}

// arrows in the order they must be tried: longer first, as "-->>" also
// contains "->>".
var arrows = []struct {
	tok          string
	dashed, head bool
}{{"-->>", true, true}, {"->>", false, true}, {"-->", true, false}, {"->", false, false}}

func parseMessage(l string) (seqItem, error) {
	head, text, ok := strings.Cut(l, ":")
	if !ok {
		return seqItem{}, fmt.Errorf("unsupported statement: %q", l)
	}
	for _, a := range arrows {
		if from, to, ok := strings.Cut(head, a.tok); ok && strings.TrimSpace(from) != "" && strings.TrimSpace(to) != "" {
			return seqItem{from: strings.TrimSpace(from), to: strings.TrimSpace(to), dashed: a.dashed, head: a.head,
				text: strings.TrimSpace(text)}, nil
		}
	}
	return seqItem{}, fmt.Errorf("unsupported statement: %q", l)
}

// Layout, in pixels. Text widths are estimated (no font metrics in a
// server): 7 px a character at 12 px is generous for the sans-serif fonts
// browsers pick, so labels err on the side of room.
const (
	seqCharW   = 7.0
	seqPad     = 10.0
	seqMinGap  = 150.0
	seqHeadH   = 32.0
	seqMsgH    = 38.0
	seqNoteH   = 30.0
	seqMargin  = 12.0
	seqFontCSS = `font: 12px "Liberation Sans", "DejaVu Sans", Arial, sans-serif`
)

func textW(s string) float64 { return float64(len([]rune(s))) * seqCharW }

// svg draws the diagram: participants as columns with their lifelines,
// messages as arrows from one lifeline to another with their text above,
// notes as boxes over the lifelines they name.
func (d *seqDiagram) svg(n int) string {
	marker := fmt.Sprintf("seq-arrow-%d", n)
	idx := map[string]int{}
	for i, id := range d.ids {
		idx[id] = i
	}
	// Gaps between neighbouring columns grow until every message's text
	// fits between its two lifelines.
	gaps := make([]float64, max(len(d.ids)-1, 0))
	for i := range gaps {
		gaps[i] = max(seqMinGap, (textW(d.labels[d.ids[i]])+textW(d.labels[d.ids[i+1]]))/2+2*seqPad)
	}
	for _, it := range d.items {
		a, b := min(idx[it.from], idx[it.to]), max(idx[it.from], idx[it.to])
		if it.note || a == b {
			continue
		}
		span := 0.0
		for _, g := range gaps[a:b] {
			span += g
		}
		if need := textW(it.text) + 2*seqPad; need > span {
			for i := a; i < b; i++ {
				gaps[i] += (need - span) / float64(b-a)
			}
		}
	}
	x := make([]float64, len(d.ids))
	for i := 1; i < len(x); i++ {
		x[i] = x[i-1] + gaps[i-1]
	}
	// The drawing's left and right edges: headers, notes and self-messages
	// may stick out past the outer lifelines.
	left, right := 0.0, 0.0
	widen := func(l, r float64) { left, right = min(left, l), max(right, r) }
	for i, id := range d.ids {
		w := textW(d.labels[id]) + 2*seqPad
		widen(x[i]-w/2, x[i]+w/2)
	}
	var body bytes.Buffer
	y := seqMargin + seqHeadH + 10
	for _, it := range d.items {
		a, b := idx[it.from], idx[it.to]
		switch {
		case it.note:
			lo, hi := x[min(a, b)], x[max(a, b)]
			w := max(hi-lo+2*seqPad+20, textW(it.text)+2*seqPad)
			mid := (lo + hi) / 2
			widen(mid-w/2, mid+w/2)
			fmt.Fprintf(&body, `<g class="note"><rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" rx="3" fill="#fef9c3" stroke="#ca8a04"/>`+
				`<text x="%.1f" y="%.1f" text-anchor="middle">%s</text></g>`+"\n",
				mid-w/2, y, w, seqNoteH-6, mid, y+(seqNoteH-6)/2+4, html.EscapeString(it.text))
			y += seqNoteH
		case a == b:
			// A message to oneself: a loop out to the right.
			w := textW(it.text) + 2*seqPad
			widen(x[a], x[a]+max(w, 40))
			fmt.Fprintf(&body, `<g class="message"><text x="%.1f" y="%.1f">%s</text>`+
				`<path d="M%.1f %.1f h30 v12 h-30" fill="none" stroke="#334155"%s%s/></g>`+"\n",
				x[a]+6, y+10, html.EscapeString(it.text), x[a], y+16, dash(it.dashed), arrowHead(it.head, marker))
			y += seqMsgH + 8
		default:
			ly := y + 22
			fmt.Fprintf(&body, `<g class="message"><text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+
				`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#334155"%s%s/></g>`+"\n",
				(x[a]+x[b])/2, ly-6, html.EscapeString(it.text), x[a], ly, x[b], ly, dash(it.dashed), arrowHead(it.head, marker))
			y += seqMsgH
		}
	}
	bottom := y + 6
	shift := seqMargin - left
	width, height := right-left+2*seqMargin, bottom+seqHeadH+seqMargin
	var out bytes.Buffer
	fmt.Fprintf(&out, `<svg class="sequence" xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" style="%s">`+"\n",
		width, height, width, height, seqFontCSS)
	out.WriteString(`<defs><marker id="` + marker + `" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse">` +
		`<path d="M0 0 L10 5 L0 10 z" fill="#334155"/></marker></defs>` + "\n")
	fmt.Fprintf(&out, `<g transform="translate(%.1f 0)">`+"\n", shift)
	for i, id := range d.ids {
		fmt.Fprintf(&out, `<line class="lifeline" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#94a3b8" stroke-dasharray="3 3"/>`+"\n",
			x[i], seqMargin+seqHeadH, x[i], bottom)
		for _, top := range []float64{seqMargin, bottom} {
			w := textW(d.labels[id]) + 2*seqPad
			fmt.Fprintf(&out, `<g class="participant"><rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" rx="4" fill="#e0e7ff" stroke="#4f46e5"/>`+
				`<text x="%.1f" y="%.1f" text-anchor="middle">%s</text></g>`+"\n",
				x[i]-w/2, top, w, seqHeadH, x[i], top+seqHeadH/2+4, html.EscapeString(d.labels[id]))
		}
	}
	out.Write(body.Bytes())
	out.WriteString("</g></svg>\n")
	return out.String()
}

func dash(dashed bool) string {
	if dashed {
		return ` stroke-dasharray="5 3"`
	}
	return ""
}

func arrowHead(head bool, marker string) string {
	if head {
		return ` marker-end="url(#` + marker + `)"`
	}
	return ""
}
