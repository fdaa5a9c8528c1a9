package matrix

import (
	"context"
	"encoding/xml"
	"errors"
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

func TestDefaultExpectations(t *testing.T) {
	exp, err := LoadExpectations("")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		cell Cell
		want string
	}{
		{Cell{Backend: "redis", Workload: "counter", Nemesis: "none", Fence: "none", Store: "lockbench"}, ExpectValid},
		{Cell{Backend: "redis", Workload: "counter", Nemesis: "pause", Fence: "none", Store: "lockbench"}, ExpectInvalid},
		{Cell{Backend: "etcd", Workload: "set", Nemesis: "pause", Fence: "all", Store: "lockbench"}, ExpectValid},
		{Cell{Backend: "etcd", Workload: "counter", Nemesis: "pause", Fence: "none", Store: "etcd"}, ExpectValid},
		{Cell{Backend: "redis", Workload: "counter", Nemesis: "pause", Fence: "writes", Store: "lockbench"}, ExpectEither},
		{Cell{Backend: "cas", Workload: "counter", Nemesis: "pause", Fence: "none", Store: "lockbench"}, ExpectValid},
		{Cell{Backend: "nolock", Workload: "set", Nemesis: "none", Fence: "none", Store: "lockbench"}, ExpectInvalid},
	}
	for _, c := range cases {
		if got, why := exp.For(c.cell); got != c.want || why == "" {
			t.Errorf("%s: expect %s (%q), want %s", c.cell.Name(), got, why, c.want)
		}
	}
}

