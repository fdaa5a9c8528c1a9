package checkers

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/store"
)

// LostUpdates counts increments: every acknowledged write adds one to the
// counter, so the final value must lie between the number of acknowledged
// writes and that plus the writes whose outcome is unknown. The store log
// shows which writes erased which; erasing an acknowledged write is a lost
// update even when an unknown write that landed makes the count come out
// right.
type LostUpdates struct{}

func (LostUpdates) Name() string { return "lost-updates" }

// maxErased bounds the erased writes named in one anomaly: after a long
// pause one stale write can erase hundreds, and the first ones tell the story.
const maxErased = 20

func (c LostUpdates) Check(in Input) Result {
	r := newResult(c.Name())
	log := storeOnKey(in.Store, in.Key)
	writes := make(map[string]int, len(log)/2) // req -> position in log of the store's (first) entry for that write
	var final int64
	for i := range log {
		e := &log[i]
		if e.Op != "write" {
			continue
		}
		if _, ok := writes[e.Req]; !ok {
			writes[e.Req] = i
		}
		if e.Outcome == store.Accepted {
			final = e.Value
		}
	}

	h := in.History
	var acked, unknown int64
	// ackedFirst marks, by the position writes gives its req, each write
	// that was acknowledged.
	ackedFirst := make([]bool, len(log))
	var mismatch string
	ops, _ := history.Refs(h)
	for _, o := range ops {
		call, ret := &h[o.Call], &h[o.Ret]
		if call.F != history.Write || o.Lone() || !onKey(call, in.Key) {
			continue
		}
		req := call.Req
		i, inLog := writes[req]
		var e store.Entry
		if inLog {
			e = log[i]
		}
		switch o.Type(h) {
		case history.OK:
			acked++
			if inLog {
				ackedFirst[i] = true
			}
			if mismatch == "" && (req == "" || !inLog || e.Outcome != store.Accepted) {
				mismatch = fmt.Sprintf("write %q by %s (event %d) was acknowledged but the store log %s",
					req, call.Process, ret.Index, storeSays(e, inLog))
			}
		case history.Fail:
			if mismatch == "" && inLog && e.Outcome == store.Accepted {
				mismatch = fmt.Sprintf("write %q by %s (event %d) failed but the store log has it accepted at seq %d",
					req, call.Process, ret.Index, e.Seq)
			}
		default:
			unknown++
		}
	}
	r.Counts["acknowledged"] = acked
	r.Counts["unknown"] = unknown
	r.Counts["final"] = final
	zero(r.Counts, "lost", "clobbering_writes")
	acknowledged := func(w *store.Entry) bool { return ackedFirst[writes[w.Req]] }
	var links reqLinks
	ackLost := clobbers(&r, log, acknowledged, &links)
	links.resolve(h, r.Anomalies)

	r.Summary = fmt.Sprintf("final value %d; %s acknowledged, %d unknown; %s overwritten",
		final, plural(acked, "write"), unknown, plural(r.Counts["lost"], "increment"))
	if mismatch != "" {
		r.Valid = Unknown
		r.Reason = "the history and the store log disagree: " + mismatch
		return r
	}
	switch {
	case final < acked && r.Counts["clobbering_writes"] == 0:
		r.add("missing_increments", Anomaly{
			Kind: "missing-increments",
			Message: fmt.Sprintf("The final value is %d but %d writes were acknowledged, and the store log shows no write that overwrote newer data.",
				final, acked),
		})
	case final > acked+unknown:
		r.add("phantom_increments", Anomaly{
			Kind: "phantom-increments",
			Message: fmt.Sprintf("The final value is %d but only %d writes were acknowledged and %d have an unknown outcome.",
				final, acked, unknown),
		})
	}
	r.Valid = Valid
	if final < acked || final > acked+unknown || ackLost {
		r.Valid = Invalid
	}
	return r
}

func storeSays(e store.Entry, inLog bool) string {
	if !inLog {
		return "has no such write"
	}
	return fmt.Sprintf("has it %s at seq %d", e.Outcome, e.Seq)
}

// written is a log's accepted writes by value, in log order within a
// value, for finding the writes a clobber erased.
type written []valuePos

// valuePos is a write of value at log position pos.
type valuePos struct {
	value int64
	pos   int
}

