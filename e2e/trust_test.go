package e2e

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/rundir"
)

// A run that cannot mean anything is refused before any container starts:
// with the Docker engine unreachable, reaching for it would exit 255, and
// the results tree, written before the first container, stays empty.
func TestPreflightRefusesBeforeAnyContainer(t *testing.T) {
	for name, args := range map[string][]string{
		"partition on cas":         {"--backend", "cas", "--nemesis", "partition"},
		"pause-node on nolock":     {"--backend", "nolock", "--nemesis", "pause-node"},
		"kill on nolock":           {"--backend", "nolock", "--nemesis", "kill"},
		"clock on etcd":            {"--backend", "etcd", "--nemesis", "clock"},
		"clock on zookeeper":       {"--backend", "zookeeper", "--nemesis", "clock"},
		"the same fault twice":     {"--nemesis", "pause,kill,pause"},
		"ttl not shorter":          {"--ttl", "5s", "--time-limit", "5s"},
		"fault as long as the run": {"--nemesis", "pause", "--fault-duration", "8s", "--time-limit", "8s"},
	} {
		t.Run(name, func(t *testing.T) {
			results := t.TempDir()
			cmd := exec.Command(binary, append(append([]string{"run"}, args...), "--results", results)...)
			cmd.Env = append(os.Environ(), "DOCKER_HOST=unix:///nonexistent/docker.sock")
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 254 {
				t.Fatalf("%v: %v, want exit 254\n%s%s", args, err, stdout.String(), stderr.String())
			}
			if lines := strings.Split(strings.TrimSpace(stderr.String()), "\n"); len(lines) != 1 || !strings.Contains(lines[0], "bad arguments") {
				t.Errorf("want one line saying why, got %q", stderr.String())
			}
			if entries, _ := os.ReadDir(results); len(entries) > 0 || stdout.Len() > 0 {
				t.Errorf("a run began: %d entries in the results tree, stdout %q", len(entries), stdout.String())
			}
		})
	}
}

