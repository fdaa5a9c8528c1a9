package checkers

import (
	"errors"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/store"
)

// setSection is one section of the set workload: read, then add element.
func setSection(h *[]history.Event, log *[]store.Entry, client string, token int64, t int64, read []int64, element int64, outcome history.Type, storeOutcome string) {
	idx := int64(len(*h))
	req := client + "-" + string(rune('a'+idx))
	written := append(append([]int64{}, read...), element)
	*h = append(*h,
		history.Event{Index: idx, Time: t, Process: client, Type: history.Invoke, F: history.Read, Key: "x", Token: token, Req: req + "r"},
		history.Event{Index: idx + 1, Time: t + 1, Process: client, Type: history.OK, F: history.Read, Key: "x", Token: token, Req: req + "r", Set: read},
		history.Event{Index: idx + 2, Time: t + 2, Process: client, Type: history.Invoke, F: history.Write, Key: "x", Token: token, Req: req + "w", Value: history.Int(element), Set: written},
		history.Event{Index: idx + 3, Time: t + 3, Process: client, Type: outcome, F: history.Write, Key: "x", Token: token, Req: req + "w", Value: history.Int(element)},
	)
	if storeOutcome != "" {
		*log = append(*log, store.Entry{Seq: int64(len(*log)), Time: t + 2, Req: req + "w", Client: client, Op: "write", Key: "x", Token: token, Set: written, Outcome: storeOutcome})
	}
}

func TestSetSerialIsValid(t *testing.T) {
	var h []history.Event
	var log []store.Entry
	setSection(&h, &log, "c1", 1, 0, nil, 10, history.OK, store.Accepted)
	setSection(&h, &log, "c2", 2, 10, []int64{10}, 20, history.OK, store.Accepted)
	setSection(&h, &log, "c1", 3, 20, []int64{10, 20}, 11, history.Info, store.Accepted)
	setSection(&h, &log, "c2", 4, 30, []int64{10, 20, 11}, 21, history.Info, "")
	in := Input{History: h, Store: log, Key: "x"}
	// Fence needs acquire events; these histories are about the set.
	for _, c := range []Checker{For("set", 0)[0], For("set", 0)[2]} {
		if r := c.Check(in); r.Valid != Valid {
			t.Errorf("%s: %s (%s) %+v", r.Checker, r.Valid, r.Summary, r.Anomalies)
		}
	}
}

// The stale holder: c1 reads {10} with token 1, c2 (token 2) adds 20, c1
// writes {10, 11} over it: 20 is lost.
func TestSetStaleWriterLosesElement(t *testing.T) {
	var h []history.Event
	var log []store.Entry
	setSection(&h, &log, "c1", 1, 0, nil, 10, history.OK, store.Accepted)
	// c1's section overlaps c2's entirely.
	var stale []history.Event
	var staleLog []store.Entry
	setSection(&stale, &staleLog, "c1", 2, 10, []int64{10}, 11, history.OK, store.Accepted)
	setSection(&h, &log, "c2", 3, 12, []int64{10}, 20, history.OK, store.Accepted)
	// Its requests are its own: rename them apart from c1's first section.
	for i := range stale {
		stale[i].Index += int64(len(h))
		stale[i].Req = strings.Replace(stale[i].Req, "c1-a", "c1-s", 1)
	}
	staleLog[0].Req = strings.Replace(staleLog[0].Req, "c1-a", "c1-s", 1)
	stale[2].Time, stale[3].Time = 30, 31
	staleLog[0].Seq, staleLog[0].Time = int64(len(log)), 30
	h = append(h, stale...)
	log = append(log, staleLog...)
	in := Input{History: h, Store: log, Key: "x"}

	lost := LostElements{}.Check(in)
	if lost.Valid != Invalid || lost.Counts["lost"] != 1 {
		t.Fatalf("lost-elements: %s %v", lost.Valid, lost.Counts)
	}
	if msg := lost.Anomalies[0].Message; !strings.Contains(msg, "c2 added 20") || !strings.Contains(msg, "c1's write with token 2") {
		t.Errorf("message %q should name the lost element's adder and the stale writer", msg)
	}
	if lin := (SetView{Linearizable{}}).Check(in); lin.Valid != Invalid {
		t.Errorf("linearizable: %s", lin.Valid)
	}
}

// c1 adds 10 but writes {10, 99}: 99 is no one's. Where only the store
// log has 99 in c1's write, the records disagree on what c1 wrote, and
// nothing is judged.
func TestSetPhantomElement(t *testing.T) {
	var h []history.Event
	var log []store.Entry
	setSection(&h, &log, "c1", 1, 0, nil, 10, history.OK, store.Accepted)
	h[2].Set, log[0].Set = []int64{10, 99}, []int64{10, 99}
	r := LostElements{}.Check(Input{History: h, Store: log, Key: "x"})
	if r.Valid != Invalid || r.Anomalies[0].Kind != "phantom-element" {
		t.Fatalf("%s %+v", r.Valid, r.Anomalies)
	}
	h[2].Set = []int64{10}
	r = LostElements{}.Check(Input{History: h, Store: log, Key: "x"})
	if r.Valid != Unknown || !strings.Contains(r.Reason, `write "c1-aw" by c1 (event 2) wrote [10], but the store log has it store [10 99]`) {
		t.Fatalf("%s %q", r.Valid, r.Reason)
	}
}

