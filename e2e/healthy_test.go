package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/checkers"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/nemesis"
	"github.com/lockbench/lockbench/rundir"
)

// zkDownSeed draws, first, a kill of two ZooKeeper members restarted at
// once; lockbench before the healthy event judged this run a deadlock,
// from the kill until the ensemble served again.
const zkDownSeed = "29"

// A majority of the ensemble killed and restarted at once leaves the whole
// service down for longer than 3 TTLs after its heal begins: the JVMs start
// and elect a leader, which takes 2 s or more even on an idle machine, and
// the TTL is short enough (3 TTLs = 1.5 s) that it does. The nemesis waits for the ensemble to pass its
// bring-up checks again and records healthy after each heal, and the
// progress checker does not read the outage as a lock no one would let go.
func TestZooKeeperDownPastItsHeal(t *testing.T) {
	const ttl = 500 * time.Millisecond
	r := lockbench(t, nil, "run", "--backend", "zookeeper", "--ttl", ttl.String(), "--nemesis", "kill", "--target", "majority",
		"--restart-delay", "0", "--nemesis-interval", "2s", "--time-limit", "20s", "--seed", zkDownSeed)
	defer assertNothingLeft(t, r.runID)
	if r.exit > 2 {
		t.Fatalf("exit %d: %s", r.exit, r.stderr)
	}
	events := inTimeOrder(t, r.dir)
	type heal struct {
		targets            []string
		begun, done, ready int64
		healthy            bool
	}
	var heals []heal
	var faults []history.Event
	for _, e := range events {
		if e.Process == history.Nemesis {
			faults = append(faults, e)
		}
	}
	for i, e := range faults {
		if e.F != history.Stop || e.Type != history.Info {
			continue
		}
		start, begun := faults[i-2], faults[i-1]
		if start.F != history.Start || start.Type != history.Info || begun.F != history.Stop || begun.Type != history.Invoke {
			t.Fatalf("heal %+v does not follow its fault's start and the heal's invoke", e)
		}
		if i+1 == len(faults) || faults[i+1].F != history.Healthy {
			t.Fatalf("heal at %s is not followed by a healthy event: %+v", history.Seconds(e.Time), faults[i+1:])
		}
		h := faults[i+1]
		// Only a wait the run's end cut short, after the last heal, may
		// fail: the service comes back well within the bound.
		last := i+2 == len(faults)
		cut := h.Type == history.Fail && h.Error == nemesis.RunEndedUnhealthy && last
		if h.Type != history.Info && !cut || h.Fault != "kill" || !slices.Equal(h.Targets, start.Targets) || h.Time < e.Time {
			t.Errorf("after the heal at %s (of %v): %+v, want a healthy info of kill on the same targets, later", history.Seconds(e.Time), start.Targets, h)
		}
		heals = append(heals, heal{targets: start.Targets, begun: begun.Time, done: e.Time, ready: h.Time, healthy: h.Type == history.Info})
	}
	if len(heals) == 0 || !heals[0].healthy {
		t.Fatalf("no fault was healed and the service seen healthy after it: %+v", heals)
	}
	shown := 0
	for _, h := range heals {
		if !h.healthy {
			t.Logf("the run ended %s after the last heal, before the service answered", seconds(h.ready-h.done))
			continue
		}
		// From inside the cluster: the clients, in their containers, got
		// no lock from the heal's beginning until the ensemble served
		// again, longer than 3 TTLs, and were granted it after healthy.
		first, after := int64(-1), false
		for _, e := range events {
			if e.F == history.Acquire && e.Type == history.OK && e.Time >= h.begun {
				if first < 0 {
					first = e.Time
				}
				after = after || e.Time > h.ready
			}
		}
		if first < 0 || first-h.begun > 3*int64(ttl) {
			shown++
		} else {
			t.Logf("a lock was granted %s after the heal at %s began: the service was not down for 3 TTLs there", seconds(first-h.begun), history.Seconds(h.begun))
		}
		if !after {
			t.Errorf("no acquire succeeded after the service was said healthy at %s", history.Seconds(h.ready))
		}
		// Each killed member started again: its own output holds one
		// start of its JVM per life.
		for _, n := range h.targets {
			data, err := os.ReadFile(filepath.Join(r.dir, rundir.LogsDir, n+".log"))
			if err != nil {
				t.Fatal(err)
			}
			if starts := strings.Count(string(data), `Failed to load class "org.slf4j.impl.StaticLoggerBinder"`); starts < 2 {
				t.Errorf("%s's log shows %d JVM starts, want one more per kill", n, starts)
			}
		}
		t.Logf("heal began at %s, done at %s; healthy %s later; first grant after it %s after the heal began",
			history.Seconds(h.begun), history.Seconds(h.done), seconds(h.ready-h.done), seconds(first-h.begun))
	}
	if shown == 0 {
		t.Fatalf("after no heal was the service down for 3 TTLs (%s): this run does not show the case", seconds(3*int64(ttl)))
	}
	page, err := os.ReadFile(filepath.Join(r.dir, rundir.HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(page), `class="fault-recovery"`); n < len(heals) {
		t.Errorf("report.html draws %d waits for the service, want one per heal (%d)", n, len(heals))
	}
	rep := readReport(t, r.dir)
	if r.exit != verdictExit[rep.Verdict] {
		t.Errorf("exit %d for verdict %s", r.exit, rep.Verdict)
	}
	progress := checker(t, rep, "progress")
	for _, a := range progress.Anomalies {
		if a.Kind == "deadlock" {
			t.Errorf("the outage after the heal was called a deadlock: %s", a.Message)
		}
	}
	if progress.Valid != checkers.Valid || progress.Counts["deadlocks"] != 0 {
		t.Errorf("progress %s: %s", progress.Valid, progress.Summary)
	}
	// results.json says how long each recovery took, as the history does.
	var recovered []int64
	for _, f := range checker(t, rep, "exclusion").Faults {
		recovered = append(recovered, f.Healthy)
	}
	var want []int64
	for _, h := range heals {
		if h.healthy {
			want = append(want, h.ready-h.done)
		} else {
			want = append(want, 0)
		}
	}
	if !slices.Equal(recovered, want) {
		t.Errorf("results.json's faults[].healthy %v, want %v from the history", recovered, want)
	}
}

// seconds is a duration in ns for a test's messages.
func seconds(ns int64) string { return time.Duration(ns).Round(time.Millisecond).String() }
