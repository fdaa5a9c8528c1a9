package checkers

import (
	"fmt"
	"strings"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/store"
)

// The kinds of anomaly this checker finds.
var (
	LostUpdate = AnomalyKind{Name: "lost-update", About: "an acknowledged increment is not in the final value: another write erased it", Story: StoryLoss}
	Regression = AnomalyKind{Name: "regression", About: "a write took the counter back to an older value", Story: StoryCulprit}
)

// LostUpdates judges the counter by read-from accounting. Every write
// stores its writer's read plus one, so it reads from the last accepted
// write before its writer's own read in the store log (from the initial 0
// when there is none). The accepted writes form a tree under that relation,
// and the final value holds exactly the increments of its ancestry. Writes
// are matched by position in the log, never by value: values repeat in
// exactly the runs that go wrong.
//
// From the tree:
//   - an acknowledged write is lost iff it is not an ancestor of the final
//     value (its writer was told it happened, and the counter does not hold
//     it);
//   - missing = acknowledged + applied with an unknown outcome − final, the
//     increments the counter should hold and does not; a range when some
//     writes of unknown outcome are not in the log at all;
//   - a regression is an accepted write that moved the value back (wrote no
//     more than the value it replaced), erasing the increments it did not
//     read; it is repaired by the first later write that reads from the
//     last of them again;
//   - a read observed a regression if the store answered it while a
//     regression that erased an acknowledged increment was in force.
//
// The verdict is invalid iff an acknowledged increment is lost or a read
// observed a regression; a regression that nobody read and that a later
// write repaired harms nothing the clients were told, and one that erased
// only writes of unknown outcome is legal (they may not have happened). When the history and
// the log disagree (an acknowledged write the log lacks, a failed one it
// accepted, a read it answered differently, a write whose value differs,
// a req either repeats) the verdict is unknown.
type LostUpdates struct{}

func (LostUpdates) Name() string { return "lost-updates" }

// maxNamed bounds the writes one sentence names; the anomaly keeps them all
// up to maxErased.
const (
	maxNamed  = 3
	maxErased = 20
)

// readTree is the accepted writes of a counter's log under read-from.
type readTree struct {
	log []store.Entry
	// Per accepted write k, in log order: its position in log, its parent
	// (-1 is the initial 0) and its value.
	at     []int
	parent []int
	value  []int64
	// read is the log position of the writer's read, -1 when the store
	// logs no reads.
	read []int
	// state is, per log position, the last accepted write before it (-1
	// for none): what a read there returned.
	state []int
}

// newReadTree builds the tree, or says why the log cannot be read as one.
func newReadTree(l *ledger) (*readTree, string) {
	// A node per accepted write, of which the history has at most its
	// writes: a long run's hundred thousand, grown node by node, would be
	// copied again and again.
	n := len(l.writes)
	t := &readTree{log: l.log, state: make([]int, len(l.log)),
		at: make([]int, 0, n), parent: make([]int, 0, n), value: make([]int64, 0, n), read: make([]int, 0, n)}
	cur := -1
	// value -> the last accepted write of it, for a log without reads
	var lastOf map[int64]int
	if !l.readsLogged {
		lastOf = map[int64]int{}
	}
	val := func(k int) int64 {
		if k < 0 {
			return 0
		}
		return t.value[k]
	}
	for i := range l.log {
		e := &l.log[i]
		t.state[i] = cur
		if e.Outcome != store.Accepted {
			continue
		}
		if e.Op == "read" {
			if e.Value != val(cur) {
				return nil, fmt.Sprintf("the store's read at seq %d returned %d, but the last write before it stored %d", e.Seq, e.Value, val(cur))
			}
			continue
		}
		wi := l.writeAt[i]
		if wi < 0 {
			return nil, fmt.Sprintf("the store log's write at seq %d (req %q) is not a write in the history", e.Seq, e.Req)
		}
		w := l.writes[wi]
		var parent int
		var ok bool
		rp := -1
		if l.readsLogged {
			rp = w.readAt
			if rp < 0 || rp >= i || l.log[rp].Op != "read" {
				return nil, fmt.Sprintf("write %q by %s (seq %d) has no read of its own before it in the store log", e.Req, e.Client, e.Seq)
			}
			parent = t.state[rp]
		} else {
			// A store that logs no reads (the counter kept in etcd, whose
			// writes only commit while their writer owns the lock): the
			// parent is the last write of the value the writer must have
			// read.
			parent, ok = lastOf[e.Value-1]
			if e.Value == 1 && !ok {
				parent, ok = -1, true
			}
			if !ok {
				return nil, fmt.Sprintf("write of %d (req %q, seq %d) follows no write of %d", e.Value, e.Req, e.Seq, e.Value-1)
			}
		}
		if e.Value != val(parent)+1 {
			return nil, fmt.Sprintf("write %q by %s stored %d at seq %d, but its writer read %d", e.Req, e.Client, e.Value, e.Seq, val(parent))
		}
		cur = len(t.at)
		if lastOf != nil {
			lastOf[e.Value] = cur
		}
		t.at = append(t.at, i)
		t.parent = append(t.parent, parent)
		t.value = append(t.value, e.Value)
		t.read = append(t.read, rp)
	}
	return t, ""
}