// The set workload's records are cross-checked as the counter's are: a run
// whose history and store log disagree is unknown, never valid or invalid.
func TestSetGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		// reason is what the unknown verdict must say.
		reason []string
	}{
		// c3's write failed in the history, but the store applied it.
		{"set-failed-applied", []string{`"c3-2"`, "failed", "accepted"}},
		// c2's write was acknowledged, but the store never logged it.
		{"set-ack-unlogged", []string{`"c2-2"`, "acknowledged", "no such request"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := load(t, tc.name)
			r := LostElements{}.Check(in)
			if r.Valid != Unknown {
				t.Fatalf("lost-elements: %s (%s), want unknown", r.Valid, r.Summary)
			}
			for _, part := range tc.reason {
				if !strings.Contains(r.Reason, part) {
					t.Errorf("reason %q does not mention %s", r.Reason, part)
				}
			}
		})
	}
}

// Messages about sets show elements, not the numbers the checkers give
// sets internally.
func TestSetMessagesNameElements(t *testing.T) {
	var h []history.Event
	var log []store.Entry
	setSection(&h, &log, "c1", 1, 0, nil, 10, history.OK, store.Accepted)
	setSection(&h, &log, "c2", 2, 10, []int64{10}, 20, history.OK, store.Accepted)
	// c3 read {10} before c2's write and writes {10, 30} over it with an
	// older token.
	setSection(&h, &log, "c3", 1, 20, []int64{10}, 30, history.OK, store.Accepted)
	h[8].Time, h[9].Time = 5, 6 // c3's read came first
	in := Input{History: h, Store: log, Key: "x"}
	lin := SetView{Linearizable{}}.Check(in)
	if lin.Valid != Invalid {
		t.Fatalf("linearizable: %s", lin.Valid)
	}
	if msg := lin.Anomalies[0].Message; !strings.Contains(msg, "[10 20]") || !strings.Contains(msg, "[10 30]") {
		t.Errorf("linearizable message does not show the sets: %q", msg)
	}
	// Fence judges only locks that issue tokens: one grant says this one does.
	in.History = append(in.History,
		history.Event{Index: 12, Time: 30, Process: "c4", Type: history.Invoke, F: history.Acquire},
		history.Event{Index: 13, Time: 31, Process: "c4", Type: history.OK, F: history.Acquire, Token: 3})
	stale := anomaly(t, Fence{}.Check(in), "stale-write-accepted")
	if !strings.Contains(stale.Message, "c3 wrote [10 30] with token 1") || strings.Contains(stale.Message, "overwrote") {
		t.Errorf("fence message does not show the set written: %q", stale.Message)
	}
	if describeSet([]int64{5, 1, 9, 3, 7}) != "[1 3 … 9] (5 elements)" {
		t.Errorf("a large set reads %q", describeSet([]int64{5, 1, 9, 3, 7}))
	}
}

// Twins of the set workload, each pair one value apart with opposite
// verdicts, judged as a check judges them: prepared, by the workload's
// checkers, after ValidateWorkload.
func TestSetGoldenTwins(t *testing.T) {
	const (
		lin  = 0 // For's linearizable
		lost = 2 // For's lost-elements
	)
	for _, tc := range []struct {
		name string
		// refused is what ValidateWorkload's error must say, "" for none.
		refused string
		want    map[int]Verdict
		// reason is what each unknown verdict's reason must say.
		reason string
		// anomaly is what lost-elements' first anomaly must say.
		anomaly []string
	}{
		// c1 adds 1000000001; c2 reads it and writes it with its own.
		{name: "set-write-agrees", want: map[int]Verdict{lin: Valid, lost: Valid}},
		// The store log has c2's write store its own element alone: by
		// the log c1's acknowledged element is lost, by the history the
		// sections are linearizable. One record is wrong.
		{name: "set-write-differs", want: map[int]Verdict{lin: Unknown, lost: Unknown},
			reason: `write "c2-2" by c2 (event 12) wrote [1000000001 2000000001], but the store log has it store [2000000001] at seq 3`},
		// c2 (token 1) reads {} and writes {2000000001} over c1's
		// acknowledged 1000000001; c1's next add times out unlogged.
		{name: "set-element-distinct", want: map[int]Verdict{lin: Invalid, lost: Invalid},
			anomaly: []string{"c1 added 1000000001 (token 2, event 8)", "c2's write with token 1 at 0.071 s (store seq 3)"}},
		// c1's add that timed out adds 1000000001 again: tracked by
		// element, it would take the acknowledged add's place and hide
		// its loss.
		{name: "set-element-repeated", want: map[int]Verdict{lost: Unknown},
			refused: "element 1000000001 is added twice, by c1 at event 8 and by c1 at event 20",
			reason:  "element 1000000001 is added twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := Prepare(load(t, tc.name))
			err := ValidateWorkload("set", in.History)
			switch {
			case tc.refused == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.refused != "" && (!errors.Is(err, history.ErrMalformed) || !strings.Contains(err.Error(), tc.refused)):
				t.Errorf("ValidateWorkload = %v, want malformed naming %q", err, tc.refused)
			}
			// The counter's values repeat by design.
			if err := ValidateWorkload("counter", in.History); err != nil {
				t.Errorf("the counter refuses it: %v", err)
			}
			cs := For("set", 0)
			for i, want := range tc.want {
				r := cs[i].Check(in)
				if r.Valid != want {
					t.Errorf("%s = %s, want %s: %s %s %+v", r.Checker, r.Valid, want, r.Summary, r.Reason, r.Anomalies)
				}
				if want == Unknown && !strings.Contains(r.Reason, tc.reason) {
					t.Errorf("%s reason %q does not say %q", r.Checker, r.Reason, tc.reason)
				}
				if i == lost && len(tc.anomaly) > 0 {
					wantMentions(t, anomaly(t, r, "lost-element"), tc.anomaly...)
				}
			}
		})
	}
}
