package report

import (
	"cmp"
	"encoding/json"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"strings"

	"github.com/lockbench/lockbench/checkers"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/store"

	"github.com/lockbench/lockbench/rundir"
)

// outcome is what became of a read or a write, as the timeline colours it.
type outcome string

const (
	outOK       outcome = "accepted" // ok: it happened
	outRejected outcome = "rejected" // fail: certainly did not happen, usually a stale token
	outUnknown  outcome = "unknown"  // info, or never completed
)

// hold is a time a client believed it held the lock: from its acquire's
// success to its release's invocation (or its next acquire, or the end).
type hold struct {
	client     string
	token      int64
	start, end int64
	okIdx      int64
}

// mark is a read or a write on a lane.
type mark struct {
	client          string
	f               string
	outcome         outcome
	call, ret       int64
	callIdx, retIdx int64
	value           *int64
	// set and setLen describe a read of the set workload, which returns a
	// set rather than a value.
	set    bool
	setLen int
	token  int64
	req    string
	err    string
	// stale marks the write an incident is about; erased, an accepted
	// write that a stale write overwrote.
	stale, erased bool
}

type leaseLost struct {
	t     int64
	idx   int64
	token int64
}

type lane struct {
	name  string
	holds []hold
	marks []mark
	lost  []leaseLost
}

// fault is a window the nemesis had a fault in force: from its start's info
// to its stop's info, as recorded.
type fault struct {
	kind    string
	targets []string
	start   int64
	// end is when the nemesis began healing the fault, the one end every
	// page shows: its target can act again from then on (a resumed
	// client may write before the heal is recorded as done), so a window
	// ending at the heal's completion would hold writes made after it.
	// A fault never healed ends with the history.
	end                int64
	stopping           bool // the nemesis began healing it
	startIdx           int64
	healed             bool
	description, title string
	// healthy is when, after the heal, the service answered its checks
	// again (the nemesis's healthy info), unhealthy the reason it did not
	// (healthy fail, at healthy); healthy is 0 when nothing was awaited,
	// as for a fault on clients or in an older lockbench's history.
	healthy   int64
	unhealthy string
	// awaited is set between the fault's heal and its healthy event.
	awaited bool
}

// anomalyRow is one checker anomaly as the report lists it.
type anomalyRow struct {
	id       string
	checker  string
	a        checkers.Anomaly
	incident *incident
}

// incident groups the anomalies that tell of one write (or one grant):
// e.g. the fence's stale write, the lost update it caused and the
// linearizability check getting stuck on it.
type incident struct {
	n      int
	id     string
	client string
	token  int64
	hold   *hold
	write  *mark
	// read is what the write was computed from, found when no hold is.
	read  *mark
	rows  []*anomalyRow
	steps []step
	// participants of the sequence diagram besides the client, the lock
	// service (if it has a part) and the store.
	others   []string
	usesLock bool
	from, to int64
	title    string
}

// analysis is a run digested for drawing and telling.
type analysis struct {
	in      Input
	test    rundir.Test
	testErr error
	end     int64
	refs    []history.Ref
	clients []string
	lanes   map[string]*lane
	faults  []fault
	// byIndex maps an event index to its position in the history, when
	// the indexes are not the positions (a history in time order has
	// them so, and needs no map: a million-event run's would be large).
	byIndex map[int64]int
	// byReq and bySeq find store entries, and writeReq a write by its
	// req; they are built on first use (storeByReq, storeBySeq,
	// writeOfReq): only anomalies and rejections ask, and a
	// million-event run's would be large.
	byReq    map[string]*store.Entry
	bySeq    map[int64]*store.Entry
	writeReq map[string]*mark
	// sections are the critical sections, derived on first use
	// (criticalSections): only linear.html and the linearizable checker's
	// anomalies ask.
	sections []checkers.Section
	rows     []*anomalyRow
	// incidents come from anomalies; rejections are stale writes the store
	// refused, told when there is no anomaly to show the fence at work.
	incidents  []*incident
	rejections []*incident
	// markOf holds the marks on the overview of the events the anomalies
	// cite, by index, the only ones the page links to their marks: a
	// million-event run has a mark for most events, and a clean one cites
	// none.
	markOf map[int64]markRef
	// writeAt holds, by the positions of a write's invocation and
	// completion, the write; a slice, not a map, since a million-event run
	// has hundreds of thousands of writes. It is built on first use
	// (write): only the linearizable checker's anomalies ask.
	writeAt []*mark
}

