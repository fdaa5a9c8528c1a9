package catalog

import (
	"math"
	"testing"
	"time"

	"github.com/lockbench/lockbench/checkers"
	"github.com/lockbench/lockbench/config"
	"github.com/lockbench/lockbench/metrics"
	"github.com/lockbench/lockbench/rundir"
)

// TestCompareLeavesStoppedRunsOutOfMeasures: a run stopped at its first
// anomaly counts for detection (its verdict, its anomalies) but none of
// its measures reach the group; stopped and not judged invalid, it is
// discarded, counted unknown and never valid.
func TestCompareLeavesStoppedRunsOutOfMeasures(t *testing.T) {
	eachBackend(t, testCompareLeavesStoppedRunsOutOfMeasures)
}

func testCompareLeavesStoppedRunsOutOfMeasures(t *testing.T, b backend) {
	c, err := Open(b.fresh(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	// Each run waits the same ms on every acquire and does its cycles in
	// 10 s, so the group's figures say whose measures they hold.
	entry := func(n int, backend string, waitMs float64, cycles int64, v checkers.Verdict, stopped bool) Entry {
		var m metrics.Run
		for range 100 {
			m.AcquireWait.Add(waitMs, false)
			m.Handover.Add(waitMs, false)
		}
		m.Unavailable.Add(waitMs, false)
		m.Sections, m.Seconds, m.WritesOK, m.WritesFailed = cycles, 10, cycles, cycles
		m.Stopped = stopped
		fence := checkers.Result{Checker: "fence", Valid: v}
		if v == checkers.Invalid {
			fence.Anomalies = []checkers.Anomaly{{Kind: checkers.StaleWriteAccepted.Name, Time: 4e9}}
		}
		res := rundir.Results{Lockbench: "v1", Verdict: v, Checkers: []checkers.Result{fence}, Checked: start}
		if stopped {
			res.Stopped = &rundir.Stop{At: 4.1e9, Write: 4e9, Process: "c1"}
		}
		return Entry{
			Test: rundir.Test{RunID: "run", Start: start.Add(time.Duration(n) * time.Minute), Name: backend,
				Config: config.Config{Backend: backend, Nemesis: []string{"pause"}, Seed: int64(n)}},
			Dir: backend, Results: res, Metrics: m,
		}
	}
	for _, e := range []Entry{
		entry(1, "redis", 10, 100, checkers.Valid, false),
		entry(2, "redis", 1000, 5, checkers.Invalid, true),
		entry(3, "etcd", 10, 100, checkers.Valid, false),
		entry(4, "etcd", 1000, 5, checkers.Valid, true),
	} {
		if err := c.Record(e); err != nil {
			t.Fatal(err)
		}
	}
	gs, err := c.Compare(Query{By: []string{"backend"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != 2 {
		t.Fatalf("%d groups, want etcd and redis", len(gs))
	}
	etcd, redis := gs[0], gs[1]
	if redis.Runs != 2 || redis.Invalid != 1 || redis.Unknown != 0 || redis.Anomalies["stale_write"] != 1 {
		t.Errorf("redis: %d runs, %d invalid, %d unknown, anomalies %v; want 2, 1, 0 and the stopped run's stale write",
			redis.Runs, redis.Invalid, redis.Unknown, redis.Anomalies)
	}
	if etcd.Runs != 2 || etcd.Invalid != 0 || etcd.Unknown != 1 {
		t.Errorf("etcd: %d runs, %d invalid, %d unknown; want the stopped valid run discarded as unknown", etcd.Runs, etcd.Invalid, etcd.Unknown)
	}
	for _, g := range gs {
		for name, q := range map[string]Quantiles{"acquire wait": g.AcquireWait, "handover": g.Handover} {
			if q.N != 100 || q.P50 == nil || q.P999 == nil || math.Abs(*q.P50-10) > 1 || math.Abs(*q.P999-10) > 1 {
				t.Errorf("%s %s: %+v, want the normal run's 100 samples of 10 ms alone", g.Key["backend"], name, q)
			}
		}
		if g.Unavailable.N != 1 || g.Faults != 1 {
			t.Errorf("%s: unavailability %+v, %d faults, want the normal run's one", g.Key["backend"], g.Unavailable, g.Faults)
		}
		if g.CyclesPerSec != 10 || g.CASRetriesPerSuccess == nil || *g.CASRetriesPerSuccess != 1 {
			t.Errorf("%s: %v cycles/s, CAS retries %v, want the normal run's 10 and 1", g.Key["backend"], g.CyclesPerSec, g.CASRetriesPerSuccess)
		}
		if len(g.RunsAt) != 2 {
			t.Errorf("%s: runs at %v, want both", g.Key["backend"], g.RunsAt)
		}
	}
}
