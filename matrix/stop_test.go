package matrix

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/checkers"
	"github.com/lockbench/lockbench/config"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/runner"
)

// Runs stopped at their first anomaly: one the full check confirms counts
// for the cell's detection, one it does not is an error with no verdict,
// and neither adds its cycles to the cell's throughput.
func TestStoppedRunsKeepOutOfThroughput(t *testing.T) {
	cell := Cell{Backend: "redis", Workload: "counter", Nemesis: "pause", Fence: "none", Store: "lockbench"}
	exp := &Expectations{Rules: []Rule{{Expect: ExpectInvalid, Reason: "unfenced"}}}
	stop := &rundir.Stop{At: 4_100_000_000, Write: 4_000_000_000, Process: "c1"}
	n := 0
	// Seeds in order: a full valid run, a stopped invalid one, a stopped
	// valid one, which the runner discards.
	run := func(_ context.Context, cfg config.Config, _ runner.Options) (*rundir.Results, error) {
		n++
		rep := &rundir.Results{Verdict: checkers.Valid, Dir: fmt.Sprintf("/r/%d", n), Checkers: []checkers.Result{
			{Checker: "progress", Valid: checkers.Valid, Counts: map[string]int64{"sections": 40}},
		}}
		if n > 1 {
			rep.Stopped = stop
			rep.Checkers[0].Counts["sections"] = 4
		}
		if n == 2 {
			rep.Verdict = checkers.Invalid
			rep.Checkers = append(rep.Checkers, checkers.Result{Checker: "fence", Valid: checkers.Invalid,
				Anomalies: []checkers.Anomaly{{Kind: "stale-write-accepted", Time: 4_000_000_000}}})
		}
		return rep, runner.Discard(rep)
	}
	base := config.Config{TimeLimit: config.Duration(10 * time.Second)}
	results := Run(context.Background(), Plan([]Cell{cell}), 3, 1, base, runner.Options{}, exp, run, new(strings.Builder))
	rs := results[0].Runs
	if rs[0].Stopped || rs[0].CyclesPerSec != 4 {
		t.Errorf("full run: %+v, want 4 cycles/s and not stopped", rs[0])
	}
	if !rs[1].Stopped || rs[1].Verdict != checkers.Invalid || rs[1].Error != "" || rs[1].CyclesPerSec != 0 {
		t.Errorf("stopped invalid run: %+v, want it kept, invalid, marked stopped with no cycles/s", rs[1])
	}
	if !rs[2].Stopped || rs[2].Verdict != checkers.Unknown || !strings.Contains(rs[2].Error, "discarded") || rs[2].CyclesPerSec != 0 {
		t.Errorf("stopped valid run: %+v, want it discarded: an error, unknown, no cycles/s", rs[2])
	}
	if results[0].Outcome != Met {
		t.Errorf("outcome %s, want met by the stopped invalid run", results[0].Outcome)
	}
	dir := t.TempDir()
	if err := Write(dir, Summary{Runs: 3, Cells: results, Exit: Exit(results)}); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(dir, rundir.MatrixMarkdown))
	if !strings.Contains(string(md), "invalid (stopped)") || !strings.Contains(string(md), "| 4.0 |") {
		t.Errorf("matrix.md should mark the stopped runs and average the full run's 4 cycles/s alone:\n%s", md)
	}
}