func analyze(in Input) *analysis {
	an := &analysis{in: in, lanes: map[string]*lane{}, markOf: map[int64]markRef{}}
	for _, r := range in.Results {
		for _, a := range r.Anomalies {
			for _, idx := range a.Events {
				an.markOf[idx] = markRef{}
			}
		}
	}
	if len(in.Test) == 0 {
		an.testErr = fmt.Errorf("no %s", rundir.TestFile)
	} else if err := json.Unmarshal(in.Test, &an.test); err != nil {
		an.testErr = fmt.Errorf("%s: %w", rundir.TestFile, err)
	}
	for i, e := range in.History {
		if e.Index != int64(i) && an.byIndex == nil {
			an.byIndex = make(map[int64]int, len(in.History))
			for j := range i {
				an.byIndex[int64(j)] = j
			}
		}
		if an.byIndex != nil {
			an.byIndex[e.Index] = i
		}
		an.end = max(an.end, e.Time)
	}
	an.refs = in.Ops
	if an.refs == nil {
		an.refs, _ = history.Refs(in.History)
	}
	an.sections = in.Sections
	an.buildLanes()
	an.buildFaults()
	an.buildIncidents()
	return an
}

// ops are the history's operations, paired.
func (an *analysis) ops() iter.Seq[history.Op] { return history.Ops(an.in.History, an.refs) }

// criticalSections are the history's critical sections on the key.
func (an *analysis) criticalSections() []checkers.Section {
	if an.sections == nil {
		an.sections = checkers.Sections(an.in.History, an.in.Key)
	}
	return an.sections
}

// storeByReq is the store's first entry for req.
func (an *analysis) storeByReq(req string) (*store.Entry, bool) {
	if an.byReq == nil {
		an.byReq = make(map[string]*store.Entry, len(an.in.Store))
		for i := range an.in.Store {
			if e := &an.in.Store[i]; an.byReq[e.Req] == nil {
				an.byReq[e.Req] = e
			}
		}
	}
	e, ok := an.byReq[req]
	return e, ok
}

// storeBySeq is the store's last entry of sequence number seq.
func (an *analysis) storeBySeq(seq int64) (*store.Entry, bool) {
	if an.bySeq == nil {
		an.bySeq = make(map[int64]*store.Entry, len(an.in.Store))
		for i := range an.in.Store {
			an.bySeq[an.in.Store[i].Seq] = &an.in.Store[i]
		}
	}
	e, ok := an.bySeq[seq]
	return e, ok
}

// writeOfReq is the write of req on the lanes, nil if none.
func (an *analysis) writeOfReq(req string) *mark {
	if an.writeReq == nil {
		an.writeReq = map[string]*mark{}
		for _, l := range an.lanes {
			for i := range l.marks {
				if m := &l.marks[i]; m.f == history.Write && m.req != "" {
					an.writeReq[m.req] = m
				}
			}
		}
	}
	return an.writeReq[req]
}

// pos is the position in the history of the event of index idx.
func (an *analysis) pos(idx int64) (int, bool) {
	if an.byIndex != nil {
		i, ok := an.byIndex[idx]
		return i, ok
	}
	return int(idx), idx >= 0 && idx < int64(len(an.in.History))
}

// event is the event of index idx.
func (an *analysis) event(idx int64) (*history.Event, bool) {
	i, ok := an.pos(idx)
	if !ok {
		return nil, false
	}
	return &an.in.History[i], true
}

// markRef names the mark an event is drawn as: the event of index idx's
// mark, or its fault's window.
type markRef struct {
	idx  int64
	kind uint8
}

const (
	noMark uint8 = iota
	eventMark
	faultMark
)

// setMark records that the event of index idx is drawn as ref, if an
// anomaly cites it.
func (an *analysis) setMark(idx int64, ref markRef) {
	if _, cited := an.markOf[idx]; cited {
		an.markOf[idx] = ref
	}
}

// markOfEvent is the id of the mark the event of index idx, which an
// anomaly cites, is drawn as.
func (an *analysis) markOfEvent(idx int64) (string, bool) {
	switch r := an.markOf[idx]; r.kind {
	case eventMark:
		return markID(r.idx), true
	case faultMark:
		return faultID(r.idx), true
	}
	return "", false
}

