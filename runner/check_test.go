package runner

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/checkers"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/store"
)

// A killed harness: c2's record stops at 30 while c1's goes on to 50, and
// the store applied c1's write at 40 and a request the history never saw.
func TestCutKeepsWhatEveryClientCovers(t *testing.T) {
	events := []history.Event{
		{Index: 0, Time: 10, Process: "c1", Type: history.Invoke, F: history.Read, Req: "c1-1"},
		{Index: 1, Time: 20, Process: "c2", Type: history.Invoke, F: history.Acquire},
		{Index: 2, Time: 25, Process: history.Nemesis, Type: history.Info, F: history.Start},
		{Index: 3, Time: 30, Process: "c2", Type: history.Fail, F: history.Acquire},
		{Index: 4, Time: 40, Process: "c1", Type: history.Invoke, F: history.Write, Req: "c1-2"},
		{Index: 5, Time: 50, Process: "c1", Type: history.OK, F: history.Write, Req: "c1-2"},
	}
	log := []store.Entry{
		{Seq: 0, Time: 12, Req: "c1-1", Op: "read", Outcome: store.Accepted},
		{Seq: 1, Time: 41, Req: "c1-2", Op: "write", Outcome: store.Accepted},
		{Seq: 2, Time: 28, Req: "c3-9", Op: "write", Outcome: store.Accepted},
	}
	kept, keptLog, note := cut(events, log)
	if len(kept) != 4 || kept[3].Index != 3 {
		t.Errorf("kept events %+v, want indexes 0..3", kept)
	}
	if len(keptLog) != 1 || keptLog[0].Seq != 0 {
		t.Errorf("kept store entries %+v, want only seq 0", keptLog)
	}
	if !strings.Contains(note, "0.000 s") || !strings.Contains(note, "2 events and 2 store requests") {
		t.Errorf("note %q", note)
	}
}

// A client paused when the harness died is silent, not behind.
func TestCutIgnoresFrozenClients(t *testing.T) {
	events := []history.Event{
		{Index: 0, Time: 10, Process: "c1", Type: history.OK, F: history.Acquire, Token: 1},
		{Index: 1, Time: 20, Process: history.Nemesis, Type: history.Info, F: history.Start, Fault: "pause", Targets: []string{"c1"}},
		{Index: 2, Time: 30, Process: "c2", Type: history.Invoke, F: history.Acquire},
		{Index: 3, Time: 40, Process: "c3", Type: history.Invoke, F: history.Acquire},
		{Index: 4, Time: 50, Process: "c3", Type: history.OK, F: history.Acquire, Token: 2},
	}
	kept, _, _ := cut(events, nil)
	if len(kept) != 3 {
		t.Errorf("kept %d events, want 3 (up to c2's last at 30, ignoring frozen c1)", len(kept))
	}
}