func (t *readTree) entry(k int) *store.Entry { return &t.log[t.at[k]] }

// erasers finds, for each accepted write, the first later write that does
// not descend from it (-1 if none): the write that took its increment
// away. Write j does not descend from the writes strictly between its
// parent and itself, and the first such j for a write is its eraser; a
// union-find over the writes not yet assigned makes the pass near linear.
func (t *readTree) erasers() []int {
	n := len(t.at)
	by := make([]int, n)
	next := make([]int, n+1) // next[k]: the first write ≥ k without an eraser, once compressed
	for k := range next {
		next[k] = k
	}
	find := func(k int) int {
		root := k
		for next[root] != root {
			root = next[root]
		}
		for next[k] != root {
			next[k], k = root, next[k]
		}
		return root
	}
	for k := range by {
		by[k] = -1
	}
	for j := range n {
		for k := find(t.parent[j] + 1); k < j; k = find(k + 1) {
			by[k], next[k] = j, k+1
		}
	}
	return by
}

// firstChildren finds, for each write, the first later write that reads
// from it (-1 if none).
func (t *readTree) firstChildren() []int {
	first := make([]int, len(t.at))
	for k := range first {
		first[k] = -1
	}
	for j, p := range t.parent {
		if p >= 0 && first[p] < 0 {
			first[p] = j
		}
	}
	return first
}

// counterTally is what a counter run's records say, before the tree.
type counterTally struct {
	acked, unknown, applied, unlogged int64
	// ack marks the accepted writes whose writers were told so.
	ack func(k int) bool
}

func (c LostUpdates) Check(in Input) Result {
	r := newResult(c.Name())
	zero(r.Counts, "acknowledged", "unknown", "unknown_applied", "final", "lost_acknowledged", "missing",
		"regressions", "regressions_repaired", "regressed_reads")
	if withoutStore(&r, in) {
		return r
	}
	l := in.ledger(dataReader)
	var tl counterTally
	for _, w := range l.writes {
		switch w.typ {
		case history.OK:
			tl.acked++
		case history.Info:
			tl.unknown++
			switch {
			case w.at < 0:
				tl.unlogged++
			case l.log[w.at].Outcome == store.Accepted:
				tl.applied++
			}
		}
	}
	r.Counts["acknowledged"], r.Counts["unknown"], r.Counts["unknown_applied"] = tl.acked, tl.unknown, tl.applied
	var final int64
	for i := range l.log {
		if e := &l.log[i]; e.Op == "write" && e.Outcome == store.Accepted {
			final = e.Value
		}
	}
	r.Counts["final"] = final
	r.Summary = fmt.Sprintf("final value %d; %s acknowledged, %d unknown (%d applied)", final, plural(tl.acked, "write"), tl.unknown, tl.applied)
	if l.unknown(&r) {
		return r
	}
	t, why := newReadTree(l)
	if disagreeing(&r, why) {
		return r
	}
	tl.ack = func(k int) bool {
		i := l.writeAt[t.at[k]]
		return i >= 0 && l.writes[i].typ == history.OK
	}

	missing := tl.acked + tl.applied - final
	r.Counts["missing"] = missing
	missingText := fmt.Sprint(missing)
	if tl.unlogged > 0 {
		r.Counts["missing_max"] = missing + tl.unlogged
		missingText = fmt.Sprintf("%d–%d", missing, missing+tl.unlogged)
	}

	var links reqLinks
	inFinal := t.finalAncestry()
	erasedBy := t.erasers()
	c.lostWrites(&r, t, tl, inFinal, erasedBy, &links)
	c.regressions(&r, t, tl, &links)
	links.resolve(in.History, r.Anomalies)

	r.Summary += fmt.Sprintf("; %s missing; %s lost; %s (%d repaired), %s",
		missingText, plural(r.Counts["lost_acknowledged"], "acknowledged increment"),
		plural(r.Counts["regressions"], "regression"), r.Counts["regressions_repaired"],
		plural(r.Counts["regressed_reads"], "read")+" of a regressed value")
	r.Valid = Valid
	if r.Counts["lost_acknowledged"] > 0 || r.Counts["regressed_reads"] > 0 {
		r.Valid = Invalid
	}
	return r
}

