package report

import (
	"bytes"
	"cmp"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/lockbench/lockbench/checkers"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/store"

	"github.com/lockbench/lockbench/rundir"
)

//go:embed report.html.tmpl
var reportTmpl string

var pageTmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"seconds": history.Seconds,
}).Parse(reportTmpl))

// Bounds that keep a page for a huge history small.
const (
	// maxZooms is how many incidents get a zoomed timeline and a story on
	// the page; anomalies.md tells them all.
	maxZooms = 4
	// maxEventRows bounds the table of events the anomalies cite.
	maxEventRows = 1500
)

type pageData struct {
	Title, TestErr, Verdict, Seed, Start, RunID, Duration string
	Events                                                int
	Notes                                                 []string
	Checkers                                              []checkerRow
	Legend                                                []legendItem
	Overview                                              template.HTML
	OverviewNote                                          string
	Incidents, Rejections                                 []incidentView
	MoreIncidents                                         []incidentView
	Anomalies                                             []anomalyView
	EventRows                                             []eventRow
	EventsNote                                            string
	Latency                                               []template.HTML
	LatencyLegend, ThroughputLegend                       []legendItem
	// CountKeys are the count keys of the checkers table with their
	// meanings, in order of first appearance.
	CountKeys   []countItem
	Throughput  []template.HTML
	BucketNote  string
	Lease       leaseView
	Config, Run []keyValue
	Files       []string
}

type checkerRow struct {
	Name, Verdict, Summary, Reason string
	Counts                         []countItem
}

// countItem is one of a checker's counts, with what it tallies.
type countItem struct {
	Key     string
	N       int64
	Meaning string
}

type legendItem struct {
	Class, Label string
	Style        template.CSS
}

type incidentView struct {
	ID, Title string
	N         int
	Steps     []step
	Checkers  []anomalyView
	Timeline  template.HTML
	Note      string
}

type anomalyView struct {
	ID, Checker, Kind, Time, Message, Clients, Tokens string
	Incident                                          string
	IncidentN, MoreEvents                             int
	Events                                            []eventLink
}

type eventLink struct {
	Index int64
	Href  string
}

type eventRow struct {
	ID, Time, Process, Type, F, Value, Token, Req, Store, Error, Mark string
	Index                                                             int64
}

type keyValue struct{ Key, Value string }

