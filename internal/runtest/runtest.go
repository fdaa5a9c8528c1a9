// Package runtest stores generated runs as finished runs' directories, for
// the tests and benchmarks of judging a stored run.
package runtest

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/lockbench/lockbench/checkers/simulate"
	"github.com/lockbench/lockbench/config"
	"github.com/lockbench/lockbench/rundir"
)

// WriteGenerated stores a generated run in dir as a finished run of the
// redis backend with the simulation's lease would have left it: test.json,
// history.jsonl and store.log.
func WriteGenerated(tb testing.TB, dir string, spec simulate.Spec) {
	tb.Helper()
	cfg := config.Config{
		Backend: "redis", Workload: "counter", Nemesis: []string{"none"}, Fence: "none",
		TTL: config.Duration(simulate.LeaseTTL), TimeLimit: config.Duration(30 * time.Second), Concurrency: 5,
		NemesisInterval: config.Duration(5 * time.Second), FaultDuration: config.Duration(4 * time.Second),
		Work: "uniform:0-200ms", OpTimeout: config.Duration(time.Second), CheckTimeout: config.Duration(time.Minute),
	}
	if spec.Set {
		cfg.Workload = "set"
	}
	end := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	test := rundir.Test{Name: "generated-" + spec.String(), RunID: "generated-" + spec.String(), Start: end, Config: cfg, End: &end}
	if err := rundir.WriteJSON(dir, rundir.TestFile, test); err != nil {
		tb.Fatal(err)
	}
	if err := simulate.Generate(spec).WriteFiles(filepath.Join(dir, rundir.HistoryFile), filepath.Join(dir, rundir.StoreFile)); err != nil {
		tb.Fatal(err)
	}
}