func TestLoadExpectationsRejects(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"no rules":     "rules: []\n",
		"bad expect":   "rules:\n  - expect: maybe\n    reason: x\n",
		"no reason":    "rules:\n  - expect: valid\n",
		"not yaml":     "rules: [\n",
		"unknown file": "",
	} {
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
		if name != "unknown file" {
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := LoadExpectations(p); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestJudge(t *testing.T) {
	v, i, u := checkers.Valid, checkers.Invalid, checkers.Unknown
	cases := []struct {
		expect   string
		verdicts []checkers.Verdict
		want     string
	}{
		{ExpectInvalid, []checkers.Verdict{v, i, v}, Met},
		{ExpectInvalid, []checkers.Verdict{v, v}, Contradicted},
		{ExpectInvalid, []checkers.Verdict{v, u}, Undecided},
		{ExpectValid, []checkers.Verdict{v, v}, Met},
		{ExpectValid, []checkers.Verdict{v, i}, Contradicted},
		{ExpectValid, []checkers.Verdict{v, u}, Undecided},
		{ExpectEither, []checkers.Verdict{i, v}, Met},
		{ExpectEither, []checkers.Verdict{u}, Undecided},
	}
	for _, c := range cases {
		cr := CellResult{Expect: c.expect}
		for _, verdict := range c.verdicts {
			cr.Runs = append(cr.Runs, RunResult{Verdict: verdict})
		}
		cr.judge()
		if cr.Outcome != c.want {
			t.Errorf("expect %s, runs %v: %s, want %s", c.expect, c.verdicts, cr.Outcome, c.want)
		}
	}
	// Valid runs whose faults reached no holder meet nothing.
	weak := RunResult{Verdict: v, Evidence: checkers.WeakEvidence}
	for _, c := range []struct {
		expect string
		runs   []RunResult
		want   string
	}{
		{ExpectValid, []RunResult{weak, weak}, Unexercised},
		{ExpectInvalid, []RunResult{weak}, Unexercised},
		{ExpectValid, []RunResult{weak, {Verdict: v}}, Met},
		{ExpectInvalid, []RunResult{weak, {Verdict: i}}, Met},
	} {
		cr := CellResult{Expect: c.expect, Runs: c.runs}
		cr.judge()
		if cr.Outcome != c.want {
			t.Errorf("expect %s, runs %+v: %s, want %s", c.expect, c.runs, cr.Outcome, c.want)
		}
	}
	if Exit([]CellResult{{Outcome: Met}, {Outcome: Unexercised}}) != 2 {
		t.Error("exit code: an unexercised cell is not met")
	}
	if Exit([]CellResult{{Outcome: Met}, {Outcome: Undecided}}) != 2 || Exit([]CellResult{{Outcome: Undecided}, {Outcome: Contradicted}}) != 1 {
		t.Error("exit codes: contradicted must win over unknown")
	}
}

func TestGridLeavesOutRefusedCombinations(t *testing.T) {
	base := config.Config{TTL: config.Duration(2 * time.Second), TimeLimit: config.Duration(10 * time.Second), Concurrency: config.DefaultConcurrency,
		NemesisInterval: config.Duration(time.Second), FaultDuration: config.Duration(time.Second),
		OpTimeout: config.Duration(time.Second), CheckTimeout: config.Duration(time.Second), Nodes: 5}
	cells, skipped := Grid(Axes{Backends: []string{"redis", "redlock", "cas"}, Workloads: []string{"counter"},
		Nemeses: []string{"pause", "partition"}, Fences: []string{"none", "all"}, Stores: []string{"lockbench"}}, base, nil)
	// Fences: redlock and cas have no tokens (4 cells); partition: cas has
	// no lock-service nodes (its fence-none cell, the other already gone).
	if len(cells) != 7 || len(skipped) != 5 {
		t.Fatalf("cells %v, skipped %v", cells, skipped)
	}
	reasons := map[string]string{}
	for _, s := range skipped {
		reasons[s.Cell.Name()] = s.Reason
	}
	if r := reasons["redlock/counter/pause/fence-all"]; !strings.Contains(r, "no fencing tokens") || strings.HasPrefix(r, "bad arguments") {
		t.Errorf("reason %q", r)
	}
	if r := reasons["cas/counter/partition/fence-none"]; !strings.Contains(r, "no lock-service nodes") {
		t.Errorf("reason %q", r)
	}
}

// A run function standing in for runner.Run: the matrix's own logic, not
// the cluster, is under test here (the e2e tests run the real thing).
func fakeRun(verdicts map[string]checkers.Verdict) Runner {
	return func(_ context.Context, cfg config.Config, _ runner.Options) (*rundir.Results, error) {
		c := Cell{Backend: cfg.Backend, Workload: cfg.Workload, Nemesis: cfg.Nemesis[0], Fence: string(cfg.Fence), Store: cfg.Store}
		v, ok := verdicts[c.Name()]
		if !ok {
			return nil, errors.New("no such cell")
		}
		rep := &rundir.Results{Verdict: v, Dir: "/r/" + c.Name(), Checkers: []checkers.Result{
			{Checker: "progress", Valid: checkers.Valid, Counts: map[string]int64{"sections": 40}},
		}}
		if v == checkers.Invalid {
			rep.Checkers = append(rep.Checkers, checkers.Result{Checker: "fence", Valid: v,
				Anomalies: []checkers.Anomaly{{Kind: "stale-write-accepted", Time: 7_500_000_000}}})
		}
		return rep, nil
	}
}

func TestRunWritesMarkdownAndJUnit(t *testing.T) {
	exp := &Expectations{Rules: []Rule{
		{Expect: ExpectValid, Reason: "safe"},
		{Nemesis: "pause", Expect: ExpectInvalid, Reason: "unfenced"},
	}}
	cells := []Cell{{Backend: "redis", Workload: "counter", Nemesis: "none", Fence: "none", Store: "lockbench"}, {Backend: "redis", Workload: "counter", Nemesis: "pause", Fence: "none", Store: "lockbench"}}
	run := fakeRun(map[string]checkers.Verdict{
		cells[0].Name(): checkers.Invalid, // contradicts "safe"
		cells[1].Name(): checkers.Invalid,
	})
	base := config.Config{TimeLimit: config.Duration(10 * time.Second)}
	results := Run(context.Background(), Plan(cells), 2, 1, base, runner.Options{}, exp, run, new(strings.Builder))
	if results[0].Outcome != Contradicted || results[1].Outcome != Met || Exit(results) != 1 {
		t.Fatalf("outcomes %s %s", results[0].Outcome, results[1].Outcome)
	}
	if results[1].DetectionRate != 1 || results[1].Runs[0].CyclesPerSec != 4 || *results[1].Runs[0].FirstAnomaly != 7.5 {
		t.Errorf("cell figures: %+v", results[1])
	}
	dir := t.TempDir()
	sum := Summary{Runs: 2, Cells: results, Exit: Exit(results)}
	if err := Write(dir, sum); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "matrix.md"))
	for _, want := range []string{"1 of 2 cells met", "redis/counter/none/fence-none", "❌ contradicted", "100%", "7.5 s", "report.html"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("matrix.md lacks %q:\n%s", want, md)
		}
	}
	junit := filepath.Join(dir, "junit.xml")
	if err := WriteJUnit(junit, sum); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(junit)
	var parsed junitSuites
	if err := xml.Unmarshal(data, &parsed); err != nil {
		t.Fatal(err)
	}
	s := parsed.Suites[0]
	if s.Tests != 2 || s.Failures != 1 || s.Cases[0].Failure == nil || s.Cases[1].Failure != nil {
		t.Errorf("JUnit: %+v", s)
	}
}