func (an *analysis) writeHTML(page *bytes.Buffer) error {
	d := pageData{
		Title:   cmp.Or(an.test.Name, "lockbench run"),
		Verdict: cmp.Or(string(an.in.Verdict), "not checked"),
		Events:  len(an.in.History),
		Notes:   an.in.Notes,
		Files:   []string{rundir.LinearFile, rundir.AnomaliesFile, rundir.HistoryFile, rundir.StoreFile, rundir.ResultsFile, rundir.TestFile},
	}
	if an.testErr != nil {
		d.TestErr = an.testErr.Error()
	} else {
		d.Seed = strconv.FormatInt(an.test.Config.Seed, 10)
		d.Start = an.test.Start.Format("2006-01-02 15:04:05 MST")
		d.RunID = an.test.RunID
		d.Config, d.Run = configTables(an.in.Test)
	}
	d.Duration = history.Seconds(an.end)
	for _, r := range an.in.Results {
		row := checkerRow{Name: r.Checker, Verdict: string(r.Valid), Summary: r.Summary, Reason: r.Reason}
		for _, k := range slices.Sorted(maps.Keys(r.Counts)) {
			row.Counts = append(row.Counts, countItem{k, r.Counts[k], countMeanings[k]})
			if m, ok := countMeanings[k]; ok && !slices.ContainsFunc(d.CountKeys, func(c countItem) bool { return c.Key == k }) {
				d.CountKeys = append(d.CountKeys, countItem{Key: k, Meaning: m})
			}
		}
		d.Checkers = append(d.Checkers, row)
	}
	d.Legend = []legendItem{
		{"hold", "held the lock (token)", "background:" + colHold + ";border:1px solid " + colHoldEdge},
		{"read", "read (value)", "background:" + colRead},
		{"accepted", "write accepted", "background:" + colAccepted},
		{"rejected", "write rejected by the store", "background:" + colRejected},
		{"unknown", "write outcome unknown", "background:" + colUnknown},
		{"stale", "the incident's stale write", "background:" + colStale},
		{"erased", "acknowledged write lost to another's", "background:linear-gradient(to top right,transparent 42%," + colStale + " 42% 62%,transparent 62%)," + colAccepted},
		{"lease-lost", "learned lease lost", "background:none;color:" + colLeaseLost + ";font-weight:700"},
		{"fault", "fault window (hatched: its target)", "background:repeating-linear-gradient(45deg,#ddd6fe 0 3px,#c4b5fd 3px 6px)"},
	}
	for _, k := range checkers.WindowKinds() {
		d.Legend = append(d.Legend, legendItem{k.Name, k.About, template.CSS("background:" + windowColor(k) + ";opacity:0.5")})
	}

	fault := legendItem{"fault", "fault window", "background:#ddd6fe"}
	line := func(label, color string) legendItem {
		return legendItem{"line", label, template.CSS("border-top:3px solid " + color + ";height:0;border-radius:0")}
	}
	dot := legendItem{"dot", "max", template.CSS("background:" + colMax + ";width:7px;height:7px;border-radius:50%")}
	d.LatencyLegend = []legendItem{line("p50", colP50), line("p95", colP95), dot, fault}
	d.ThroughputLegend = []legendItem{line("ok", colOKs), line("fail", colFail), line("info (unknown)", colInfo), fault}

	// The plots of a long run hold a point per operation, the overview a
	// mark: they are drawn side by side, on every core.
	plots := []func() error{
		drawing(func() (err error) { d.Latency, err = an.latencyPlots(); return err }),
		drawing(func() (err error) { d.Throughput, err = an.throughputPlots(); return err }),
		drawing(func() (err error) { d.Lease, err = an.leaseView(); return err }),
	}
	var aggregated bool
	d.Overview, aggregated = an.render(timeline{prefix: "ov", from: 0, to: max(an.end, 1), markers: slices.Concat(an.incidents, an.rejections)})
	if aggregated {
		d.OverviewNote = fmt.Sprintf("This history has %d events, too many to draw one by one: the overview merges holds "+
			"closer than a pixel and draws reads and writes as %d-pixel columns coloured by their most severe outcome. "+
			"The zoomed timelines and the tables below show individual events where they fit.", len(an.in.History), aggColumn)
	}
	for i, inc := range an.incidents {
		if i < maxZooms {
			d.Incidents = append(d.Incidents, an.incidentView(inc, true))
		} else {
			d.MoreIncidents = append(d.MoreIncidents, an.incidentView(inc, false))
		}
	}
	for _, inc := range an.rejections {
		d.Rejections = append(d.Rejections, an.incidentView(inc, true))
	}
	for _, row := range an.rows {
		d.Anomalies = append(d.Anomalies, an.anomalyView(row))
	}
	d.EventRows, d.EventsNote = an.eventRows(!aggregated)

	for _, wait := range plots {
		if err := wait(); err != nil {
			return err
		}
	}
	d.BucketNote = fmt.Sprintf("Buckets of %g s by invocation time (latency) and completion time (throughput); "+
		"shaded: fault windows.", bucketWidth(an.end))
	// The page is mostly its drawings, tens of megabytes for a long run:
	// room for them at once spares the copies of a growing buffer.
	size := len(d.Overview)
	for _, svgs := range [][]template.HTML{d.Latency, d.Throughput, d.Lease.Plots} {
		for _, svg := range svgs {
			size += len(svg)
		}
	}
	page.Grow(size + 1<<20)
	if err := pageTmpl.Execute(page, d); err != nil {
		return fmt.Errorf("execute template: %w", err)
	}
	return nil
}

// drawing runs draw in a goroutine of its own, and returns what waits for
// it and gives its error, or raises its panic again in the waiting
// goroutine: raised in a goroutine of its own, a panic would end the
// process, past the recovery that keeps a failed page from costing the
// verdict. What waits in turn for several drawings fails as the same
// drawings, one after another, would have.
func drawing(draw func() error) (wait func() error) {
	done := make(chan struct{})
	var err error
	var p any
	go func() {
		defer close(done)
		defer func() { p = recover() }()
		err = draw()
	}()
	return func() error {
		<-done
		if p != nil {
			panic(p)
		}
		return err
	}
}

// incidentView shows an incident, zoomed in on if it has a client to
// follow: an anomaly about counts alone has nothing to zoom on.
func (an *analysis) incidentView(inc *incident, zoom bool) incidentView {
	v := incidentView{ID: inc.id, N: inc.n, Title: inc.title, Steps: inc.steps}
	for _, row := range inc.rows {
		v.Checkers = append(v.Checkers, an.anomalyView(row))
	}
	if !zoom || inc.client == "" {
		return v
	}
	// The story may go on past the anomalies' events: who wrote over the
	// stale value next.
	to := inc.to
	if n := len(inc.steps); n > 0 {
		to = max(to, inc.steps[n-1].T)
	}
	pad := max((to-inc.from)/25, 100e6)
	var aggregated bool
	v.Timeline, aggregated = an.render(timeline{prefix: inc.id, from: max(inc.from-pad, 0), to: min(to+pad, max(an.end, to)), focus: inc})
	if aggregated {
		v.Note = "Too many events in this window to draw one by one; they are merged into columns."
	}
	return v
}

