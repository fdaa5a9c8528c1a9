package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/lockbench/lockbench/matrix"
)

// matrixOut is what matrix and matrix merge print with --json.
type matrixOut struct {
	matrix.Summary
	Dir   string `json:"dir"`
	JUnit string `json:"junit"`
}

func matrixJSON(t *testing.T, r result) matrixOut {
	t.Helper()
	var m matrixOut
	if err := json.Unmarshal([]byte(r.stdout), &m); err != nil {
		t.Fatalf("--json: %v\n%s", err, r.stdout)
	}
	return m
}

// withoutVerdict is what a matrix's log says of its runs that ended
// without a verdict, so that a failure names its cause in one place.
func withoutVerdict(r result) string {
	var why []string
	for _, line := range strings.Split(r.stderr, "\n") {
		if strings.Contains(line, "ended without a verdict") {
			why = append(why, line)
		}
	}
	if len(why) == 0 {
		return ""
	}
	return ":\n" + strings.Join(why, "\n")
}

// A small grid run whole and in two shards, all side by side, merges into the same cells, seeds, verdicts and expectations;
// merge refuses a shard of another grid, a shard given twice, a missing
// shard and a shard judged by other expectations, each with one line and
// exit 254.
func TestShardsMergeIntoTheWholeMatrix(t *testing.T) {
	// Checked here: the runs below start in goroutines, where a skip
	// would end only the goroutine.
	if testing.Short() {
		t.Skip("end-to-end: starts containers")
	}
	grid := []string{"matrix", "--backends", "redis,cas,nolock", "--nemeses", "none", "--fences", "none",
		"--time-limit", "4s", "--json"}
	// The whole grid and the shards side by side, as CI jobs would run.
	rs := make([]result, 4)
	var wg sync.WaitGroup
	for i, args := range [][]string{{"--seed", "31", "--junit", filepath.Join(t.TempDir(), "junit.xml")},
		{"--seed", "31", "--shard", "1/2"}, {"--seed", "31", "--shard", "2/2"}, {"--seed", "32", "--shard", "2/2"}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rs[i] = lockbench(t, nil, append(grid, args...)...)
		}()
	}
	wg.Wait()
	whole, shards := rs[0], rs[1:]
	if whole.exit != 0 {
		t.Fatalf("whole grid: exit %d%s", whole.exit, withoutVerdict(whole))
	}
	w := matrixJSON(t, whole)
	var dirs []string
	for i, s := range shards {
		if s.exit != 0 {
			t.Fatalf("shard %d: exit %d%s", i, s.exit, withoutVerdict(s))
		}
		m := matrixJSON(t, s)
		if m.Shard == nil || len(m.Cells) == 0 {
			t.Fatalf("shard %d ran %d cells, shard %+v", i, len(m.Cells), m.Shard)
		}
		// The folder above the shard's matrix directory: its results tree,
		// as a CI artifact holds it.
		dirs = append(dirs, filepath.Dir(filepath.Dir(m.Dir)))
	}

	junit := filepath.Join(t.TempDir(), "merged.xml")
	r := lockbench(t, nil, "matrix", "merge", dirs[0], dirs[1], dirs[0], "--junit", junit, "--json")
	if r.exit != 0 {
		t.Fatalf("merge: exit %d", r.exit)
	}
	m := matrixJSON(t, r)
	if len(m.Cells) != len(w.Cells) || len(m.Shards) != 2 || m.Grid != w.Grid || m.Expectations != w.Expectations || m.Exit != w.Exit {
		t.Fatalf("merged %d cells of %d shards (grid %s, exit %d); whole grid %d cells (grid %s, exit %d)",
			len(m.Cells), len(m.Shards), m.Grid, m.Exit, len(w.Cells), w.Grid, w.Exit)
	}
	for i, c := range m.Cells {
		wc := w.Cells[i]
		if c.Cell != wc.Cell || c.Expect != wc.Expect || c.Reason != wc.Reason || c.Outcome != wc.Outcome || len(c.Runs) != len(wc.Runs) {
			t.Errorf("cell %d: merged %s %s/%s, whole %s %s/%s", i, c.Cell.Name(), c.Expect, c.Outcome, wc.Cell.Name(), wc.Expect, wc.Outcome)
			continue
		}
		for j, run := range c.Runs {
			if run.Seed != wc.Runs[j].Seed || run.Verdict != wc.Runs[j].Verdict {
				t.Errorf("%s run %d: merged seed %d %s, whole seed %d %s", c.Cell.Name(), j, run.Seed, run.Verdict, wc.Runs[j].Seed, wc.Runs[j].Verdict)
			}
			// Renamed from where the shard wrote it to where it was found.
			if _, err := os.Stat(filepath.Join(run.Dir, "report.html")); err != nil {
				t.Errorf("%s: the merged matrix names a run it cannot find: %v", c.Cell.Name(), err)
			}
		}
	}
	// The verdicts are the cells' own: nolock breaks, the others hold.
	for _, c := range m.Cells {
		want := "valid"
		if c.Cell.Backend == "nolock" {
			want = "invalid"
		}
		if string(c.Runs[0].Verdict) != want || c.Outcome != matrix.Met {
			t.Errorf("%s: %s, %s", c.Cell.Name(), c.Runs[0].Verdict, c.Outcome)
		}
	}
	j := readJUnit(t, junit)
	if s := j.Suites[0]; s.Tests != len(w.Cells) || s.Failures != 0 {
		t.Errorf("merged JUnit: %d tests, %d failures", s.Tests, s.Failures)
	}
	md, err := os.ReadFile(filepath.Join(m.Dir, "matrix.md"))
	if err != nil || !strings.Contains(string(md), "Merged from 2 shards") {
		t.Errorf("merged matrix.md: %v\n%s", err, md)
	}

	// Another expectations file, as a shard built from another checkout
	// would record it: a copy of shard 2 with only that changed.
	twin, other := filepath.Join(t.TempDir(), "twin"), filepath.Join(t.TempDir(), "other")
	copyTree(t, dirs[1], twin)
	copyTree(t, dirs[1], other)
	spoilMatrixJSON(t, other, func(s *matrix.Summary) { s.Expectations = "0123" })
	for _, c := range []struct {
		dirs []string
		want string
	}{
		{[]string{dirs[0], dirs[2]}, "different grids"},
		{[]string{dirs[0], dirs[1], twin}, "are the same shard"},
		{[]string{dirs[0]}, "missing shard(s) [2]"},
		{[]string{dirs[0], other}, "different expectations"},
	} {
		r := lockbench(t, nil, append([]string{"matrix", "merge"}, c.dirs...)...)
		if r.exit != 254 || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("merge %v: exit %d, stderr %q; want 254 and one line saying %q", c.dirs, r.exit, r.stderr, c.want)
		}
	}
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	if err := os.CopyFS(to, os.DirFS(from)); err != nil {
		t.Fatal(err)
	}
}

// spoilMatrixJSON changes every matrix.json under dir.
func spoilMatrixJSON(t *testing.T, dir string, spoil func(*matrix.Summary)) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, e os.DirEntry, err error) error {
		if err != nil || e.Name() != "matrix.json" {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var s matrix.Summary
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
		spoil(&s)
		if data, err = json.Marshal(s); err != nil {
			return err
		}
		return os.WriteFile(path, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