// lockbenchIn runs the binary in dir without a results flag, for commands
// that start nothing.
func lockbenchIn(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

// matrix --dry-run needs no expectations file where it runs, lists every
// cell and every left-out cell with its reason, and the README's figures
// for the default grid are the ones it prints.
func TestMatrixDryRunFromAnotherDirectory(t *testing.T) {
	code, out, errOut := lockbenchIn(t, t.TempDir(), "matrix", "--dry-run")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	m := regexp.MustCompile(`^(\d+) cells × 1 run\(s\), (\d+) combinations left out; \d+ at a time, about (\S+)\n`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no grid line:\n%s", out)
	}
	cells, left := strings.Count(out, " expect "), strings.Count(out, " left out: ")
	if fmt.Sprint(cells) != m[1] || fmt.Sprint(left) != m[2] || left == 0 {
		t.Errorf("%d cells and %d left-out cells listed; the grid line says %s and %s", cells, left, m[1], m[2])
	}
	if !strings.Contains(out, "cas/counter/pause/fence-all") || !strings.Contains(out, "issues no fencing tokens") {
		t.Errorf("a left-out cell lacks its reason:\n%s", out)
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("%s cells, about %s", m[1], m[3]); !strings.Contains(string(readme), want) {
		t.Errorf("README does not say the default grid's %q", want)
	}
}

// inTimeOrder reads a run's history.jsonl as written and fails unless its
// line order is time order and its indexes are its line numbers.
func inTimeOrder(t *testing.T, dir string) []history.Event {
	t.Helper()
	events, err := history.DecodeFile(filepath.Join(dir, rundir.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(events) == 0 {
		t.Fatalf("%s: empty history", dir)
	}
	for i, e := range events {
		if e.Index != int64(i) || i > 0 && e.Time < events[i-1].Time {
			t.Fatalf("%s: line %d out of time order: %+v", dir, i+1, e)
		}
	}
	return events
}

// `| head -1` closes lockbench's output after the run's first line: the
// next status line (at 5 s) meets the closed pipe, and the run stops there,
// tears everything down and keeps its history, instead of dying of
// SIGPIPE with the cluster up.
func TestClosedPipeTearsDown(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: starts containers")
	}
	// The node image first, so that the first line is the run's.
	if code, _, errOut := lockbenchIn(t, ".", "images", "build"); code != 0 {
		t.Fatalf("images build: %s", errOut)
	}
	results := t.TempDir()
	sh := exec.Command("bash", "-c", `"$0" run --backend redis --nemesis none --time-limit 10s --seed 3 --results "$1" | head -1; echo "exit ${PIPESTATUS[0]}" >&2`, binary, results)
	out, err := sh.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "interrupted (broken pipe)") || !strings.Contains(string(out), "exit 255") {
		t.Errorf("the closed pipe did not stop the run through its teardown")
	}
	tests, _ := filepath.Glob(filepath.Join(results, "*", "*", rundir.TestFile))
	if len(tests) != 1 {
		t.Fatalf("%d runs in the results tree", len(tests))
	}
	dir := filepath.Dir(tests[0])
	test := readJSON[rundir.Test](t, dir, rundir.TestFile)
	assertNothingLeft(t, test.RunID)
	inTimeOrder(t, dir)
	if _, err := os.Stat(filepath.Join(dir, rundir.ResultsFile)); err != nil {
		t.Errorf("no results: %v", err)
	}
}

var statusLine = regexp.MustCompile(`stale writes (\d+) of (\d+)`)

// Two etcd runs without faults (--test-count 2): each prints its live line
// at 5 s, which must count no stale write among the writes it has judged,
// in time order (by arrival it counted several); the series is summed up;
// each history is on disk in time order. Then one is replayed and hung up
// on (SIGHUP): the replay has the same configuration and seed, and the
// hang-up heals, removes and keeps the history, as Ctrl-C does.
func TestTestCountReplayAndHangUp(t *testing.T) {
	r := lockbench(t, nil, "run", "--backend", "etcd", "--nemesis", "none", "--time-limit", "8s", "--seed", "40", "--test-count", "2")
	if r.exit != 0 {
		t.Fatalf("exit %d, want 0 (both valid)", r.exit)
	}
	if !strings.Contains(r.stdout, "tests: 2 of 2 run: 2 valid, 0 invalid, 0 unknown") {
		t.Errorf("no summary of the series")
	}
	lines := statusLine.FindAllStringSubmatch(r.stdout, -1)
	if len(lines) < 2 {
		t.Fatalf("%d live lines, want one per run", len(lines))
	}
	for _, m := range lines {
		if m[1] != "0" || m[2] == "0" {
			t.Errorf("live line: %s stale writes of %s judged; want 0 of some", m[1], m[2])
		}
	}
	runs := regexp.MustCompile(`results in (\S+)`).FindAllStringSubmatch(r.stdout, -1)
	if len(runs) != 2 {
		t.Fatalf("%d runs", len(runs))
	}
	var ids []string
	for i, m := range runs {
		test := readJSON[rundir.Test](t, m[1], rundir.TestFile)
		ids = append(ids, test.RunID)
		if test.Config.Seed != int64(40+i) || !strings.Contains(test.Versions["lockbench"], "revision ") || len(test.Command) == 0 {
			t.Errorf("run %d: seed %d, lockbench %q, command %q", i+1, test.Config.Seed, test.Versions["lockbench"], test.Command)
		}
		rep := readReport(t, m[1])
		if rep.Schema != rundir.ResultsSchema || rep.Lockbench != test.Versions["lockbench"] {
			t.Errorf("results.json: schema %d, lockbench %q", rep.Schema, rep.Lockbench)
		}
		inTimeOrder(t, m[1])
	}
	for _, id := range ids {
		assertNothingLeft(t, id)
	}

	source := runs[1][1]
	s := start(t, "run", "--replay", source)
	s.waitEvent(t, "an acquired lock", func(e history.Event) bool { return e.F == history.Acquire && e.Type == history.OK })
	if err := s.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if code := s.wait(t); code != 255 {
		t.Errorf("exit %d after SIGHUP, want 255 (interrupted)\n%s", code, s.output.String())
	}
	assertNothingLeft(t, s.runID)
	was := readJSON[rundir.Test](t, source, rundir.TestFile)
	now := readJSON[rundir.Test](t, s.dir, rundir.TestFile)
	if !reflect.DeepEqual(was.Config, now.Config) || now.Config.Seed != 41 {
		t.Errorf("replayed configuration %+v, want %+v", now.Config, was.Config)
	}
	if !slices.Contains(now.Command, "--replay") {
		t.Errorf("command line %q", now.Command)
	}
	inTimeOrder(t, s.dir)
	if _, err := os.Stat(filepath.Join(s.dir, rundir.ResultsFile)); err != nil {
		t.Errorf("no results for the hung-up run: %v", err)
	}
	code, out, errOut := lockbenchIn(t, ".", "export", "--format", "knossos", "-o", "-", s.dir)
	if code != 0 || strings.Count(out, ":f :write") == 0 {
		t.Errorf("export: exit %d, %d writes\n%s", code, strings.Count(out, ":f :write"), errOut)
	}
}