// indexWrites builds written for log. Counter values mostly grow along the
// log, so the sort has little to do.
func indexWrites(log []store.Entry) written {
	var w written
	for i := range log {
		if e := &log[i]; e.Op == "write" && e.Outcome == store.Accepted {
			w = append(w, valuePos{e.Value, i})
		}
	}
	slices.SortFunc(w, func(a, b valuePos) int {
		return cmp.Or(cmp.Compare(a.value, b.value), cmp.Compare(a.pos, b.pos))
	})
	return w
}

// erased returns the accepted writes of values lo..hi at log positions
// after from and before to, by value and then position, at most n.
func (w written) erased(lo, hi int64, from, to, n int) []int {
	var out []int
	k, _ := slices.BinarySearchFunc(w, lo, func(x valuePos, v int64) int {
		return cmp.Compare(x.value, v)
	})
	for k < len(w) && w[k].value <= hi && len(out) < n {
		v := w[k].value
		// Skip this value's writes up to from, then take those before to.
		k += sort.Search(len(w)-k, func(j int) bool { return w[k+j].value != v || w[k+j].pos > from })
		for ; k < len(w) && w[k].value == v && w[k].pos < to && len(out) < n; k++ {
			out = append(out, w[k].pos)
		}
		k += sort.Search(len(w)-k, func(j int) bool { return w[k+j].value != v })
	}
	return out
}

// clobbers finds accepted writes that stored a value no greater than the one
// they replaced: the writer computed from a read that newer writes had
// already superseded, and those writes' increments vanished. It reports
// whether any vanished write had been acknowledged, which is a lost update
// whatever the final count says.
func clobbers(r *Result, log []store.Entry, acknowledged func(*store.Entry) bool, links *reqLinks) bool {
	lastRead := map[string]int{} // client -> log position of its last accepted read
	var byValue written          // built at the first clobber: a clean run has none
	accepted := 0
	ackLost := false
	for i := range log {
		e := &log[i]
		if e.Outcome != store.Accepted {
			continue
		}
		if e.Op == "read" {
			lastRead[e.Client] = i
			continue
		}
		if e.Prev >= e.Value {
			from, ok := lastRead[e.Client]
			if !ok {
				from = -1
			}
			if byValue == nil {
				byValue = indexWrites(log)
			}
			// The increments that vanished are the writes of value..prev
			// since the writer's read. A value range wider than the number
			// of writes so far cannot hold more writes, which bounds the
			// search even if values jump.
			var erased []int
			if accepted > 0 {
				span := min(uint64(e.Prev-e.Value), uint64(accepted-1))
				erased = byValue.erased(e.Value, e.Value+int64(span), from, i, maxErased)
			}
			lost := e.Prev - e.Value + 1
			r.Counts["lost"] += lost
			for _, p := range erased {
				ackLost = ackLost || acknowledged(&log[p])
			}
			if !r.tally("clobbering_writes") {
				accepted++
				continue
			}
			a := Anomaly{
				Kind:      "lost-update",
				StoreSeqs: []int64{e.Seq},
				Clients:   []string{e.Client},
				Tokens:    []int64{e.Token},
				Time:      e.Time,
			}
			reqs := []string{e.Req}
			var names []string
			for _, p := range erased {
				w := &log[p]
				ack := ""
				if acknowledged(w) {
					ack = ", acknowledged"
				}
				names = append(names, fmt.Sprintf("%s's write of %d (token %d, seq %d%s)", w.Client, w.Value, w.Token, w.Seq, ack))
				reqs = append(reqs, w.Req)
				a.StoreSeqs = append(a.StoreSeqs, w.Seq)
				a.Clients = append(a.Clients, w.Client)
				a.Tokens = append(a.Tokens, w.Token)
			}
			based := "without a read of its own in the store log"
			if from >= 0 {
				based = fmt.Sprintf("computed from its read of %d (seq %d)", log[from].Value, log[from].Seq)
			}
			a.Message = fmt.Sprintf("%s (token %d) wrote %d over %d at %s (store seq %d), %s, erasing %s",
				e.Client, e.Token, e.Value, e.Prev, history.Seconds(e.Time), e.Seq, based, plural(lost, "increment"))
			// The anomaly keeps every erased write; the sentence names the
			// first few so it still reads as one.
			if len(names) > 3 {
				names = append(names[:3], fmt.Sprintf("and %d more", len(names)-3))
			}
			if len(names) > 0 {
				a.Message += ": " + strings.Join(names, ", ")
			}
			a.Message += "."
			links.link(len(r.Anomalies), reqs...)
			r.Anomalies = append(r.Anomalies, a)
		}
		accepted++
	}
	return ackLost
}
