package e2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/catalog"
	"github.com/lockbench/lockbench/checkers"
	"github.com/lockbench/lockbench/rundir"
)

// Two short runs on two backends, one faulted and one not, each record
// themselves in their results root's catalog; imported into a fresh one,
// compare --format json has both groups, with runs and invalid as each
// run's results.json says. Then: a run found invalid where the baseline
// had ten valid runs of its group is a new-invalid change, which fails
// compare by default: the faulted redis run without a fence (which the
// matrix expects invalid), against a baseline catalog of ten copies of it
// judged valid.
func TestCompareBaselineNewInvalid(t *testing.T) {
	dir := t.TempDir()
	now, base := filepath.Join(dir, "now.db"), filepath.Join(dir, "base.db")
	// Pauses aimed at the section, a second apart, leave each thawed
	// holder a stale write to send within a short run.
	r := mustCatch(t, nil, 7, "run", "--backend", "redis", "--nemesis", "pause", "--fence", "none",
		"--failpoint", "section", "--nemesis-interval", "1s", "--time-limit", "8s")
	if r.exit != 1 {
		t.Fatalf("exit %d, want 1 (invalid)", r.exit)
	}
	quiet := lockbench(t, nil, "run", "--backend", "etcd", "--nemesis", "none", "--time-limit", "4s", "--seed", "3")
	assertNothingLeft(t, quiet.runID)
	if quiet.exit != 0 {
		t.Fatalf("the etcd run without faults: exit %d, want 0 (valid)\n%s", quiet.exit, quiet.stderr)
	}
	for _, d := range []string{r.dir, quiet.dir} {
		// <results root>/<test>/<start>: run recorded it there.
		own := filepath.Join(filepath.Dir(filepath.Dir(d)), catalog.File)
		if gs := compareJSON(t, "--catalog", own); len(gs) != 1 || gs[0].Runs != 1 {
			t.Errorf("the catalog of %s's results root: %+v, want its one run", d, gs)
		}
	}
	if imp := catalogCmd(t, "import", "--catalog", now, r.dir, quiet.dir); imp.exit != 0 {
		t.Fatalf("import: exit %d: %s", imp.exit, imp.stderr)
	}
	gs := compareJSON(t, "--catalog", now)
	if len(gs) != 2 {
		t.Fatalf("%d groups, want 2 (redis and etcd): %+v", len(gs), gs)
	}
	for _, run := range []result{r, quiet} {
		rep := readReport(t, run.dir)
		test := readJSON[rundir.Test](t, run.dir, rundir.TestFile)
		invalid := 0
		if rep.Verdict == checkers.Invalid {
			invalid = 1
		}
		found := false
		for _, g := range gs {
			if g.Key["backend"] == test.Config.Backend {
				found = true
				if g.Runs != 1 || g.Invalid != invalid || g.Key["nemesis"] != strings.Join(test.Config.Nemesis, "+") {
					t.Errorf("group %v: %d runs, %d invalid; results.json says %s", g.Key, g.Runs, g.Invalid, rep.Verdict)
				}
			}
		}
		if !found {
			t.Errorf("no group of %s in %+v", test.Config.Backend, gs)
		}
	}
	e, err := catalog.Judged(r.dir)
	if err != nil {
		t.Fatal(err)
	}
	c, err := catalog.Open(base)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		v := e
		v.Test.RunID = fmt.Sprintf("%s-baseline-%d", e.Test.RunID, i)
		v.Test.Config.Seed = int64(1000 + i)
		v.Results.Verdict = checkers.Valid
		if err := c.Record(v); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	cmp := catalogCmd(t, "compare", "--catalog", now, "--baseline-catalog", base)
	if cmp.exit != 1 {
		t.Fatalf("compare: exit %d, want 1\n%s%s", cmp.exit, cmp.stdout, cmp.stderr)
	}
	i := strings.Index(cmp.stdout, "changes against")
	if i < 0 {
		t.Fatal("compare printed no changes section")
	}
	section := cmp.stdout[i:]
	for _, want := range []string{"backend=redis nemesis=pause fence=none", "new-invalid", "0/10 invalid"} {
		if !strings.Contains(section, want) {
			t.Errorf("the changes do not name %q", want)
		}
	}
}

// compareJSON is what lockbench compare --format json prints, given args.
func compareJSON(t *testing.T, args ...string) []catalog.Group {
	t.Helper()
	r := catalogCmd(t, append([]string{"compare", "--format", "json"}, args...)...)
	if r.exit != 0 {
		t.Fatalf("compare %v: exit %d: %s", args, r.exit, r.stderr)
	}
	var doc struct {
		Groups []catalog.Group `json:"groups"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("compare --format json: %v\n%s", err, r.stdout)
	}
	return doc.Groups
}
