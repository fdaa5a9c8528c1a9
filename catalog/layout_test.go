package catalog

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockbench/lockbench/checkers/simulate"
	"github.com/lockbench/lockbench/rundir"
)

// rewriteTest edits the test.json of the run in dir as a map.
func rewriteTest(t testing.TB, dir string, edit func(test, cfg map[string]any)) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, rundir.TestFile))
	if err != nil {
		t.Fatal(err)
	}
	var test map[string]any
	if err := json.Unmarshal(data, &test); err != nil {
		t.Fatal(err)
	}
	edit(test, test["config"].(map[string]any))
	if err := rundir.WriteJSON(dir, rundir.TestFile, test); err != nil {
		t.Fatal(err)
	}
}

// TestImportsBothLayouts: a run whose test.json nests its plug-ins'
// options (the variant under backend_options, the pause's target under
// fault_options) is keyed as its twin in today's flat layout: one group
// of two runs. A third run, flat, of another variant is a group apart.
func TestImportsBothLayouts(t *testing.T) {
	root := t.TempDir()
	for i, layout := range []string{"flat", "nested", "other"} {
		dir := filepath.Join(root, layout)
		judgedRun(t, dir, simulate.Spec{Events: 300, Clients: 2})
		rewriteTest(t, dir, func(test, cfg map[string]any) {
			test["run_id"] = "run-" + strconv.Itoa(i)
			cfg["nemesis"] = []string{"pause"}
			switch layout {
			case "flat":
				cfg["variant"], cfg["pause_target"] = "no-fence-check", "leader"
			case "nested":
				delete(cfg, "variant")
				delete(cfg, "pause_target")
				cfg["backend_options"] = map[string]any{"variant": "no-fence-check", "nodes": 5}
				cfg["fault_options"] = map[string]any{"pause": map[string]any{"target": "leader"}}
			case "other":
				cfg["variant"], cfg["pause_target"] = "correct", "leader"
			}
		})
	}
	c, err := Open(filepath.Join(t.TempDir(), File))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if n, _, err := c.Import(root); err != nil || n != 3 {
		t.Fatalf("import: %d runs, %v", n, err)
	}
	gs, err := c.Compare(Query{By: []string{"variant", "pause_target"}})
	if err != nil {
		t.Fatal(err)
	}
	runs := map[string]int{}
	for _, g := range gs {
		runs[g.Key["variant"]+"/"+g.Key["pause_target"]] = g.Runs
	}
	if len(runs) != 2 || runs["no-fence-check/leader"] != 2 || runs["correct/leader"] != 1 {
		t.Errorf("groups %v, want no-fence-check/leader of 2 runs (flat and nested) and correct/leader of 1", runs)
	}
}

// crashEnv, set, makes TestImportKilled the child that imports: the
// catalog's path and the tree to import, separated by a newline.
const crashEnv = "LOCKBENCH_CATALOG_CRASH_CHILD"

// TestImportKilled kills an import with SIGKILL while it writes: the
// catalog passes its integrity check, holds only whole runs, and running
// the import again completes it.
func TestImportKilled(t *testing.T) {
	if spec := os.Getenv(crashEnv); spec != "" {
		path, root, _ := strings.Cut(spec, "\n")
		c, err := Open(path)
		if err != nil {
			os.Exit(3)
		}
		if _, _, err := c.Import(root); err != nil {
			os.Exit(4)
		}
		os.Exit(0)
	}
	const runs = 300
	src := filepath.Join(t.TempDir(), "src")
	judgedRun(t, src, simulate.Spec{Events: 200, Clients: 2})
	root := t.TempDir()
	for i := range runs {
		dir := filepath.Join(root, strconv.Itoa(i))
		if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
			t.Fatal(err)
		}
		rewriteTest(t, dir, func(test, _ map[string]any) { test["run_id"] = "run-" + strconv.Itoa(i) })
	}
	path := filepath.Join(t.TempDir(), File)
	c, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	child := exec.Command(os.Args[0], "-test.run=^TestImportKilled$")
	child.Env = append(os.Environ(), crashEnv+"="+path+"\n"+root)
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	// Killed once some runs, not all, are in.
	var at int
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		if at = recorded(t, path); at >= 10 {
			break
		}
	}
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	child.Wait()
	c, err = Open(path) // refuses a catalog failing its integrity check
	if err != nil {
		t.Fatalf("after the kill: %v", err)
	}
	defer c.Close()
	var ok string
	if err := c.db.QueryRow(`PRAGMA integrity_check`).Scan(&ok); err != nil || ok != "ok" {
		t.Fatalf("integrity check: %q, %v", ok, err)
	}
	partial, judged := count(t, c, "runs"), count(t, c, "judgments")
	if partial >= runs {
		t.Fatalf("the import had finished (%d runs) before the kill: it shows nothing", partial)
	}
	if partial != judged {
		t.Errorf("%d runs but %d judgments after the kill: a run was recorded in part", partial, judged)
	}
	if n, _, err := c.Import(root); err != nil || n != runs {
		t.Fatalf("the import again: %d runs, %v", n, err)
	}
	if r, j := count(t, c, "runs"), count(t, c, "judgments"); r != runs || j != runs {
		t.Errorf("%d runs, %d judgments after the import again, want %d", r, j, runs)
	}
	t.Logf("killed with %d of %d runs in (%d seen before the kill)", partial, runs, at)
}

// recorded is how many runs the catalog at path holds, read as another
// process reads it while a writer works.
func recorded(t *testing.T, path string) int {
	t.Helper()
	c, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return count(t, c, "runs")
}