// write is the write whose invocation or completion is the event of index
// idx.
func (an *analysis) write(idx int64) (*mark, bool) {
	if an.writeAt == nil {
		an.writeAt = make([]*mark, len(an.in.History))
		for _, l := range an.lanes {
			for i := range l.marks {
				if m := &l.marks[i]; m.f == history.Write {
					for _, idx := range []int64{m.callIdx, m.retIdx} {
						if i, ok := an.pos(idx); ok {
							an.writeAt[i] = m
						}
					}
				}
			}
		}
	}
	i, ok := an.pos(idx)
	if !ok || an.writeAt[i] == nil {
		return nil, false
	}
	return an.writeAt[i], true
}

func (an *analysis) lane(name string) *lane {
	l, ok := an.lanes[name]
	if !ok {
		l = &lane{name: name}
		an.lanes[name] = l
		an.clients = append(an.clients, name)
	}
	return l
}

func (an *analysis) buildLanes() {
	open := map[string]int{} // client -> index of its open hold
	closeHold := func(l *lane, t int64) {
		if i, ok := open[l.name]; ok {
			l.holds[i].end = max(t, l.holds[i].start)
			delete(open, l.name)
		}
	}
	// Each lane's holds and marks are sized first: a lane of a long run
	// has hundreds of thousands, which appends would copy again and again.
	type size struct{ holds, marks int }
	sizes := map[string]*size{}
	var names []string // in order of appearance, as the lanes were made
	// Only the invocations are read: a completion elsewhere in a long
	// history is a cache miss each.
	for _, r := range an.refs {
		call := &an.in.History[r.Call]
		if _, ok := history.LeaseOwner(call.Process); ok {
			continue
		}
		n := sizes[call.Process]
		if n == nil {
			n = &size{}
			sizes[call.Process], names = n, append(names, call.Process)
		}
		switch call.F {
		case history.Acquire:
			n.holds++
		case history.Read, history.Write:
			n.marks++
		}
	}
	for _, name := range names {
		l, n := an.lane(name), sizes[name]
		l.holds, l.marks = make([]hold, 0, n.holds), make([]mark, 0, n.marks)
	}
	for o := range an.ops() {
		if _, ok := history.LeaseOwner(o.Process); ok {
			// Renewals are told in the lease section, not on a lane.
			continue
		}
		l := an.lane(o.Process)
		switch o.F {
		case history.Acquire:
			if o.Lone {
				continue
			}
			closeHold(l, o.Call.Time)
			if o.Type == history.OK {
				l.holds = append(l.holds, hold{client: l.name, token: o.Ret.Token, start: o.Ret.Time, okIdx: o.Ret.Index})
				open[l.name] = len(l.holds) - 1
				an.setMark(o.Call.Index, markRef{o.Ret.Index, eventMark})
				an.setMark(o.Ret.Index, markRef{o.Ret.Index, eventMark})
			}
		case history.Release:
			if !o.Lone {
				closeHold(l, o.Call.Time)
			}
		case history.Read, history.Write:
			if o.Lone || (an.in.Key != "" && o.Call.Key != an.in.Key) {
				continue
			}
			m := mark{client: l.name, f: o.F, call: o.Call.Time, ret: o.Ret.Time, callIdx: o.Call.Index, retIdx: o.Ret.Index,
				token: o.Call.Token, req: o.Call.Req, err: o.Ret.Error}
			switch o.Type {
			case history.OK:
				m.outcome = outOK
			case history.Fail:
				m.outcome = outRejected
			default:
				m.outcome = outUnknown
				if !o.Done {
					m.ret = an.end
				}
			}
			if o.F == history.Read {
				m.value = o.Ret.Value
				m.set, m.setLen = o.Ret.Set != nil, len(o.Ret.Set)
			} else {
				m.value = o.Call.Value
			}
			l.marks = append(l.marks, m)
			an.setMark(o.Call.Index, markRef{o.Call.Index, eventMark})
			an.setMark(o.Ret.Index, markRef{o.Call.Index, eventMark})
		case history.LeaseLost:
			l.lost = append(l.lost, leaseLost{t: o.Call.Time, idx: o.Call.Index, token: o.Call.Token})
			an.setMark(o.Call.Index, markRef{o.Call.Index, eventMark})
		}
	}
	for name, i := range open {
		l := an.lanes[name]
		l.holds[i].end = max(an.end, l.holds[i].start)
	}
	slices.SortFunc(an.clients, compareClients)
}

