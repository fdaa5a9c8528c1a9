package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/lockbench/lockbench/catalog"
	"github.com/lockbench/lockbench/checkers/simulate"
	"github.com/lockbench/lockbench/internal/runtest"
	"github.com/lockbench/lockbench/rundir"
)

// generatedUnder writes a generated run laid out as run lays one out,
// <root>/<test name>/<start>, and returns its directory.
func generatedUnder(t *testing.T, root string) string {
	t.Helper()
	tmp := filepath.Join(t.TempDir(), "run")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	runtest.WriteGenerated(t, tmp, simulate.Spec{Events: 300, Clients: 2})
	test, _, err := rundir.ReadTest(tmp)
	if err != nil {
		t.Fatal(err)
	}
	dir := rundir.Path(root, test.Name, test.Start)
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// runsIn is how many runs and judgments the catalog at path holds.
func runsIn(t *testing.T, path string) (runs, judged int) {
	t.Helper()
	c, err := catalog.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	groups, err := c.Compare(catalog.Query{})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups {
		runs += g.Runs
		judged += g.Runs - g.Unknown
	}
	return runs, judged
}

// check records the run it judged in its results root's catalog, once
// however often it is checked; a run under no results root is recorded
// only where --catalog says; --catalog none records nowhere; a file that
// is no catalog is refused before the run is judged, and left as it was.
func TestCheckRecordsInTheCatalog(t *testing.T) {
	t.Setenv(catalog.EnvVar, "")
	root := t.TempDir()
	dir := generatedUnder(t, root)
	for range 2 {
		if code := run([]string{"check", dir}); code != exitValid {
			t.Fatalf("check exited %d", code)
		}
	}
	if runs, judged := runsIn(t, filepath.Join(root, catalog.File)); runs != 1 || judged != 1 {
		t.Errorf("the results root's catalog holds %d runs (%d judged) after two checks of one, want 1", runs, judged)
	}

	loose := t.TempDir()
	runtest.WriteGenerated(t, loose, simulate.Spec{Events: 300, Clients: 2})
	if code := run([]string{"check", loose}); code != exitValid {
		t.Fatalf("check exited %d", code)
	}
	for _, p := range []string{filepath.Join(loose, catalog.File), filepath.Join(filepath.Dir(loose), catalog.File)} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("a run under no results root was recorded in %s", p)
		}
	}
	named := filepath.Join(t.TempDir(), "team.db")
	if code := run([]string{"check", "--catalog", named, loose}); code != exitValid {
		t.Fatalf("check --catalog exited %d", code)
	}
	if runs, _ := runsIn(t, named); runs != 1 {
		t.Errorf("--catalog %s holds %d runs, want 1", named, runs)
	}

	other := t.TempDir()
	dir2 := generatedUnder(t, other)
	if code := run([]string{"check", "--catalog", noCatalog, dir2}); code != exitValid {
		t.Fatalf("check --catalog none exited %d", code)
	}
	if _, err := os.Stat(filepath.Join(other, catalog.File)); err == nil {
		t.Error("--catalog none recorded the run")
	}

	bad := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(bad, []byte("not a database\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fresh := generatedUnder(t, t.TempDir())
	if code := run([]string{"check", "--catalog", bad, fresh}); code != exitUsage {
		t.Errorf("check --catalog of a text file exited %d, want %d", code, exitUsage)
	}
	if data, _ := os.ReadFile(bad); string(data) != "not a database\n" {
		t.Errorf("the refused file was changed: %q", data)
	}
	if _, err := os.Stat(filepath.Join(fresh, rundir.ResultsFile)); err == nil {
		t.Error("the run was judged although its catalog was refused")
	}
}