// A history written in arrival order (here each client's stream whole, one
// after the other, as lagging streams can leave it) is judged as the same
// history in time order, and rewritten in time order with index order =
// time order.
func TestCheckJudgesArrivalOrderInTimeOrder(t *testing.T) {
	golden := filepath.Join("..", "checkers", "testdata", "stale-fence-none")
	events, err := history.DecodeFile(filepath.Join(golden, rundir.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	arrival := slices.Clone(events)
	slices.SortStableFunc(arrival, func(a, b history.Event) int { return strings.Compare(a.Process, b.Process) })
	for i := range arrival {
		arrival[i].Index = int64(i)
	}
	if slices.EqualFunc(arrival, events, func(a, b history.Event) bool { return a.Time == b.Time }) {
		t.Fatal("the golden history has one process: nothing to reorder")
	}
	judge := func(h []history.Event) (*rundir.Results, string) {
		dir := t.TempDir()
		test, err := os.ReadFile(filepath.Join("..", "report", "testdata", "valid", rundir.TestFile))
		if err != nil {
			t.Fatal(err)
		}
		test = append(bytes.TrimSuffix(bytes.TrimSpace(test), []byte("}")), []byte(`,"end":"2026-01-01T00:00:00Z"}`)...)
		logData, err := os.ReadFile(filepath.Join(golden, rundir.StoreFile))
		if err != nil {
			t.Fatal(err)
		}
		if err := errors.Join(os.WriteFile(filepath.Join(dir, rundir.TestFile), test, 0o644),
			os.WriteFile(filepath.Join(dir, rundir.StoreFile), logData, 0o644),
			history.Rewrite(filepath.Join(dir, rundir.HistoryFile), h)); err != nil {
			t.Fatal(err)
		}
		rep, err := Check(dir, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return rep, dir
	}
	want, _ := judge(events)
	got, dir := judge(arrival)
	if got.Verdict != want.Verdict || got.Verdict != checkers.Invalid {
		t.Errorf("arrival order judged %s, time order %s; want invalid both", got.Verdict, want.Verdict)
	}
	for i := range want.Checkers {
		if g, w := got.Checkers[i], want.Checkers[i]; g.Valid != w.Valid || g.Summary != w.Summary {
			t.Errorf("%s: %s %q in arrival order, %s %q in time order", w.Checker, g.Valid, g.Summary, w.Valid, w.Summary)
		}
	}
	rewritten, err := history.DecodeFile(filepath.Join(dir, rundir.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range rewritten {
		if e.Index != int64(i) || i > 0 && e.Time < rewritten[i-1].Time {
			t.Fatalf("rewritten history out of time order at line %d: %+v", i+1, e)
		}
	}
}

// A lease process falls silent between holdings: its last renewal must not
// pull the horizon back, since its client's own record goes on.
func TestCutFollowsClientsNotLeaseProcesses(t *testing.T) {
	lease := history.LeaseProcess("c1")
	events := []history.Event{
		{Index: 0, Time: 10, Process: lease, Type: history.Invoke, F: history.Renew},
		{Index: 1, Time: 12, Process: lease, Type: history.OK, F: history.Renew, TTL: 2e9},
		{Index: 2, Time: 30, Process: "c1", Type: history.Invoke, F: history.Release},
		{Index: 3, Time: 35, Process: "c1", Type: history.OK, F: history.Release},
		{Index: 4, Time: 40, Process: "c2", Type: history.Invoke, F: history.Acquire},
	}
	if kept, _, _ := cut(events, nil); len(kept) != 4 {
		t.Errorf("kept %d events, want 4 (up to c1's last at 35)", len(kept))
	}
}

// A stop heals every open fault of its kind and no other: here both pauses
// are over by 40, so c1 and c2, silent since, hold the horizon back to
// c1's last event, while c3, frozen by a partition that is never healed,
// and c4, killed, do not.
func TestCutStopHealsItsKind(t *testing.T) {
	nemesis := func(i, at int64, f, fault string, targets ...string) history.Event {
		return history.Event{Index: i, Time: at, Process: history.Nemesis, Type: history.Info, F: f, Fault: fault, Targets: targets}
	}
	events := []history.Event{
		{Index: 0, Time: 5, Process: "c3", Type: history.Invoke, F: history.Acquire},
		{Index: 1, Time: 6, Process: "c4", Type: history.Invoke, F: history.Acquire},
		{Index: 2, Time: 8, Process: "c1", Type: history.Invoke, F: history.Acquire},
		{Index: 3, Time: 9, Process: "c2", Type: history.Invoke, F: history.Acquire},
		nemesis(4, 10, history.Start, "pause", "c1"),
		nemesis(5, 11, history.Start, "partition", "c3"),
		nemesis(6, 12, history.Start, "pause", "c2"),
		nemesis(7, 13, history.Start, history.KillClient, "c4"),
		nemesis(8, 14, history.Stop, history.KillClient),
		nemesis(9, 40, history.Stop, "pause"),
		{Index: 10, Time: 50, Process: "c5", Type: history.Invoke, F: history.Acquire},
	}
	kept, _, note := cut(events, nil)
	if len(kept) != 3 || kept[len(kept)-1].Index != 2 {
		t.Errorf("kept %+v, want up to c1's last event at 8", kept)
	}
	if !strings.Contains(note, "not waiting for c3, c4:") {
		t.Errorf("note %q, want c3 and c4 waived", note)
	}
	events[9].Fault = "link"
	if kept, _, _ := cut(events, nil); len(kept) != len(events) {
		t.Errorf("kept %d of %d events when the pauses are never healed", len(kept), len(events))
	}
}
