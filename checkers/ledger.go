package checkers

import (
	"fmt"
	"slices"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/store"
)

// ledger joins a run's two records of the same requests: the history (what
// the clients asked and were told) and the store log (what the store
// applied). The counter and the set workload share it, so both refuse to
// judge a run whose records disagree, and name the first disagreement.
//
// Each req names one request: the store log's entries and the history's
// reads and writes are joined by it, so a req that either record repeats
// would let one request take over another's entry and outcome, and the
// records disagree.
type ledger struct {
	// log is the store log on the checked key.
	log []store.Entry
	// pos is each req's first entry in log.
	pos map[string]int
	// writes are the history's writes on the key, in invocation order.
	writes []writeOp
	// writeAt is, per log position, the write in writes that the entry
	// carries out, -1 for none. Positions, not maps, join the records
	// after the one lookup by req: the checkers run on millions of events.
	writeAt []int32
	// readsLogged: the store logs reads. The lockbench store does; a store
	// kept in etcd logs only the writes that committed.
	readsLogged bool
	// mismatch is the first disagreement between the records, "" if none.
	mismatch string
	// written is the first write whose value the records disagree on, ""
	// if none. It is a disagreement about the history itself, which the
	// linearizability check judges by the history's values while the data
	// checkers judge by the log's, so it leaves both undecided.
	written string
}

// writeOp is a write the history records, with the read its section made.
type writeOp struct {
	req, client string
	token       int64
	typ         history.Type
	// at is the position of the write's first entry in the log, -1 if
	// the log lacks it.
	at int
	// readAt is the log position of the client's last read before the
	// write, the read the written value was computed from; -1 if the log
	// lacks it.
	readAt int
	// value is the element a set write adds; unused for the counter.
	value *int64
	event int64 // the write's invocation, by history index
}

// newLedger cross-checks in's records on its key.
func newLedger(in Input) *ledger {
	l := &ledger{log: storeOnKey(in.Store, in.Key)}
	l.pos = make(map[string]int, len(l.log))
	l.writeAt = make([]int32, len(l.log))
	// claim is, per log position, 1 + the history position of the
	// invocation joined to the entry, 0 for none; unclaimed is the same
	// for the reqs the log lacks, which are few (requests that failed or
	// timed out before the store saw them).
	claim := make([]int32, len(l.log))
	unclaimed := map[string]int32{}
	for i := range l.log {
		e := &l.log[i]
		if j, ok := l.pos[e.Req]; ok {
			l.disagree("the store log has req %q twice (seq %d and %d)", e.Req, l.log[j].Seq, e.Seq)
		} else {
			l.pos[e.Req] = i
		}
		l.readsLogged = l.readsLogged || e.Op == "read"
		l.writeAt[i] = -1
	}
	h := in.History
	refs, procs := in.Refs()
	l.writes = make([]writeOp, 0, calls(h, refs, history.Write))
	lastRead := make([]int, procs) // per process, the log position of its last read
	for p := range lastRead {
		lastRead[p] = -1
	}
	for _, o := range refs {
		call, ret := &h[o.Call], &h[o.Ret]
		if o.Lone() || !onKey(call, in.Key) || (call.F != history.Read && call.F != history.Write) {
			continue
		}
		typ := o.Type(h)
		at, inLog := l.pos[call.Req]
		first := int32(0)
		switch {
		case inLog && claim[at] > 0:
			first = claim[at]
		case inLog:
			claim[at] = o.Call + 1
		case call.Req != "":
			if first = unclaimed[call.Req]; first == 0 {
				unclaimed[call.Req] = o.Call + 1
			}
		}
		if first > 0 {
			// The entry is the first one's: this one joins none.
			l.disagree("the history has req %q twice (events %d and %d)", call.Req, h[first-1].Index, call.Index)
			inLog = false
		}
		var e store.Entry
		if inLog {
			e = l.log[at]
		} else {
			at = -1
		}
		if call.F == history.Read {
			lastRead[o.Proc] = at
			if typ == history.OK && l.readsLogged {
				switch {
				case !inLog || e.Outcome != store.Accepted:
					l.disagree("read %q by %s (event %d) returned a value but the store log %s", call.Req, call.Process, ret.Index, storeSays(e, inLog))
				case !sameRead(ret, e):
					l.disagree("read %q by %s (event %d) returned %s but the store log has it return %s at seq %d",
						call.Req, call.Process, ret.Index, readValue(ret.Value, ret.Set), readValue(&e.Value, e.Set), e.Seq)
				}
			}
			continue
		}
		if inLog {
			l.writeAt[at] = int32(len(l.writes))
			if e.Op == "write" && l.written == "" {
				if wrote, stored, differ := writtenValues(call, &e); differ {
					l.written = fmt.Sprintf("write %q by %s (event %d) wrote %s, but the store log has it store %s at seq %d",
						call.Req, call.Process, call.Index, wrote, stored, e.Seq)
					l.disagree("%s", l.written)
				}
			}
		}
		l.writes = append(l.writes, writeOp{req: call.Req, client: call.Process, token: call.Token, typ: typ,
			at: at, readAt: lastRead[o.Proc], value: call.Value, event: call.Index})
		switch {
		case typ == history.OK && (call.Req == "" || !inLog || e.Outcome != store.Accepted):
			l.disagree("write %q by %s (event %d) was acknowledged but the store log %s", call.Req, call.Process, ret.Index, storeSays(e, inLog))
		case typ == history.Fail && inLog && e.Outcome == store.Accepted:
			l.disagree("write %q by %s (event %d) failed but the store log has it accepted at seq %d", call.Req, call.Process, ret.Index, e.Seq)
		}
	}
	for i := range l.log {
		if e := &l.log[i]; claim[i] == 0 && l.pos[e.Req] == i {
			l.disagree("the store log has a %s (req %q by %s, seq %d) that the history never invoked", e.Op, e.Req, e.Client, e.Seq)
			break
		}
	}
	return l
}

