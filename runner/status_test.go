package runner

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/history"
)

func TestStatusCountsAndFlagsStaleWrites(t *testing.T) {
	var out bytes.Buffer
	s := newStatus(&out, 20*time.Second)
	if s.tty || s.every() != 5*time.Second {
		t.Fatal("a buffer is not a terminal: plain lines every 5 s expected")
	}
	s.watch([]string{"c1", "c2"})
	for _, e := range []history.Event{
		{Process: "c1", Time: 1, Type: history.Invoke, F: history.Acquire},
		{Process: "c1", Time: 2, Type: history.OK, F: history.Acquire, Token: 33},
		{Process: history.Nemesis, Time: 3, Type: history.Info, F: history.Start, Fault: "pause", Targets: []string{"c1"}},
		{Process: "c2", Time: 4, Type: history.Invoke, F: history.Acquire},
		{Process: "c2", Time: 5, Type: history.OK, F: history.Acquire, Token: 34},
		{Process: "c2", Time: 6, Type: history.Invoke, F: history.Write, Token: 34},
		{Process: "c2", Time: 7, Type: history.OK, F: history.Write, Token: 34},
		{Process: "c1", Time: 8, Type: history.Invoke, F: history.Write, Token: 33},
		{Process: "c1", Time: 9, Type: history.OK, F: history.Write, Token: 33},
		{Process: "c2", Time: 10, Type: history.Invoke, F: history.Release},
	} {
		s.observe(e)
	}
	s.draw()
	line := out.String()
	for _, want := range []string{"ops 5", "holds 2", "faults 1 (now: pause c1)", "stale writes 1 of 2"} {
		if !strings.Contains(line, want) {
			t.Errorf("status %q lacks %q", line, want)
		}
	}
	s.observe(history.Event{Process: history.Nemesis, Type: history.Info, F: history.Stop, Fault: "pause"})
	out.Reset()
	s.draw()
	if !strings.Contains(out.String(), "(now: none)") {
		t.Errorf("healed fault still shown: %q", out.String())
	}
}

// Events arrive in each client's order, not in time order: c2's write with
// an older token, sent before c1's newer write was acknowledged, must not
// count as stale because c1's stream came in first; nor may a write be
// judged before every client's record has reached its time.
func TestStatusCountsInTimeOrder(t *testing.T) {
	var out bytes.Buffer
	s := newStatus(&out, 20*time.Second)
	s.watch([]string{"c1", "c2"})
	for _, e := range []history.Event{
		{Process: "c1", Time: 10, Type: history.Invoke, F: history.Write, Token: 34},
		{Process: "c1", Time: 11, Type: history.OK, F: history.Write, Token: 34},
		{Process: "c1", Time: 20, Type: history.Invoke, F: history.Release},
	} {
		s.observe(e)
	}
	s.draw()
	if !strings.Contains(out.String(), "stale writes 0 of 0") {
		t.Errorf("a write was judged before c2's record reached it: %q", out.String())
	}
	for _, e := range []history.Event{
		{Process: "c2", Time: 2, Type: history.Invoke, F: history.Write, Token: 33},
		{Process: "c2", Time: 3, Type: history.OK, F: history.Write, Token: 33},
		{Process: "c2", Time: 30, Type: history.Invoke, F: history.Release},
	} {
		s.observe(e)
	}
	out.Reset()
	s.draw()
	if !strings.Contains(out.String(), "stale writes 0 of 2") {
		t.Errorf("arrival order raised an alarm: %q", out.String())
	}
}

// The stop at the first anomaly asks the live count: at 0 it never stops;
// a stale write's ok trips it only once every client's record has passed
// its time, and then it names that write.
func TestFirstStaleWaitsForEveryClient(t *testing.T) {
	s := newStatus(&bytes.Buffer{}, 20*time.Second)
	s.watch([]string{"c1", "c2", "c3"})
	feed := func(es ...history.Event) {
		for _, e := range es {
			s.observe(e)
		}
	}
	feed(
		history.Event{Process: "c1", Time: 1, Type: history.OK, F: history.Acquire, Token: 33},
		history.Event{Process: "c2", Time: 4, Type: history.OK, F: history.Acquire, Token: 34},
		history.Event{Process: "c2", Time: 6, Type: history.Invoke, F: history.Write, Token: 34},
		history.Event{Process: "c2", Time: 7, Type: history.OK, F: history.Write, Token: 34},
		history.Event{Process: "c3", Time: 8, Type: history.Invoke, F: history.Acquire},
	)
	if _, ok := s.firstStale(); ok {
		t.Fatal("stopped with no stale write counted")
	}
	// c1, paused past its lease, thaws and writes with its old token.
	feed(
		history.Event{Process: "c1", Time: 9, Type: history.Invoke, F: history.Write, Token: 33},
		history.Event{Process: "c1", Time: 10, Type: history.OK, F: history.Write, Token: 33},
		history.Event{Process: "c2", Time: 11, Type: history.Invoke, F: history.Release, Token: 34},
	)
	if _, ok := s.firstStale(); ok {
		t.Fatal("stopped before c3's record reached the stale write: c3 may yet say something earlier")
	}
	feed(history.Event{Process: "c3", Time: 12, Type: history.Fail, F: history.Acquire})
	w, ok := s.firstStale()
	if !ok || w.Process != "c1" || w.Time != 10 || w.Type != history.OK {
		t.Fatalf("first stale write %+v (%v), want c1's ok at 10", w, ok)
	}
	// A second stale write leaves the first as it was.
	feed(
		history.Event{Process: "c1", Time: 13, Type: history.Invoke, F: history.Write, Token: 33},
		history.Event{Process: "c1", Time: 14, Type: history.OK, F: history.Write, Token: 33},
		history.Event{Process: "c2", Time: 15, Type: history.Invoke, F: history.Acquire},
		history.Event{Process: "c3", Time: 15, Type: history.Invoke, F: history.Acquire},
	)
	if w, _ := s.firstStale(); w.Time != 10 || s.stale.count != 2 {
		t.Errorf("first stale write %+v after a second (count %d), want still the one at 10", w, s.stale.count)
	}
}