// finalAncestry marks the writes the final value descends from.
func (t *readTree) finalAncestry() []bool {
	in := make([]bool, len(t.at))
	for k := len(t.at) - 1; k >= 0; k = t.parent[k] {
		in[k] = true
	}
	return in
}

// lostWrites names every acknowledged write outside the final ancestry, with
// the write that took it away.
func (LostUpdates) lostWrites(r *Result, t *readTree, tl counterTally, inFinal []bool, erasedBy []int, links *reqLinks) {
	for k := range t.at {
		if inFinal[k] || !tl.ack(k) || !r.tally("lost_acknowledged") {
			continue
		}
		w := t.entry(k)
		a := Anomaly{Kind: LostUpdate.Name, StoreSeqs: []int64{w.Seq}, Clients: []string{w.Client}, Tokens: []int64{w.Token}, Time: w.Time}
		a.Message = fmt.Sprintf("%s's acknowledged write of %d (%sstore seq %d, %s) is not in the final value",
			w.Client, w.Value, tokenOf(w.Token, ", "), w.Seq, history.Seconds(w.Time))
		reqs := []string{w.Req}
		if j := erasedBy[k]; j >= 0 {
			x := t.entry(j)
			a.Message += fmt.Sprintf(": %s wrote %d over it at %s (store seq %d), %s",
				who(x.Client, x.Token), x.Value, history.Seconds(x.Time), x.Seq, t.basis(j, w.Client+"'s write landed"))
			a.StoreSeqs = append(a.StoreSeqs, x.Seq)
			a.Clients = append(a.Clients, x.Client)
			a.Tokens = append(a.Tokens, x.Token)
			a.Time = x.Time
			reqs = append(reqs, x.Req)
		}
		a.Message += "."
		links.link(len(r.Anomalies), reqs...)
		r.Anomalies = append(r.Anomalies, a)
	}
}

// basis says what write j was computed from, and that it predates what
// came before: "computed from its read of 66 (store seq 133), made before
// c3's write landed".
func (t *readTree) basis(j int, before string) string {
	if rp := t.read[j]; rp >= 0 {
		e := &t.log[rp]
		return fmt.Sprintf("computed from its read of %d (store seq %d), made before %s", e.Value, e.Seq, before)
	}
	return fmt.Sprintf("computed from a read of %d made before %s", t.value[j]-1, before)
}