// shown is what a mark read or wrote, for people.
func (m *mark) shown() string {
	if m.value == nil && m.set {
		return fmt.Sprintf("a set of %d", m.setLen)
	}
	return value(m.value)
}

// short is shown for a label under the mark.
func (m *mark) short() string {
	if m.value == nil && m.set {
		return fmt.Sprintf("{%d}", m.setLen)
	}
	return value(m.value)
}

func markID(idx int64) string { return "mark-" + strconv.FormatInt(idx, 10) }

// compareClients orders c2 before c10.
func compareClients(a, b string) int {
	na, oka := history.ClientNumber(a)
	nb, okb := history.ClientNumber(b)
	switch {
	case oka && okb:
		return cmp.Compare(na, nb)
	case oka:
		return -1
	case okb:
		return 1
	}
	return strings.Compare(a, b)
}

func (an *analysis) buildFaults() {
	var open []int
	for _, e := range an.in.History {
		if e.Process != history.Nemesis {
			continue
		}
		switch {
		case e.F == history.Start && e.Type == history.Info:
			an.faults = append(an.faults, fault{kind: e.Fault, targets: e.Targets, start: e.Time, end: an.end, startIdx: e.Index})
			open = append(open, len(an.faults)-1)
			an.setMark(e.Index, markRef{e.Index, faultMark})
		case e.F == history.Stop && e.Type == history.Invoke:
			for _, i := range open {
				if f := &an.faults[i]; f.kind == e.Fault && !f.stopping {
					f.end, f.stopping = max(e.Time, f.start), true
				}
			}
		case e.F == history.Stop && e.Type == history.Info:
			// A stop heals every fault of its kind.
			open = slices.DeleteFunc(open, func(i int) bool {
				f := &an.faults[i]
				if f.kind != e.Fault {
					return false
				}
				if !f.stopping {
					f.end = max(e.Time, f.start)
				}
				f.healed, f.awaited = true, true
				an.setMark(e.Index, markRef{f.startIdx, faultMark})
				return true
			})
		case e.F == history.Healthy:
			// It belongs to the faults of its kind the last heal healed.
			for i := range an.faults {
				if f := &an.faults[i]; f.awaited && f.kind == e.Fault {
					f.healthy, f.awaited = max(e.Time, f.end), false
					if e.Type != history.Info {
						f.unhealthy = e.Error
					}
					an.setMark(e.Index, markRef{f.startIdx, faultMark})
				}
			}
		}
	}
	for i := range an.faults {
		f := &an.faults[i]
		f.description = strings.TrimSpace(f.kind + " " + strings.Join(f.targets, ","))
		healed := "healed at " + history.Seconds(f.end)
		if !f.healed {
			healed = "never healed before the history ends"
		}
		f.title = fmt.Sprintf("%s from %s for %s, %s%s", f.description, history.Seconds(f.start), seconds(f.end-f.start), healed, f.recovery())
	}
}

// recovery says how the service came back after the fault's heal: "" when
// it was not awaited.
func (f *fault) recovery() string {
	switch {
	case f.healthy == 0:
		return ""
	case f.unhealthy != "":
		return fmt.Sprintf("; the service was not healthy again by %s: %s", history.Seconds(f.healthy), f.unhealthy)
	}
	return fmt.Sprintf("; the service healthy again at %s, %s after the heal", history.Seconds(f.healthy), seconds(f.healthy-f.end))
}

func faultID(startIdx int64) string { return "fault-" + strconv.FormatInt(startIdx, 10) }

// seconds formats a duration in ns for people: 4.0 s, 0.35 s.
func seconds(d int64) string {
	if d >= 10e9 || d < 1e8 && d > 0 {
		return fmt.Sprintf("%.3g s", float64(d)/1e9)
	}
	return fmt.Sprintf("%.1f s", float64(d)/1e9)
}