// disagree keeps the first disagreement.
func (l *ledger) disagree(format string, args ...any) {
	if l.mismatch == "" {
		l.mismatch = fmt.Sprintf(format, args...)
	}
}

// unknown makes r unknown when the records disagree; it reports whether
// they did. A checker does not judge a run its own evidence contradicts.
func (l *ledger) unknown(r *Result) bool { return disagreeing(r, l.mismatch) }

// disagreeing makes r unknown for the disagreement why, if there is one,
// and reports whether there was.
func disagreeing(r *Result, why string) bool {
	if why == "" {
		return false
	}
	r.Valid = Unknown
	r.Reason = "the history and the store log disagree: " + why
	return true
}

// writtenValues names what a write's invocation and its log entry say it
// wrote, and reports whether they differ: for the counter the value, for
// the set the whole set (the element it adds is the history's alone). A
// write whose invocation names no value (lockbench's always name one) has
// nothing to differ on.
func writtenValues(call *history.Event, e *store.Entry) (wrote, stored string, differ bool) {
	switch {
	case len(call.Set) > 0 || len(e.Set) > 0:
		if sameSet(call.Set, e.Set) {
			return "", "", false
		}
		wrote, stored = describeSet(call.Set), describeSet(e.Set)
		if wrote == stored {
			// Large sets alike at their ends and in size.
			stored += " (" + setDifference(call.Set, e.Set) + ")"
		}
		return wrote, stored, true
	case call.Value == nil || *call.Value == e.Value:
		return "", "", false
	}
	return fmt.Sprint(*call.Value), fmt.Sprint(e.Value), true
}

func storeSays(e store.Entry, inLog bool) string {
	if !inLog {
		return "has no such request"
	}
	return fmt.Sprintf("has it %s at seq %d", e.Outcome, e.Seq)
}

// sameRead compares what a read returned in the history and in the log.
func sameRead(ret *history.Event, e store.Entry) bool {
	// A set read carries no value, and an empty set carries nothing at all.
	if ret.Value == nil {
		return sameSet(ret.Set, e.Set)
	}
	return *ret.Value == e.Value
}

// sameSet reports whether a and b hold the same elements, in any order.
func sameSet(a, b []int64) bool {
	// Both records keep a set in the order its writer built it: sorting,
	// which a long run's sets would make quadratic, is rarely needed.
	if slices.Equal(a, b) {
		return true
	}
	if len(a) != len(b) {
		return false
	}
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// setDifference names, for people, the least element that the history's
// set written (a) and the store log's (b) hold differently; they must
// differ, as sameSet found.
func setDifference(a, b []int64) string {
	count := map[int64]int{}
	for _, x := range a {
		count[x]++
	}
	for _, x := range b {
		count[x]--
	}
	var differ []int64
	for x, n := range count {
		if n != 0 {
			differ = append(differ, x)
		}
	}
	x := slices.Min(differ)
	if count[x] > 0 {
		return fmt.Sprintf("the history's holds %d, the store log's does not", x)
	}
	return fmt.Sprintf("the store log's holds %d, the history's does not", x)
}

func readValue(v *int64, set []int64) string {
	switch {
	case set != nil:
		return describeSet(set)
	case v == nil:
		return "nothing"
	}
	return fmt.Sprint(*v)
}

// describeSet names a set for people: small sets whole, large ones by
// their ends and size.
func describeSet(set []int64) string {
	s := slices.Clone(set)
	slices.Sort(s)
	switch {
	case len(s) == 0:
		return "{}"
	case len(s) <= 4:
		return fmt.Sprint(s)
	}
	return fmt.Sprintf("[%d %d … %d] (%d elements)", s[0], s[1], s[len(s)-1], len(s))
}
