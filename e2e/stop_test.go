package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/checkers"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/rundir"
)

// --stop-at-first-anomaly: a holder paused at failpoint section (the value
// read, the write ahead) past its lease, with no fence, writes stale once
// thawed; the live count sees that write and the run ends there as at its
// time limit, long before it: faults healed, operations in flight
// completed, nothing left behind, and the full check confirms the stale
// write the stop names.
func TestStopAtFirstAnomaly(t *testing.T) {
	// The live count takes writes in time order, so it waits for every
	// client's records up to the write: a client paused meanwhile holds it
	// back until its heal (7 s with this seed). The limit leaves room for
	// that.
	const limit = 45 * time.Second
	began := time.Now()
	r := lockbench(t, nil, "run", "--backend", "redis", "--nemesis", "pause", "--failpoint", "section", "--fence", "none",
		"--time-limit", limit.String(), "--stop-at-first-anomaly", "--seed", "7")
	took := time.Since(began)
	defer assertNothingLeft(t, r.runID)
	if r.exit != verdictExit[checkers.Invalid] {
		t.Fatalf("exit %d, want %d (invalid)", r.exit, verdictExit[checkers.Invalid])
	}
	test := readJSON[rundir.Test](t, r.dir, rundir.TestFile)
	rep := readReport(t, r.dir)
	stop := rep.Stopped
	if stop == nil || test.Stopped == nil || *test.Stopped != *stop {
		t.Fatalf("stop: results.json %+v, test.json %+v: want both to record it, alike", stop, test.Stopped)
	}
	if stop.Write > stop.At || stop.At >= (limit*2/3).Nanoseconds() || took >= limit {
		t.Errorf("stopped at %s on a stale write at %s: want the write first, and the stop well before the %s limit",
			history.Seconds(stop.At), history.Seconds(stop.Write), limit)
	}
	t.Logf("stopped at %s (the stale write at %s); the run took %s in all", history.Seconds(stop.At), history.Seconds(stop.Write), took.Round(time.Second))
	for _, want := range []string{"stopping at the first anomaly", "stopped at its first anomaly", "verdict: invalid"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the output does not say %q", want)
		}
	}

	// The stale write the full check found is the one the stop named, or
	// one before it.
	var first *checkers.Anomaly
	for _, a := range checker(t, rep, "fence").Anomalies {
		if a.Kind == checkers.StaleWriteAccepted.Name && (first == nil || a.Time < first.Time) {
			first = &a
		}
	}
	if first == nil || first.Time > stop.At {
		t.Fatalf("first stale write %+v, want one at or before the stop at %s", first, history.Seconds(stop.At))
	}

	h, err := history.DecodeFile(filepath.Join(r.dir, rundir.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	var named bool
	for _, e := range h {
		named = named || (e.Process == stop.Process && e.Time == stop.Write && e.F == history.Write && e.Type == history.OK)
	}
	if !named {
		t.Errorf("the history has no ok write of %s at %s, the one the stop names", stop.Process, history.Seconds(stop.Write))
	}
	// Ended as at the time limit: the clients finished their cycles, so
	// every client operation has its outcome, and the pause was healed.
	refs, _ := history.Refs(h)
	for _, o := range refs {
		if op := o.Op(h); !o.Done {
			if _, lease := history.LeaseOwner(op.Process); !lease {
				t.Errorf("%s's %s invoked at %s has no outcome", op.Process, op.F, history.Seconds(op.Call.Time))
			}
		}
	}
	var struck, healed int
	for _, e := range h {
		if e.Process == history.Nemesis && e.Type == history.Info && e.F == history.Start {
			struck++
		}
		if e.Process == history.Nemesis && e.Type == history.Info && e.F == history.Stop && e.Error == "" {
			healed++
		}
	}
	if struck == 0 || healed < struck {
		t.Errorf("%d faults struck, %d heals recorded: want every fault healed", struck, healed)
	}
	if last := h[len(h)-1].Time; last >= limit.Nanoseconds() {
		t.Errorf("the history goes on to %s, past the %s limit", history.Seconds(last), limit)
	}
}