// regressions tells every write that moved the value back: from what to
// what, which increments it erased, how long until a write restored them,
// and which reads the store answered in between. Each is counted; those
// that erased an acknowledged increment are named and their reads counted
// as regressed, since the others harm nothing a client was told.
func (LostUpdates) regressions(r *Result, t *readTree, tl counterTally, links *reqLinks) {
	firstChild := t.firstChildren()
	var seen int // reads up to this log position are already counted
	for j := 1; j < len(t.at); j++ {
		if t.value[j] > t.value[j-1] {
			continue
		}
		r.Counts["regressions"]++
		// The first write that reads from the replaced one again restores
		// every increment this one erased.
		repair := firstChild[j-1]
		if repair >= 0 {
			r.Counts["regressions_repaired"]++
		}
		// The erased writes are the ancestry of the replaced write down
		// to where it meets the regressing write's.
		var erased []int
		ackErased := 0
		for a, b := j-1, t.parent[j]; a != b && a >= 0; {
			if a < b {
				b = t.parent[b]
				continue
			}
			if tl.ack(a) {
				ackErased++
				if len(erased) < maxErased {
					erased = append(erased, a)
				}
			}
			a = t.parent[a]
		}
		if ackErased == 0 {
			continue
		}
		end := len(t.log)
		if repair >= 0 {
			end = t.at[repair]
		}
		var reads []*store.Entry
		for i := max(t.at[j]+1, seen); i < end; i++ {
			if e := &t.log[i]; e.Op == "read" && e.Outcome == store.Accepted {
				r.Counts["regressed_reads"]++
				reads = append(reads, e)
			}
		}
		seen = max(seen, end)
		if len(r.Anomalies) >= maxAnomalies {
			continue
		}
		x, prev := t.entry(j), t.entry(j-1)
		a := Anomaly{Kind: Regression.Name, StoreSeqs: []int64{x.Seq}, Clients: []string{x.Client}, Tokens: []int64{x.Token}, Time: x.Time}
		reqs := []string{x.Req}
		var names []string
		for _, k := range erased {
			w := t.entry(k)
			if len(names) < maxNamed {
				names = append(names, fmt.Sprintf("%s's write of %d", w.Client, w.Value))
			}
			a.StoreSeqs = append(a.StoreSeqs, w.Seq)
			reqs = append(reqs, w.Req)
		}
		if ackErased > len(names) {
			names = append(names, fmt.Sprintf("and %d more", ackErased-len(names)))
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%s wrote %d over %d at %s (store seq %d), %s: the value went back from %d to %d, erasing %s, %d acknowledged (%s); ",
			who(x.Client, x.Token), x.Value, prev.Value, history.Seconds(x.Time), x.Seq, t.basis(j, "the writes it erased"),
			prev.Value, x.Value, plural(prev.Value-x.Value+1, "increment"), ackErased, strings.Join(names, ", "))
		if repair >= 0 {
			y := t.entry(repair)
			fmt.Fprintf(&b, "%s's write of %d (store seq %d) restored them %s later", y.Client, y.Value, y.Seq, ms(y.Time-x.Time))
			a.StoreSeqs = append(a.StoreSeqs, y.Seq)
			reqs = append(reqs, y.Req)
		} else {
			b.WriteString("no later write restored them")
		}
		if len(reads) == 0 {
			b.WriteString("; no read saw the regressed value.")
		} else {
			var who []string
			for _, e := range reads[:min(len(reads), maxNamed)] {
				who = append(who, fmt.Sprintf("%s read %d at store seq %d", e.Client, e.Value, e.Seq))
				a.StoreSeqs = append(a.StoreSeqs, e.Seq)
				reqs = append(reqs, e.Req)
			}
			if len(reads) > maxNamed {
				who = append(who, fmt.Sprintf("and %d more", len(reads)-maxNamed))
			}
			fmt.Fprintf(&b, "; %s saw the regressed value (%s).", plural(int64(len(reads)), "read"), strings.Join(who, ", "))
		}
		a.Message = b.String()
		links.link(len(r.Anomalies), reqs...)
		r.Anomalies = append(r.Anomalies, a)
	}
}

// who names a client and the token it wrote with, if any: "c1 (token 33)".
func who(client string, token int64) string {
	if token == 0 {
		return client
	}
	return fmt.Sprintf("%s (token %d)", client, token)
}

// tokenOf is "token 33" and sep, or nothing for a write without a token.
func tokenOf(token int64, sep string) string {
	if token == 0 {
		return ""
	}
	return fmt.Sprintf("token %d%s", token, sep)
}

// ms formats a duration in ns for people.
func ms(ns int64) string { return fmt.Sprintf("%.0f ms", float64(ns)/1e6) }