// buildIncidents numbers the anomalies and groups them by the write they
// are about: the fence's stale write, the lost update it caused and the
// linearizability search stuck on it are one incident. Anomalies about
// grants (token order) group by client and token; the linearizability
// explanation names sections rather than a culprit, so it joins the
// incident of one of its sections' writes, or else blames its earliest
// section: the one that read before the others wrote.
func (an *analysis) buildIncidents() {
	byKey := map[string]*incident{}
	get := func(key string, inc *incident) *incident {
		if old, ok := byKey[key]; ok {
			return old
		}
		byKey[key] = inc
		an.incidents = append(an.incidents, inc)
		return inc
	}
	byWrite := func(m *mark) *incident {
		return get("write/"+strconv.FormatInt(m.callIdx, 10), &incident{write: m, client: m.client, token: m.token})
	}
	var linear, lost []*anomalyRow
	for _, r := range an.in.Results {
		for _, a := range r.Anomalies {
			row := &anomalyRow{id: fmt.Sprintf("anomaly-%d", len(an.rows)+1), checker: r.Checker, a: a}
			an.rows = append(an.rows, row)
			switch a.KindOf().Story {
			case checkers.StoryWhole:
				linear = append(linear, row)
				continue
			case checkers.StoryLoss:
				lost = append(lost, row)
				continue
			}
			switch {
			case an.anchor(a) != nil:
				row.incident = byWrite(an.anchor(a))
			case len(a.Clients) > 0 && len(a.Tokens) > 0:
				row.incident = get(fmt.Sprintf("grant/%s/%d", a.Clients[0], a.Tokens[0]), &incident{client: a.Clients[0], token: a.Tokens[0]})
			default:
				row.incident = &incident{}
				an.incidents = append(an.incidents, row.incident)
			}
		}
	}
	// A lost write is told with the stale write it was, if it was one,
	// and otherwise with the write that erased it.
	for _, row := range lost {
		w, eraser := an.storeWrite(row.a, 0), an.storeWrite(row.a, 1)
		switch {
		case w != nil && byKey["write/"+strconv.FormatInt(w.callIdx, 10)] != nil:
			row.incident = byWrite(w)
		case eraser != nil:
			row.incident = byWrite(eraser)
		case w != nil:
			row.incident = byWrite(w)
		default:
			row.incident = &incident{}
			an.incidents = append(an.incidents, row.incident)
		}
	}
	// The section of each event places the linearizable checker's
	// anomalies; a clean run of a million events has none to place.
	var sections []checkers.Section
	if len(linear) > 0 {
		sections = an.criticalSections()
	}
	secOf := map[int64]int{}
	for i := range sections {
		for _, e := range sections[i].Events {
			secOf[e] = i
		}
	}
	for _, row := range linear {
		var touched []int
		var writes []*mark
		for _, e := range row.a.Events {
			if i, ok := secOf[e]; ok && !slices.Contains(touched, i) {
				touched = append(touched, i)
			}
			if m, ok := an.write(e); ok {
				writes = append(writes, m)
			}
		}
		for _, m := range writes {
			if inc, ok := byKey["write/"+strconv.FormatInt(m.callIdx, 10)]; ok {
				row.incident = inc
				break
			}
		}
		if row.incident == nil && len(touched) > 0 {
			first := sections[slices.MinFunc(touched, func(a, b int) int { return cmp.Compare(sections[a].Call, sections[b].Call) })]
			for _, e := range first.Events {
				if m, ok := an.write(e); ok {
					row.incident = byWrite(m)
					break
				}
			}
		}
		if row.incident == nil {
			row.incident = &incident{}
			an.incidents = append(an.incidents, row.incident)
		}
	}
	for _, row := range an.rows {
		row.incident.rows = append(row.incident.rows, row)
	}
	for _, inc := range an.incidents {
		an.locate(inc)
	}
	// Incidents are told in the order they came to a head.
	slices.SortStableFunc(an.incidents, func(a, b *incident) int { return cmp.Compare(a.to, b.to) })
	for i, inc := range an.incidents {
		inc.n, inc.id = i+1, fmt.Sprintf("incident-%d", i+1)
		an.tell(inc)
	}
	an.markErased()

	if len(an.incidents) == 0 {
		for _, name := range an.clients {
			for i := range an.lanes[name].marks {
				m := &an.lanes[name].marks[i]
				if m.f == history.Write && m.outcome == outRejected && len(an.rejections) < maxRejections {
					an.rejections = append(an.rejections, &incident{write: m, client: m.client, token: m.token})
				}
			}
		}
		for i, inc := range an.rejections {
			an.locate(inc)
			inc.n, inc.id = i+1, fmt.Sprintf("rejection-%d", i+1)
			an.tell(inc)
		}
	}
}

// anchor finds the write a store-log anomaly is about: its first store
// entry is the culprit's write (the stale write, the write that took the
// value back).
func (an *analysis) anchor(a checkers.Anomaly) *mark {
	if a.KindOf().Story != checkers.StoryCulprit {
		return nil
	}
	return an.storeWrite(a, 0)
}