// A cell that combines faults runs them all in one run, is left out when
// any of them cannot act, and expects what its faults' cells expect
// together, unless a rule names the combination.
func TestCombinedFaults(t *testing.T) {
	base := config.Config{TTL: config.Duration(2 * time.Second), TimeLimit: config.Duration(10 * time.Second), Concurrency: 2,
		NemesisInterval: config.Duration(time.Second), FaultDuration: config.Duration(time.Second),
		OpTimeout: config.Duration(time.Second), CheckTimeout: config.Duration(time.Second), Nodes: 5}
	cells, skipped := Grid(Axes{Backends: []string{"redis"}, Workloads: []string{"counter"},
		Nemeses: []string{"pause+partition", "pause+failover"}, Fences: []string{"none"}, Stores: []string{"lockbench"}}, base, nil)
	if len(cells) != 1 || cells[0].Nemesis != "pause+partition" || len(skipped) != 1 || !strings.Contains(skipped[0].Reason, "Sentinel") {
		t.Fatalf("cells %v, skipped %v: want pause+partition alone, failover refused on redis", cells, skipped)
	}
	if cfg := cells[0].config(base); runner.Validate(&cfg) != nil || strings.Join(cfg.Nemesis, ",") != "pause,partition" {
		t.Errorf("the cell runs %v, want pause,partition", cfg.Nemesis)
	}
	exp := &Expectations{Rules: []Rule{
		{Expect: ExpectValid, Reason: "default"},
		{Nemesis: "pause", Fence: "none", Expect: ExpectInvalid, Reason: "stale write"},
		{Nemesis: "kill", Expect: ExpectEither, Reason: "chance"},
		{Backend: "cas", Expect: ExpectValid, Reason: "no lock"},
		{Nemesis: "pause+kill", Fence: "all", Expect: ExpectInvalid, Reason: "named"},
	}}
	for _, c := range []struct {
		nemesis, fence, backend, want string
	}{
		{"pause+kill", "none", "redis", ExpectInvalid},    // one fault's anomaly is enough
		{"pause+partition", "all", "redis", ExpectValid},  // every fault's cell is valid
		{"kill+partition", "none", "redis", ExpectEither}, // one is chance
		{"pause+kill", "all", "redis", ExpectInvalid},     // the rule naming the combination
		{"pause+kill", "none", "cas", ExpectValid},        // a rule without a fault applies to each
	} {
		got, why := exp.For(Cell{Backend: c.backend, Workload: "counter", Nemesis: c.nemesis, Fence: c.fence, Store: "lockbench"})
		if got != c.want || why == "" {
			t.Errorf("%s %s fence %s: expect %s (%q), want %s", c.backend, c.nemesis, c.fence, got, why, c.want)
		}
	}
}

// A run whose teardown failed after its history was written has no
// verdict; the matrix says why, in its log and in matrix.md, instead of a
// bare "unknown".
func TestRunErrorIsTold(t *testing.T) {
	exp := &Expectations{Rules: []Rule{{Expect: ExpectValid, Reason: "safe"}}}
	cell := Cell{Backend: "etcd", Workload: "counter", Nemesis: "pause", Fence: "all", Store: "lockbench"}
	teardown := errors.New("remove network lockbench-86f30325: has active endpoints")
	run := func(context.Context, config.Config, runner.Options) (*rundir.Results, error) { return nil, teardown }
	var log strings.Builder
	results := Run(context.Background(), Plan([]Cell{cell}), 1, 1, config.Config{TimeLimit: config.Duration(time.Second)}, runner.Options{}, exp, run, &log)
	if r := results[0].Runs[0]; r.Verdict != checkers.Unknown || r.Error != teardown.Error() {
		t.Fatalf("run %+v", r)
	}
	if want := "etcd/counter/pause/fence-all: the run ended without a verdict: " + teardown.Error(); !strings.Contains(log.String(), want) {
		t.Errorf("log lacks %q:\n%s", want, log.String())
	}
	dir := t.TempDir()
	if err := Write(dir, Summary{Runs: 1, Cells: results}); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "matrix.md"))
	if !strings.Contains(string(md), "has no verdict: "+teardown.Error()) {
		t.Errorf("matrix.md does not say why the run has no verdict:\n%s", md)
	}
}
