package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// capture runs lockbench with stdout and stderr sent to files, and returns
// what each received.
func capture(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	dir := t.TempDir()
	out, err := os.Create(filepath.Join(dir, "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	errf, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	saved, savedErr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = out, errf
	code = run(args)
	os.Stdout, os.Stderr = saved, savedErr
	for _, f := range []*os.File{out, errf} {
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	o, err := os.ReadFile(out.Name())
	if err != nil {
		t.Fatal(err)
	}
	e, err := os.ReadFile(errf.Name())
	if err != nil {
		t.Fatal(err)
	}
	return code, string(o), string(e)
}

// check --json prints one JSON document on stdout holding results.json's
// fields as stored and the run's files; the verdict for people goes to
// stderr.
func TestCheckJSON(t *testing.T) {
	dir := copyRun(t, filepath.Join("..", "..", "checkers", "testdata", "stale-fence-none"))
	code, stdout, stderr := capture(t, "check", "--json", dir)
	if code != exitInvalid {
		t.Fatalf("check --json exited %d, want %d; stderr:\n%s", code, exitInvalid, stderr)
	}
	if !strings.Contains(stderr, "verdict: invalid") {
		t.Errorf("stderr lacks the verdict for people:\n%s", stderr)
	}
	var printed map[string]any
	dec := json.NewDecoder(strings.NewReader(stdout))
	if err := dec.Decode(&printed); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
	}
	if dec.More() {
		t.Errorf("stdout holds more than one JSON document:\n%s", stdout)
	}
	data, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var stored map[string]any
	if err := json.Unmarshal(data, &stored); err != nil {
		t.Fatal(err)
	}
	files, _ := printed["files"].(map[string]any)
	if printed["dir"] != dir || files["results"] != filepath.Join(dir, "results.json") || files["report"] != filepath.Join(dir, "report.html") {
		t.Errorf("paths: dir %v, files %v", printed["dir"], files)
	}
	if printed["run_id"] != "94dd4068" {
		t.Errorf("run_id %v, want test.json's", printed["run_id"])
	}
	delete(printed, "run_id")
	delete(printed, "dir")
	delete(printed, "files")
	if !reflect.DeepEqual(printed, stored) {
		t.Errorf("the summary differs from results.json:\nprinted %v\nstored  %v", printed, stored)
	}
	if printed["verdict"] != "invalid" || len(printed["checkers"].([]any)) == 0 {
		t.Errorf("verdict %v, checkers %v", printed["verdict"], printed["checkers"])
	}
}

// matrix --dry-run --json lists the planned cells as JSON, the plan for
// people on stderr.
func TestMatrixDryRunJSON(t *testing.T) {
	code, stdout, stderr := capture(t, "matrix", "--dry-run", "--json", "--backends", "redis,etcd", "--nemeses", "none,pause", "--fences", "all")
	if code != exitValid {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	var plan dryRunJSON
	if err := json.Unmarshal([]byte(stdout), &plan); err != nil {
		t.Fatalf("stdout is not the plan: %v\n%s", err, stdout)
	}
	if len(plan.Cells) != 4 || plan.Cells[0].Name != "redis/counter/none/fence-all" || plan.Cells[0].Expect == "" || plan.EstimateSeconds <= 0 {
		t.Errorf("plan: %+v", plan)
	}
	if !strings.Contains(stderr, "4 cells") {
		t.Errorf("stderr lacks the plan for people:\n%s", stderr)
	}
}

// --leave-running keeps one cluster: a series is refused before Docker is
// reached, in one line.
func TestLeaveRunningRefusesSeries(t *testing.T) {
	code, stdout, stderr := capture(t, "run", "--leave-running", "--test-count", "2", "--json")
	if code != exitUsage || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "--leave-running") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}
