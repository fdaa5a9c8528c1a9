package catalog

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/checkers"
	"github.com/lockbench/lockbench/checkers/simulate"
	"github.com/lockbench/lockbench/rundir"
)

// A run written as a measured line and imported from it is the run
// imported from its directory: the same rows, a comparison of the same
// numbers; the line names no folder of this machine.
func TestMeasuredRoundTrip(t *testing.T) { eachBackend(t, testMeasuredRoundTrip) }

func testMeasuredRoundTrip(t *testing.T, b backend) {
	src := filepath.Join(t.TempDir(), "run")
	judgedRun(t, src, simulate.Spec{Events: 400, Clients: 2})
	e, err := Judged(src)
	if err != nil {
		t.Fatal(err)
	}
	e.Test.Cell = &rundir.Cell{Name: "redis/counter/none/fence-none", Flags: "f1"}
	dir := t.TempDir()
	path := MeasuredPath(dir, e.Test.Cell.Name)
	if err := AppendMeasured(path, e.Measured()); err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "redis", "counter", "none", "fence-none.jsonl"); path != want {
		t.Errorf("file %s, want %s", path, want)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), src) {
		t.Errorf("the line names the run's folder %s", src)
	}
	fromDir, fromLine := open2(t, b)
	if err := fromDir.Record(e); err != nil {
		t.Fatal(err)
	}
	if n, _, err := fromLine.Import(dir); err != nil || n != 1 {
		t.Fatalf("imported %d (%v), want 1", n, err)
	}
	q := Query{By: []string{"backend", "nemesis"}}
	g1, err := fromDir.Compare(q)
	if err != nil {
		t.Fatal(err)
	}
	g2, err := fromLine.Compare(q)
	if err != nil {
		t.Fatal(err)
	}
	if len(g1) != 1 || len(g2) != 1 {
		t.Fatalf("%d and %d groups", len(g1), len(g2))
	}
	// The runs' places differ (a folder here, test name/start there).
	g1[0].RunsAt, g2[0].RunsAt = nil, nil
	j1, _ := json.Marshal(g1)
	j2, _ := json.Marshal(g2)
	if string(j1) != string(j2) {
		t.Errorf("from the directory %s\nfrom the line %s", j1, j2)
	}
	all := func(string) bool { return true }
	runs, stale, err := fromLine.CellRuns("redis/counter/none/fence-none", "f1", all)
	if err != nil || len(runs) != 1 || stale != 0 || runs[0].Seed != e.Test.Config.Seed || runs[0].Verdict != e.Results.Verdict {
		t.Errorf("cell runs %+v, %d stale (%v)", runs, stale, err)
	}
	if runs, _, _ := fromLine.CellRuns("redis/counter/none/fence-none", "other flags", all); len(runs) != 0 {
		t.Errorf("runs of other flags pooled: %+v", runs)
	}
	none := func(string) bool { return false }
	if runs, stale, _ := fromLine.CellRuns("redis/counter/none/fence-none", "f1", none); len(runs) != 0 || stale != 1 {
		t.Errorf("with no compatible revision: %+v, %d stale; want none, 1 stale", runs, stale)
	}
}

func open2(t *testing.T, b backend) (*Catalog, *Catalog) {
	var cs [2]*Catalog
	for i := range cs {
		c, err := Open(b.fresh(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		cs[i] = c
	}
	return cs[0], cs[1]
}

// An interrupted run is kept as unknown, whatever its part said, and
// gives no seed to the cell: the seed runs again.
func TestInterruptedRunIsNoVerdict(t *testing.T) {
	src := filepath.Join(t.TempDir(), "run")
	judgedRun(t, src, simulate.Spec{Events: 400, Clients: 2})
	e, err := Judged(src)
	if err != nil {
		t.Fatal(err)
	}
	if e.Results.Verdict != checkers.Valid {
		t.Fatalf("the generated run is %s", e.Results.Verdict)
	}
	e.Test.Interrupted = true
	e.Test.Cell = &rundir.Cell{Name: "c", Flags: "f"}
	c, err := Open(filepath.Join(t.TempDir(), File))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Record(e); err != nil {
		t.Fatal(err)
	}
	g, err := c.Compare(Query{})
	if err != nil || len(g) != 1 || g[0].Unknown != 1 || g[0].Invalid != 0 {
		t.Errorf("groups %+v (%v): want the run unknown", g, err)
	}
	if runs, _, _ := c.CellRuns("c", "f", func(string) bool { return true }); len(runs) != 0 {
		t.Errorf("the interrupted run counts for its cell: %+v", runs)
	}
}

// A damaged measured line is refused with its place, never skipped.
func TestMeasuredRefusesDamage(t *testing.T) {
	dir := t.TempDir()
	good := Measured{RunID: "a", Start: time.Unix(1, 0), Revision: "r", Checked: time.Unix(2, 0), Verdict: checkers.Valid}
	if err := AppendMeasured(filepath.Join(dir, "x.jsonl"), good); err != nil {
		t.Fatal(err)
	}
	for name, line := range map[string]string{
		"cut":     `{"run_id":"a","start":"1970`,
		"unknown": `{"run_id":"a","start":"1970-01-01T00:00:01Z","revision":"r","checked":"1970-01-01T00:00:02Z","verdict":"valid","surprise":1}`,
		"verdict": `{"run_id":"a","start":"1970-01-01T00:00:01Z","revision":"r","checked":"1970-01-01T00:00:02Z","verdict":"fine"}`,
	} {
		p := filepath.Join(dir, name+".jsonl")
		if err := os.WriteFile(p, []byte(line+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadMeasured(p); !errors.Is(err, ErrBad) || !strings.Contains(err.Error(), p+":1") {
			t.Errorf("%s: %v, want ErrBad at %s:1", name, err, p)
		}
	}
	if ms, err := ReadMeasured(filepath.Join(dir, "x.jsonl")); err != nil || len(ms) != 1 {
		t.Errorf("the good file: %d (%v)", len(ms), err)
	}
}
