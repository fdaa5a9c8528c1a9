package checkers

import (
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
	for i := range stale {
		stale[i].Index += int64(len(h))
	}
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

func TestSetPhantomElement(t *testing.T) {
	var h []history.Event
	var log []store.Entry
	setSection(&h, &log, "c1", 1, 0, nil, 10, history.OK, store.Accepted)
	log[0].Set = []int64{10, 99}
	r := LostElements{}.Check(Input{History: h, Store: log, Key: "x"})
	if r.Valid != Invalid || r.Anomalies[0].Kind != "phantom-element" {
		t.Fatalf("%s %+v", r.Valid, r.Anomalies)
	}
}