// storeWrite is the write of an anomaly's i-th store entry, if the history
// has it.
func (an *analysis) storeWrite(a checkers.Anomaly, i int) *mark {
	if len(a.StoreSeqs) <= i {
		return nil
	}
	e, ok := an.storeBySeq(a.StoreSeqs[i])
	if !ok {
		return nil
	}
	return an.writeOfReq(e.Req)
}

// maxRejections bounds the fence stories of a valid run.
const maxRejections = 2

// locate finds an incident's write and the hold it was made in, and the
// window to zoom on: from the client's acquire (or its read, without a
// lock) to its write's outcome.
func (an *analysis) locate(inc *incident) {
	inc.from, inc.to = an.end, 0
	for _, row := range inc.rows {
		for _, idx := range row.a.Events {
			if e, ok := an.event(idx); ok {
				inc.from, inc.to = min(inc.from, e.Time), max(inc.to, e.Time)
			}
		}
		if row.a.Time > 0 {
			inc.from, inc.to = min(inc.from, row.a.Time), max(inc.to, row.a.Time)
		}
	}
	l := an.lanes[inc.client]
	switch {
	case l == nil:
	case inc.write != nil:
		inc.hold = l.holdAt(inc.write.call)
		if inc.hold == nil {
			inc.read = l.readBefore(inc.write)
		}
	case inc.token > 0:
		for i := range l.holds {
			if l.holds[i].token == inc.token {
				inc.hold = &l.holds[i]
				break
			}
		}
	}
	if inc.hold != nil {
		inc.from = min(inc.from, inc.hold.start)
	}
	if inc.read != nil {
		inc.from = min(inc.from, inc.read.call)
	}
	if inc.write != nil {
		inc.from, inc.to = min(inc.from, inc.write.call), max(inc.to, inc.write.ret)
		if len(inc.rows) > 0 {
			inc.write.stale = true
		}
	}
	if inc.from > inc.to {
		inc.from, inc.to = 0, an.end
	}
}

// holdAt is the hold in force at t, if any.
func (l *lane) holdAt(t int64) *hold {
	i, _ := slices.BinarySearchFunc(l.holds, t+1, func(h hold, t int64) int { return cmp.Compare(h.start, t) })
	if i > 0 && l.holds[i-1].end >= t {
		return &l.holds[i-1]
	}
	return nil
}

// readBefore is the client's last successful read before a write: what
// the write was computed from.
func (l *lane) readBefore(w *mark) *mark {
	i, _ := slices.BinarySearchFunc(l.marks, w.call, func(m mark, t int64) int { return cmp.Compare(m.call, t) })
	for i--; i >= 0; i-- {
		if m := &l.marks[i]; m.f == history.Read && m.outcome == outOK {
			return m
		}
	}
	return nil
}

// markErased flags the acknowledged writes the lost-updates checker found
// lost to another's write: the counter does not hold their increments.
// A stale write that was itself lost keeps its own colour.
func (an *analysis) markErased() {
	for _, row := range an.rows {
		if row.a.KindOf().Story != checkers.StoryLoss {
			continue
		}
		if m := an.storeWrite(row.a, 0); m != nil && !m.stale {
			m.erased = true
		}
	}
}

// holdsBetween returns the holds, on any lane but skip's, that began in
// (from, to], ordered by start.
func (an *analysis) holdsBetween(skip string, from, to int64) []*hold {
	var out []*hold
	for _, name := range an.clients {
		if name == skip {
			continue
		}
		l := an.lanes[name]
		i, _ := slices.BinarySearchFunc(l.holds, from+1, func(h hold, t int64) int { return cmp.Compare(h.start, t) })
		for ; i < len(l.holds) && l.holds[i].start <= to; i++ {
			out = append(out, &l.holds[i])
		}
	}
	slices.SortFunc(out, func(a, b *hold) int { return cmp.Compare(a.start, b.start) })
	return out
}

// marksIn returns a client's reads and writes with the hold's token,
// invoked while it held the lock.
func (an *analysis) marksIn(h *hold) []*mark {
	l := an.lanes[h.client]
	var out []*mark
	i, _ := slices.BinarySearchFunc(l.marks, h.start, func(m mark, t int64) int { return cmp.Compare(m.call, t) })
	for ; i < len(l.marks) && l.marks[i].call <= h.end; i++ {
		if l.marks[i].token == h.token {
			out = append(out, &l.marks[i])
		}
	}
	return out
}
