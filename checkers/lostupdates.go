package checkers

import (
	"fmt"
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
	writes := map[string]store.Entry{} // req -> the store's entry for that write
	var final int64
	for _, e := range log {
		if e.Op != "write" {
			continue
		}
		if _, ok := writes[e.Req]; !ok {
			writes[e.Req] = e
		}
		if e.Outcome == store.Accepted {
			final = e.Value
		}
	}

	var acked, unknown int64
	ackedReq := map[string]bool{}
	var mismatch string
	for _, o := range history.Pair(in.History) {
		if o.F != history.Write || o.Lone || !onKey(o, in.Key) {
			continue
		}
		req := o.Call.Req
		e, inLog := writes[req]
		switch o.Type {
		case history.OK:
			acked++
			ackedReq[req] = true
			if mismatch == "" && (req == "" || !inLog || e.Outcome != store.Accepted) {
				mismatch = fmt.Sprintf("write %q by %s (event %d) was acknowledged but the store log %s",
					req, o.Process, o.Ret.Index, storeSays(e, inLog))
			}
		case history.Fail:
			if mismatch == "" && inLog && e.Outcome == store.Accepted {
				mismatch = fmt.Sprintf("write %q by %s (event %d) failed but the store log has it accepted at seq %d",
					req, o.Process, o.Ret.Index, e.Seq)
			}
		default:
			unknown++
		}
	}
	r.Counts["acknowledged"] = acked
	r.Counts["unknown"] = unknown
	r.Counts["final"] = final
	zero(r.Counts, "lost", "clobbering_writes")
	ackLost := clobbers(&r, log, reqEvents(in.History), ackedReq)

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

// clobbers finds accepted writes that stored a value no greater than the one
// they replaced: the writer computed from a read that newer writes had
// already superseded, and those writes' increments vanished. It reports
// whether any vanished write had been acknowledged, which is a lost update
// whatever the final count says.
func clobbers(r *Result, log []store.Entry, reqs map[string][]int64, acked map[string]bool) bool {
	lastRead := map[string]int{} // client -> log position of its last accepted read
	byValue := map[int64][]int{} // value -> log positions of accepted writes of it, ascending
	accepted := 0
	ackLost := false
	for i, e := range log {
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
			// The increments that vanished are the writes of value..prev
			// since the writer's read. A value range wider than the number
			// of writes so far cannot hold more writes, which bounds the
			// loop even if values jump.
			var erased []store.Entry
			for v := e.Value; v <= e.Prev && v-e.Value < int64(accepted) && len(erased) < maxErased; v++ {
				ps := byValue[v]
				for k := sort.SearchInts(ps, from+1); k < len(ps) && len(erased) < maxErased; k++ {
					erased = append(erased, log[ps[k]])
				}
			}
			lost := e.Prev - e.Value + 1
			r.Counts["lost"] += lost
			a := Anomaly{
				Kind:      "lost-update",
				Events:    sortedConcat(reqs[e.Req], nil),
				StoreSeqs: []int64{e.Seq},
				Clients:   []string{e.Client},
				Tokens:    []int64{e.Token},
				Time:      e.Time,
			}
			var names []string
			for _, w := range erased {
				ack := ""
				if acked[w.Req] {
					ack = ", acknowledged"
					ackLost = true
				}
				names = append(names, fmt.Sprintf("%s's write of %d (token %d, seq %d%s)", w.Client, w.Value, w.Token, w.Seq, ack))
				a.Events = sortedConcat(a.Events, reqs[w.Req])
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
			r.add("clobbering_writes", a)
		}
		byValue[e.Value] = append(byValue[e.Value], i)
		accepted++
	}
	return ackLost
}