func (an *analysis) anomalyView(row *anomalyRow) anomalyView {
	v := anomalyView{ID: row.id, Checker: row.checker, Kind: row.a.Kind, Message: row.a.Message, Time: "–"}
	if row.a.Time > 0 {
		v.Time = history.Seconds(row.a.Time)
	}
	var clients []string
	for _, c := range row.a.Clients {
		if !slices.Contains(clients, c) {
			clients = append(clients, c)
		}
	}
	v.Clients = strings.Join(clients, ", ")
	v.Tokens = tokenRanges(row.a.Tokens)
	if row.incident != nil && row.incident.id != "" {
		v.Incident, v.IncidentN = row.incident.id, row.incident.n
	}
	for i, idx := range row.a.Events {
		if i == maxEventLinks {
			v.MoreEvents = len(row.a.Events) - i
			break
		}
		v.Events = append(v.Events, eventLink{Index: idx, Href: "#" + eventID(idx)})
	}
	return v
}

// maxEventLinks bounds the event links in one anomaly's row; the event
// table lists them all.
const maxEventLinks = 8

// tokenRanges writes tokens in their order, runs of consecutive ones as
// ranges: 46, 47–66.
func tokenRanges(tokens []int64) string {
	var parts []string
	for i := 0; i < len(tokens); {
		j := i
		for j+1 < len(tokens) && tokens[j+1] == tokens[j]+1 {
			j++
		}
		switch {
		case j == i:
			parts = append(parts, strconv.FormatInt(tokens[i], 10))
		case j == i+1:
			parts = append(parts, strconv.FormatInt(tokens[i], 10), strconv.FormatInt(tokens[j], 10))
		default:
			parts = append(parts, fmt.Sprintf("%d–%d", tokens[i], tokens[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}

func eventID(idx int64) string { return "event-" + strconv.FormatInt(idx, 10) }

// eventRows lists the events the anomalies cite, each linking to its mark
// on the overview when the overview drew marks one by one.
func (an *analysis) eventRows(linkMarks bool) ([]eventRow, string) {
	seen := map[int64]bool{}
	var idxs []int64
	for _, row := range an.rows {
		for _, idx := range row.a.Events {
			if !seen[idx] {
				seen[idx] = true
				idxs = append(idxs, idx)
			}
		}
	}
	slices.Sort(idxs)
	note := ""
	if len(idxs) > maxEventRows {
		note = fmt.Sprintf("The anomalies cite %d events; the first %d are listed, %s has them all.", len(idxs), maxEventRows, rundir.HistoryFile)
		idxs = idxs[:maxEventRows]
	}
	var out []eventRow
	for _, idx := range idxs {
		e, ok := an.event(idx)
		if !ok {
			continue
		}
		r := eventRow{ID: eventID(idx), Index: idx, Time: history.Seconds(e.Time), Process: e.Process, Type: string(e.Type),
			F: e.F, Req: e.Req, Error: e.Error}
		if e.Value != nil {
			r.Value = strconv.FormatInt(*e.Value, 10)
		}
		if e.Token != 0 {
			r.Token = strconv.FormatInt(e.Token, 10)
		}
		if s, ok := an.storeByReq(e.Req); ok && e.Type != history.Invoke {
			r.Store = fmt.Sprintf("%s (seq %d)", s.Outcome, s.Seq)
			if s.Outcome == store.Rejected && s.Reason != "" {
				r.Store += ": " + s.Reason
			}
		}
		if id, ok := an.markOfEvent(idx); ok && linkMarks {
			r.Mark = "#" + id
		}
		out = append(out, r)
	}
	return out, note
}

// configTables lists test.json as it is: the config object's fields in
// their order, and the rest flattened.
func configTables(raw json.RawMessage) (config, run []keyValue) {
	for _, kv := range fields(raw) {
		switch {
		case kv.Key == "config":
			config = fields(json.RawMessage(kv.Value))
		case strings.HasPrefix(kv.Value, "{"):
			for _, sub := range fields(json.RawMessage(kv.Value)) {
				run = append(run, keyValue{kv.Key + "." + sub.Key, display(sub.Value)})
			}
		default:
			run = append(run, keyValue{kv.Key, display(kv.Value)})
		}
	}
	for i := range config {
		config[i].Value = display(config[i].Value)
	}
	return config, run
}

// fields returns an object's members in order, values as raw JSON; it
// stops quietly at anything malformed, since test.json is only shown.
func fields(raw json.RawMessage) []keyValue {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var out []keyValue
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return out
		}
		k, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return out
		}
		out = append(out, keyValue{k, string(v)})
	}
	return out
}

// display shows a JSON value without quotes: "2s" as 2s, ["pause"] as pause.
func display(raw string) string {
	var s string
	if json.Unmarshal([]byte(raw), &s) == nil {
		return s
	}
	var list []string
	if json.Unmarshal([]byte(raw), &list) == nil {
		return strings.Join(list, ", ")
	}
	return raw
}
